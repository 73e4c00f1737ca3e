/**
 * The calls a run has dispatched and not yet ended, from its feed's `call_started` and `call`
 * events, read where the last reading stopped: a graph asked for again and again while a run
 * runs reads only the events that are new.
 * @module
 */
import type { FeedLedger, RunEvent } from "../ledger/mod.ts";

/** A `call_started` event. */
export type StartedCall = Extract<RunEvent, { type: "call_started" }>;

/** Most events one reading takes from a feed: a later reading goes on from there. */
export const STARTED_SCAN_EVENTS = 5000;
/** Most runs whose reading position is kept; past it the oldest is forgotten. */
const TRACKED_RUNS = 256;
const PAGE = 500;

interface Tracked {
  /** The last feed position read; -1 before any. */
  after: number;
  /** Calls started and not yet ended, by seq (bounded by the run's concurrency cap). */
  open: Map<number, StartedCall>;
}

/** Follows the running calls of runs through their feeds, incrementally. */
export class StartedCalls {
  readonly #ledger: Pick<FeedLedger, "readEvents">;
  readonly #runs = new Map<string, Tracked>();

  constructor(ledger: Pick<FeedLedger, "readEvents">) {
    this.#ledger = ledger;
  }

  /** The calls of `runId` running as its feed says now; the caller checked who may see it. */
  async running(runId: string): Promise<StartedCall[]> {
    let tracked = this.#runs.get(runId);
    if (tracked) this.#runs.delete(runId);
    else tracked = { after: -1, open: new Map() };
    // Most recently used last: the first key is the one to forget.
    this.#runs.set(runId, tracked);
    if (this.#runs.size > TRACKED_RUNS) this.#runs.delete(this.#runs.keys().next().value!);
    let read = 0;
    while (read < STARTED_SCAN_EVENTS) {
      const items = await this.#ledger.readEvents({ kind: "run", id: runId }, {
        after: tracked.after,
        limit: PAGE,
      });
      for (const { seq, event } of items) {
        tracked.after = Math.max(tracked.after, seq);
        if (!("type" in event)) continue;
        if (event.type === "call_started") tracked.open.set(event.seq, event);
        else if (event.type === "call") tracked.open.delete(event.seq);
      }
      read += items.length;
      if (items.length < PAGE) break;
    }
    return [...tracked.open.values()];
  }

  /** Forgets a run that ended: it has no running calls any more. */
  forget(runId: string): void {
    this.#runs.delete(runId);
  }
}

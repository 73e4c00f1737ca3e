import type { FeedLedger } from "./interface.ts";
import { type ActivityItem, endsStream, type EventStream, type FeedItem } from "./records.ts";

/** Options of {@linkcode followEvents}. */
export interface FollowOptions {
  /** Start after this position: the last `seq` the reader saw. Default: from the first event. */
  after?: number;
  /** Stops following (the iteration ends, without an error). */
  signal?: AbortSignal;
  /** With false, ends after the events recorded so far instead of following. Default true. */
  follow?: boolean;
  /**
   * Called while no event comes, at most every this many ms, before waiting again: a long
   * reader's chance to notice a dead host (recovery) or to end. Default 5000.
   */
  idleMs?: number;
  /** Called each time `idleMs` passes without an event. */
  onIdle?: () => Promise<void> | void;
}

/** How {@linkcode followLog} reads one log: its items after a position, and the wait for more. */
interface LogReader<T extends { seq: number }> {
  read(options: { after: number; limit: number }): Promise<T[]>;
  wait(options: { after: number; signal?: AbortSignal; timeoutMs: number }): Promise<void>;
  /** Whether the log ends with this item. */
  ends(item: T): boolean;
}

/** Items a read takes at once; a full page is followed at once by the next read. */
const PAGE = 500;

/**
 * Replays a log from a position, then follows it live, whichever process writes it, until an
 * item that ends it or `signal`. Every item comes once, in order.
 */
async function* followLog<T extends { seq: number }>(
  log: LogReader<T>,
  options: FollowOptions,
): AsyncGenerator<T> {
  let after = options.after ?? -1;
  const timeoutMs = options.idleMs ?? 5000;
  let waited = false;
  while (!options.signal?.aborted) {
    const items = await log.read({ after, limit: PAGE });
    for (const item of items) {
      if (options.signal?.aborted) return;
      after = item.seq;
      yield item;
      if (log.ends(item)) return;
    }
    if (items.length === PAGE) continue;
    if (options.follow === false) return;
    // A wait that brought nothing ended by its timeout: the reader's idle moment, after which
    // it reads again (what onIdle did may have added an event).
    if (waited && items.length === 0 && options.onIdle) {
      await options.onIdle();
      waited = false;
      continue;
    }
    await log.wait({ after, timeoutMs, ...(options.signal ? { signal: options.signal } : {}) });
    waited = true;
  }
}

/**
 * Replays a stream from a position, then follows it live, whichever process writes it, until
 * its last event (a terminal state) or until `signal` aborts. Every event comes once, in order.
 */
export function followEvents(
  ledger: FeedLedger,
  stream: EventStream,
  options: FollowOptions = {},
): AsyncGenerator<FeedItem> {
  return followLog({
    read: (page) => ledger.readEvents(stream, page),
    wait: (until) => ledger.waitForEvents(stream, until),
    ends: (item) => endsStream(item.event),
  }, options);
}

/**
 * Replays an owner's activity stream from a position, then follows it live, whichever process
 * writes it, until `signal` aborts (the stream has no end). Every item comes once, in order.
 */
export function followActivity(
  ledger: Pick<FeedLedger, "readActivity" | "waitForActivity">,
  owner: string,
  options: FollowOptions = {},
): AsyncGenerator<ActivityItem> {
  return followLog({
    read: (page) => ledger.readActivity(owner, page),
    wait: (until) => ledger.waitForActivity(owner, until),
    ends: () => false,
  }, options);
}

/**
 * The event streams a surface serves, each opened with one call: the caller's general stream
 * (its runs' and tasks' activity and its board cards, merged) and the feed of one run or
 * task. Opening one takes a slot of the owner's stream cap (admission) and checks what the
 * caller may see; the surface only translates its request to options and the items to frames.
 * @module
 */
import type { Board, BoardChange } from "../board/mod.ts";
import type { RunManager } from "../engine/mod.ts";
import type { ActivityItem, Caller, EventStream, FeedItem } from "../ledger/mod.ts";
import { endsStream } from "../ledger/mod.ts";
import { mergeSources } from "../streams/mod.ts";
import type { CallProgressEvent } from "../schemas/mod.ts";
import type { TaskManager } from "../tasks/mod.ts";
import type { Admission } from "./admission.ts";
import { type AdmittedStream, admittedStream } from "./admitted_stream.ts";
import type { EventFeed } from "./event_feed.ts";
import { noSuch } from "./not_found.ts";

/** Where the general stream stands: the last activity and board positions sent (-1 for none). */
export interface StreamPositions {
  /** The position in the owner's activity stream. */
  activity: number;
  /** The position in the board's changes. */
  board: number;
}

/**
 * One item of the general stream, with the positions a reader resumes from after it: `ready`
 * (the stream opened at the current positions), an activity event, or a board card change.
 */
export type GeneralItem =
  | { kind: "ready"; at: StreamPositions }
  | { kind: "activity"; event: ActivityItem; at: StreamPositions }
  | { kind: "card"; change: BoardChange; at: StreamPositions };

/** Options of {@linkcode Streams.general}. */
export interface GeneralOptions {
  /** Continue after these positions. Default: from the start of both sources. */
  after?: StreamPositions;
  /** Without `after`: skip the history, opening with a `ready` item at the current positions. */
  fromNow?: boolean;
}

/** Options of {@linkcode Streams.runFeed} and {@linkcode Streams.taskFeed}. */
export interface FeedOpenOptions {
  /**
   * The last position the reader saw, or `invalid` for a position that cannot be a feed's.
   * Default: from the first event.
   */
  after?: number | "invalid";
}

/**
 * A feed as opened: `ended` when the reader's last event ended it (nothing more will come),
 * else the feed, with `reset` when the reader's position is not the feed's (it restarts from
 * the first event, and the reader should read the status again).
 */
export type FeedOpening =
  | { ended: true }
  | { ended: false; reset: boolean; items: AdmittedStream<FeedItem> };

/** Options of {@linkcode Streams}. */
export interface StreamsOptions {
  /** The event feed of runs and tasks, and the owners' activity. */
  events: EventFeed;
  /** The board, whose changes the general stream carries. */
  board: Board;
  /** The stream caps. */
  admission: Admission;
  /** Runs, whose owner rule decides which feeds a caller may see. */
  runs: RunManager;
  /** Tasks, likewise. */
  tasks: TaskManager;
}

/** Every event stream of the surfaces, behind admission and the owner rule. */
export class Streams {
  readonly #events: EventFeed;
  readonly #board: Board;
  readonly #admission: Admission;
  readonly #runs: RunManager;
  readonly #tasks: TaskManager;

  /** The streams over the services of `options`. */
  constructor(options: StreamsOptions) {
    this.#events = options.events;
    this.#board = options.board;
    this.#admission = options.admission;
    this.#runs = options.runs;
    this.#tasks = options.tasks;
  }

  /**
   * The caller's general stream: every state change of its owner's runs and tasks and every
   * change of the board cards it may see, as they happen; it has no end. Throws
   * `rate_limited` at once when a remote owner has its cap of streams open.
   */
  general(caller: Caller, options: GeneralOptions = {}): AdmittedStream<GeneralItem> {
    const release = this.#admission.openStream(caller);
    const events = this.#events;
    const board = this.#board;
    return admittedStream(release, async function* (signal): AsyncGenerator<GeneralItem> {
      let activity = options.after?.activity ?? -1;
      let changes = options.after?.board ?? -1;
      if (options.fromNow && options.after === undefined) {
        activity = await events.activityHead(caller);
        changes = await board.head();
        yield { kind: "ready", at: { activity, board: changes } };
      }
      const merged = mergeSources(
        events.activity(caller, { ...(activity >= 0 ? { after: activity } : {}), signal }),
        board.changes(caller, { ...(changes >= 0 ? { after: changes } : {}), signal }),
      );
      for await (const item of merged) {
        if (item.from === "a") {
          activity = item.value.seq;
          yield { kind: "activity", event: item.value, at: { activity, board: changes } };
        } else {
          changes = item.value.seq;
          yield { kind: "card", change: item.value, at: { activity, board: changes } };
        }
      }
    });
  }

  /** The feed of run `id`; not found unless the caller may see the run. */
  async runFeed(caller: Caller, id: string, options: FeedOpenOptions = {}): Promise<FeedOpening> {
    if (!await this.#runs.get(id, caller)) throw noSuch("run", id);
    return await this.#open({ kind: "run", id }, caller, options);
  }

  /** The feed of task `id`; not found unless the caller may see the task. */
  async taskFeed(caller: Caller, id: string, options: FeedOpenOptions = {}): Promise<FeedOpening> {
    if (!await this.#tasks.get(id, caller)) throw noSuch("task", id);
    return await this.#open({ kind: "task", id }, caller, options);
  }

  /**
   * Call `seq` of run `runId`: its live output after feed position `after`, followed until the
   * call ends; not found unless the caller may see the run and the run may have the call.
   */
  async callFeed(
    caller: Caller,
    runId: string,
    seq: number,
    options: { after?: number } = {},
  ): Promise<AdmittedStream<CallProgressEvent>> {
    await this.#runs.visibleCall(runId, seq, caller);
    const release = this.#admission.openStream(caller);
    const runs = this.#runs;
    return admittedStream(
      release,
      (signal) => runs.followCall(runId, seq, caller, { ...options, signal }),
    );
  }

  /** A visible feed from the reader's position; the slot is taken last, when it will stream. */
  async #open(
    stream: EventStream,
    caller: Caller,
    options: FeedOpenOptions,
  ): Promise<FeedOpening> {
    const last = options.after;
    let after: number | undefined;
    let reset = false;
    if (last === "invalid") {
      reset = true;
    } else if (last !== undefined) {
      const item = await this.#itemAt(stream, caller, last);
      if (item === undefined || item.seq !== last) reset = true;
      else if (endsStream(item.event)) return { ended: true };
      else after = last;
    }
    const release = this.#admission.openStream(caller);
    const events = this.#events;
    const items = admittedStream(
      release,
      (signal) => events.follow(stream, caller, { after, signal }),
    );
    return { ended: false, reset, items };
  }

  /** The recorded event at `seq`, or the first one after it, or none. */
  async #itemAt(stream: EventStream, caller: Caller, seq: number): Promise<FeedItem | undefined> {
    const items = this.#events.follow(stream, caller, {
      ...(seq > 0 ? { after: seq - 1 } : {}),
      follow: false,
    });
    try {
      for await (const item of items) return item;
      return undefined;
    } finally {
      await items.return(undefined);
    }
  }
}

import type { RunManager } from "../engine/mod.ts";
import type { TaskManager } from "../dispatch/mod.ts";
import type { Caller, EventStream, FeedItem } from "../ledger/mod.ts";

/** Options of {@linkcode EventFeed.follow}. */
export interface FeedFollowOptions {
  /** Start after this position: the last `seq` the reader saw. Default: from the first event. */
  after?: number;
  /** Stops following; the iteration ends without an error. */
  signal?: AbortSignal;
  /** With false, ends after the events recorded so far. Default true. */
  follow?: boolean;
}

/**
 * The event feed of every run and task, for any surface: replay from a position, then follow
 * live until the stream ends, whichever process does the work. The owner rule holds: a
 * stream the caller may not see is not found.
 */
export class EventFeed {
  readonly #runs: RunManager;
  readonly #tasks: TaskManager;

  /** The feed over the run and task services, which check the owner rule. */
  constructor(services: { runs: RunManager; tasks: TaskManager }) {
    this.#runs = services.runs;
    this.#tasks = services.tasks;
  }

  /** The events of one run or task, from `after` on, ending with its terminal state. */
  follow(
    stream: EventStream,
    caller: Caller,
    options: FeedFollowOptions = {},
  ): AsyncGenerator<FeedItem> {
    return stream.kind === "run"
      ? this.#runs.events(stream.id, caller, options)
      : this.#tasks.events(stream.id, caller, options);
  }
}

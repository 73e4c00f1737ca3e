import type { RunManager } from "../engine/mod.ts";
import type { TaskManager } from "../tasks/mod.ts";
import {
  type ActivityItem,
  type Caller,
  type EventStream,
  type FeedItem,
  type FeedLedger,
  followActivity,
} from "../ledger/mod.ts";

/** Options of {@linkcode EventFeed.follow} and {@linkcode EventFeed.activity}. */
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
  readonly #ledger: FeedLedger;

  /** The feed over the run and task services, which check the owner rule, and their ledger. */
  constructor(services: { runs: RunManager; tasks: TaskManager; ledger: FeedLedger }) {
    this.#runs = services.runs;
    this.#tasks = services.tasks;
    this.#ledger = services.ledger;
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

  /**
   * The position of the caller's newest activity item (-1 for none): where a reader that wants
   * only what happens from now on starts.
   */
  activityHead(caller: Caller): Promise<number> {
    return this.#ledger.activityHead(caller.owner);
  }

  /**
   * The caller's activity stream: every state change of its owner's runs and tasks, from
   * `after` on, followed live (from any process) until `signal`; it has no end. An
   * administrator gets its own owner's stream too, not everyone's: streams are per owner.
   * While idle it recovers dead hosts' runs and tasks, so that their `interrupted` shows.
   */
  activity(caller: Caller, options: FeedFollowOptions = {}): AsyncGenerator<ActivityItem> {
    return followActivity(this.#ledger, caller.owner, {
      ...options,
      onIdle: async () => {
        await this.#runs.recover();
        await this.#tasks.recover();
      },
    });
  }
}

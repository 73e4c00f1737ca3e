import type { QueueItem } from "../ledger/mod.ts";
import type { Services } from "../services/mod.ts";
import { fairOrder } from "../engine/mod.ts";

/** Options of {@linkcode QueueWorker}. */
export interface QueueWorkerOptions {
  /** Queued items this worker runs at once. Default: the configuration's `daemon.concurrency`. */
  concurrency?: number;
  /** How often it looks at the queue, in ms. Default 100. */
  pollMs?: number;
}

/** What a worker is doing, for the health snapshot. */
export interface WorkerState {
  /** Items running here now. */
  running: { runs: number; tasks: number };
  /** Items this worker has claimed since it started. */
  claimed: number;
  /** When it last looked at the queue (ISO 8601), or null before the first look. */
  last_poll_at: string | null;
  /** The last error looking at the queue, if the last look failed. */
  error: string | null;
}

/**
 * The daemon's queue worker: claims queued runs and tasks from the ledger, owners in turn and
 * oldest first within a turn, up to its concurrency (a run also only while the run manager's
 * admission has a live slot for it and its owner), and runs them in this process. Claims are atomic in the ledger, so several
 * workers on one ledger never run the same item twice.
 */
export class QueueWorker {
  readonly #services: Services;
  readonly #concurrency: number;
  readonly #pollMs: number;
  readonly #running = new Map<string, { kind: "run" | "task"; done: Promise<unknown> }>();
  #claimed = 0;
  /** The owner of the item claimed last: the next turn is another owner's. */
  #lastOwner: string | undefined;
  #lastPollAt: string | null = null;
  #error: string | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = true;
  #polling: Promise<void> = Promise.resolve();

  /** A worker over `services`; it claims nothing until {@linkcode start}. */
  constructor(services: Services, options: QueueWorkerOptions = {}) {
    this.#services = services;
    this.#concurrency = options.concurrency ?? services.config.daemon.concurrency;
    this.#pollMs = options.pollMs ?? 100;
  }

  /** Starts looking at the queue. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule(0);
  }

  /** What it is doing now. */
  state(): WorkerState {
    let runs = 0;
    for (const item of this.#running.values()) if (item.kind === "run") runs++;
    return {
      running: { runs, tasks: this.#running.size - runs },
      claimed: this.#claimed,
      last_poll_at: this.#lastPollAt,
      error: this.#error,
    };
  }

  /** Stops claiming; what runs here goes on until the services close (which cancels it). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#polling;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#polling = this.#poll().finally(() => this.#schedule(this.#pollMs));
    }, delayMs);
  }

  async #poll(): Promise<void> {
    try {
      const room = this.#concurrency - this.#running.size;
      if (room > 0) {
        // The whole queue (it is bounded), in the fair order: owners take turns, so that one
        // owner's flood does not starve the others (docs/SECURITY.md, "Capacity").
        const items = fairOrder(
          await this.#services.ledger.listQueue({
            limit: this.#services.config.admission.host_queued_runs + 64,
          }),
          this.#lastOwner,
        );
        let taken = 0;
        let here: Set<string> | undefined;
        for (const item of items) {
          if (this.#stopped || taken >= room) break;
          if (item.provider !== undefined) {
            // Work that names a provider goes to a host where it is configured and available.
            here ??= await this.#availableProviders();
            if (!here.has(item.provider)) continue;
          }
          if (await this.#claim(item)) taken++;
        }
      }
      this.#error = null;
    } catch (error) {
      this.#error = error instanceof Error
        ? error.message.slice(0, 300)
        : "the queue is unreadable";
    }
    this.#lastPollAt = new Date().toISOString();
  }

  /** The providers this host can dispatch to now (configured, and their probe passed). */
  async #availableProviders(): Promise<Set<string>> {
    // A slow version probe must not hold the queue up: it is waited for only briefly.
    const status = await this.#services.dispatcher.status({ wait: false });
    return new Set(status.filter((p) => p.available).map((p) => p.name));
  }

  /** Claims and starts one item; false when another worker had it first. */
  async #claim(item: QueueItem): Promise<boolean> {
    const { runs, tasks } = this.#services;
    const caller = { owner: item.owner };
    let done: Promise<unknown>;
    if (item.kind === "run") {
      const started = await runs.work(item.id);
      if (!started) return false;
      done = runs.wait(item.id, caller);
    } else {
      const claimed = await tasks.claim(item.id);
      if (!claimed) return false;
      done = claimed.done;
    }
    this.#claimed++;
    this.#lastOwner = item.owner;
    this.#running.set(item.id, { kind: item.kind, done });
    done.catch(() => {}).finally(() => this.#running.delete(item.id));
    return true;
  }
}

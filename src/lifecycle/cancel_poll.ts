import type { LiveUnit } from "./live_unit.ts";
import { isTerminal } from "../ledger/mod.ts";

/** Options of {@linkcode CancelPoll}. */
export interface CancelPollOptions {
  /** The units this host executes, by id. */
  live: ReadonlyMap<string, LiveUnit>;
  /** Which of `ids` another process asked to cancel: read from the ledger. */
  asked: (ids: string[]) => Promise<string[]>;
  /** The abort reason of a unit found cancelled. */
  reason: () => unknown;
  /** How often to look, in ms. */
  pollMs: number;
}

/**
 * Looks for cancels asked for by other processes while this host has live units: a cancel
 * asked of another host reaches a run or a task only through the ledger. One poll serves every
 * unit of a host; it stops by itself once none is live.
 */
export class CancelPoll {
  readonly #options: CancelPollOptions;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** The look under way: a tick while it lasts is skipped, so that slow looks never pile up. */
  #looking = false;

  /** A poll over `options.live`, stopped until {@linkcode start}. */
  constructor(options: CancelPollOptions) {
    this.#options = options;
  }

  /** Starts looking, unless it already does. */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      if (this.#looking) return;
      this.#looking = true;
      this.#look().finally(() => this.#looking = false);
    }, this.#options.pollMs);
  }

  async #look(): Promise<void> {
    const { live, asked, reason } = this.#options;
    const ids = [...live].filter(([_, unit]) =>
      !isTerminal(unit.status.state) && !unit.controller.signal.aborted
    ).map(([id]) => id);
    if (ids.length === 0) return this.stop();
    for (const id of await asked(ids).catch(() => [])) {
      live.get(id)?.controller.abort(reason());
    }
  }

  /** Stops looking. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

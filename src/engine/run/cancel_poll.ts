import { StopReason as RunStop } from "../../dispatch/mod.ts";
import { type RunLedger, TERMINAL_STATES } from "../../ledger/mod.ts";
import type { RunContext } from "../run_context.ts";

/** Options of {@linkcode CancelPoll}. */
export interface CancelPollOptions {
  /** Where other processes ask for cancels. */
  ledger: RunLedger;
  /** The runs this host executes, by id. */
  runs: ReadonlyMap<string, RunContext>;
  /** How often to look, in ms. */
  pollMs: number;
}

/**
 * Looks for cancels asked for by other processes, while this host has runs: a cancel asked of
 * another host reaches a run only through the ledger.
 */
export class CancelPoll {
  readonly #options: CancelPollOptions;
  #timer: ReturnType<typeof setInterval> | undefined;

  /** A poll over `options.runs`, stopped until {@linkcode start}. */
  constructor(options: CancelPollOptions) {
    this.#options = options;
  }

  /** Starts looking, unless it already does; it stops by itself once no run is live. */
  start(): void {
    if (this.#timer !== undefined) return;
    const { ledger, runs, pollMs } = this.#options;
    this.#timer = setInterval(async () => {
      const live = [...runs.values()].filter((run) =>
        !TERMINAL_STATES.has(run.status.state) && !run.controller.signal.aborted
      );
      if (live.length === 0) return this.stop();
      const asked = await ledger.runCancelsRequested(live.map((run) => run.runId))
        .catch(() => []);
      for (const runId of asked) {
        runs.get(runId)?.controller.abort(new RunStop("cancelled", "the run was cancelled"));
      }
    }, pollMs);
  }

  /** Stops looking. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

import { isTerminal, type RunState } from "../ledger/mod.ts";

/**
 * A run or a task executing in this process: what its host's lifecycle needs of it, whichever
 * of the two it is.
 */
export interface LiveUnit {
  /** Its status as this process holds it. */
  readonly status: { readonly state: RunState };
  /** Aborted to stop it; the reason becomes its end. */
  readonly controller: AbortController;
  /** Settles once it has ended and its end is written (or being written again). */
  readonly done: Promise<unknown>;
}

/**
 * Stops every unit that has not ended with `reason` and waits until all have settled: what a
 * closing host does with the runs or tasks it executes.
 */
export async function stopLive(units: Iterable<LiveUnit>, reason: unknown): Promise<void> {
  const all = [...units];
  for (const unit of all) {
    if (!isTerminal(unit.status.state)) unit.controller.abort(reason);
  }
  await Promise.all(all.map((unit) => unit.done.catch(() => {})));
}

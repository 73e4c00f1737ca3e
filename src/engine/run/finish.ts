import { StopReason as RunStop } from "../../dispatch/mod.ts";
import { SvcError } from "../../errors/mod.ts";
import { writeUntilTaken } from "../../lifecycle/mod.ts";
import {
  type HostLedger,
  type RunError,
  type RunState,
  type RunStatus,
  TERMINAL_STATES,
} from "../../ledger/mod.ts";
import type { JsonValue } from "../../schemas/mod.ts";
import type { GuestOutcome } from "../guest_session.ts";
import { boundError } from "../record_bounds.ts";
import { now, type RunContext } from "../run_context.ts";
import { scriptRunError } from "../script_error.ts";

/** What ending a run needs of its host. */
export interface RunEndContext {
  /** Where an end the ledger refused is written again. */
  ledger: Pick<HostLedger, "interruptRun">;
  /** Ends still being written: the host's close waits for them. */
  endings: Set<Promise<void>>;
  /** Aborted when the host closes: endings stop retrying. */
  closed: AbortSignal;
  /** Drops an ended run the ledger holds, and frees its slot. */
  forget: (runId: string) => void;
}

/** The end of a run that a guest's `outcome` gives. */
export function finishFromOutcome(
  run: RunContext,
  outcome: GuestOutcome,
  context: RunEndContext,
): Promise<RunStatus> {
  switch (outcome.kind) {
    case "returned":
      return finishRun(run, "succeeded", { result: outcome.value }, context);
    case "threw":
      return finishRun(run, "failed", { error: scriptRunError(outcome.error) }, context);
    case "crashed":
      return finishRun(run, "failed", {
        error: {
          code: outcome.outOfMemory ? "out_of_memory" : "guest_crashed",
          message: outcome.message,
        },
      }, context);
    case "aborted": {
      const stop = outcome.reason instanceof RunStop
        ? outcome.reason
        : new RunStop("cancelled", "the run was stopped");
      return finishRun(run, stop.state, {
        error: { code: stop.code, message: stop.message },
      }, context);
    }
  }
}

/**
 * Ends a run in `state` once its calls in flight have settled, and waits for its writes. When
 * the ledger refused one, the run ends `interrupted` (resumable) and its end is written again
 * until the ledger takes it.
 */
export async function finishRun(
  run: RunContext,
  state: RunState,
  end: { result?: JsonValue; error?: RunError },
  context: RunEndContext,
): Promise<RunStatus> {
  const { status } = run;
  if (!TERMINAL_STATES.has(status.state)) {
    // Calls still in flight were aborted with the guest; they settle first, so that their
    // journal entries land before the final status.
    await Promise.allSettled([...run.inflight]);
    status.ended_at = now();
    if (end.result !== undefined) status.result = end.result;
    if (end.error !== undefined) status.error = boundError(end.error);
    run.callsDrained();
    status.budget = run.budget.figures();
    run.flushCounts();
    run.setState(state, status.ended_at);
  }
  await run.writes;
  if (run.writeError !== undefined) {
    markUnwritten(run, run.writeError);
    endUnwritten(run, context);
    return status;
  }
  context.forget(status.run_id);
  return status;
}

/**
 * The ledger refused a write: what it holds ends at its last commit. The run ends
 * `interrupted` (resumable) here at once, and in the ledger as soon as it takes writes.
 */
function markUnwritten(run: RunContext, cause: unknown): void {
  const { status } = run;
  status.state = "interrupted";
  delete status.result;
  // Counted as the ledger has them: calls whose entries were lost are not the run's.
  run.rollBackToCommitted();
  status.error = {
    code: "ledger_unavailable",
    message: `${
      cause instanceof SvcError ? cause.message : "Cannot write the ledger: the write failed"
    }; the journal up to the failure is kept: resume the run with resume_from`,
  };
}

/**
 * Writes the end of a run whose writes failed until the ledger takes it or the host closes
 * ({@linkcode writeUntilTaken}); until then the host answers for the run from memory.
 */
function endUnwritten(run: RunContext, context: RunEndContext): void {
  const { run_id: runId, error } = run.status;
  const { ledger, closed, endings } = context;
  const ending = writeUntilTaken(async () => {
    await ledger.interruptRun(runId, error ?? { code: "ledger_unavailable", message: "" });
    context.forget(runId);
  }, { signal: closed }).catch(() => {});
  endings.add(ending);
  ending.finally(() => endings.delete(ending)).catch(() => {});
}

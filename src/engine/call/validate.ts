import {
  type DispatchOutcome,
  ProviderError,
  stepCost,
  type StepResult,
  UnpricedCallError,
} from "../../dispatch/mod.ts";
import { SvcError } from "../../errors/mod.ts";
import type { RunContext } from "../run_context.ts";
import { schemaValidationFailed, unpricedCall, unrecordable } from "./conditions.ts";
import { stoppedText } from "./stopped.ts";
import type { CallWork, Ending, LiveCall } from "./types.ts";

/**
 * The validate stage: how a dispatched call ends. A value valid against the call's schema is
 * its result, if the run's ledger limits can take it; otherwise the call fails with the cause
 * its status counts (schema, provider, stop, limit), or, for the first attempt an unpriced
 * provider refused under a currency budget, is skipped.
 */
export function validate(ctx: RunContext, call: LiveCall, step: StepResult): Ending {
  const { seq } = call.decision;
  const { signal } = call;
  const last = step.ok ? step.outcome : step.last;
  const failedAt = !step.ok && step.reason === "error" && step.error instanceof ProviderError
    ? step.error.route
    : undefined;
  const work = workOf(step, last, failedAt);
  if (step.ok) {
    const refused = unrecordable(ctx, seq, step.value);
    if (refused === undefined) return { outcome: "live", value: step.value, work };
    return {
      outcome: "failed",
      cause: "ledger_limit",
      reason: refused,
      narrate: !signal.aborted,
      work,
    };
  }
  if (step.reason === "invalid") {
    const { attempts } = step;
    schemaValidationFailed(
      ctx,
      { seq, label: call.call.options.label },
      attempts,
      step.problems.join("; "),
    );
    return {
      outcome: "failed",
      cause: "schema_validation",
      reason: `no result valid against the schema in ${attempts} attempts`,
      narrate: !signal.aborted,
      work,
    };
  }
  const { error } = step;
  if (error instanceof UnpricedCallError && step.attempts === 1) {
    unpricedCall(ctx, seq, error);
    return { outcome: "skipped", refusal: "unpriced", reason: error.message };
  }
  return {
    outcome: "failed",
    cause: signal.aborted ? "stopped" : error instanceof SvcError ? error.code : "provider_failed",
    reason: signal.aborted
      ? stoppedText(signal)
      : error instanceof SvcError
      ? error.message
      : "the provider failed",
    narrate: !signal.aborted,
    work,
  };
}

/** Who answered, what every attempt used, and where the last one went. */
function workOf(
  step: StepResult,
  last: DispatchOutcome | undefined,
  failedAt: { provider: string; reason: string } | undefined,
): CallWork {
  const { spent, attempts } = step;
  return {
    provider: last?.provider ?? failedAt?.provider ?? null,
    model: last?.model ?? null,
    usage: { ...spent.usage },
    cost_usd: stepCost(spent),
    attempts,
    trace: {
      ...(last
        ? { route: last.route.reason, sandbox: last.sandbox }
        : failedAt
        ? { route: failedAt.reason }
        : {}),
      ...(last?.sandbox_clamped ? { sandbox_clamped: last.sandbox_clamped } : {}),
      ...(last?.worktree ? { worktree: last.worktree } : {}),
    },
  };
}

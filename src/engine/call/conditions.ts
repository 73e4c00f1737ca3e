/**
 * The run conditions an `agent()` call raises: each names the first call it refused, so that a
 * reader of the status sees where the run started getting nulls.
 * @module
 */

import type { BudgetGate } from "../budget.ts";
import { clip, type RunContext } from "../run_context.ts";
import type { JsonValue } from "../../schemas/mod.ts";

/** The budget figures as plain JSON, for a condition's data. */
function budgetData(budget: BudgetGate): Record<string, JsonValue> {
  return JSON.parse(JSON.stringify(budget.figures()));
}

/** The run's agent limit refused call `seq`. */
export function agentLimitExceeded(ctx: RunContext, seq: number, max: number): void {
  ctx.raise({
    type: "AgentLimitExceeded",
    message:
      `the run reached its limit of ${max} agent() calls; call #${seq} and later return null`,
    data: { limit: max, first_refused_call: seq },
  }, { once: true });
}

/** The run's budget refused call `seq`. */
export function budgetExceeded(ctx: RunContext, seq: number, reason: string): void {
  ctx.raise({
    type: "BudgetExceeded",
    message: `${reason}; call #${seq} and later calls return null`,
    data: { ...budgetData(ctx.budget), first_refused_call: seq },
  }, { once: true });
}

/** Call `seq` had no price under a currency budget. */
export function unpricedCall(
  ctx: RunContext,
  seq: number,
  unpriced: { message: string; provider: string },
): void {
  ctx.raise({
    type: "UnpricedCall",
    message:
      `${unpriced.message}; under a currency budget every call must be priced, call #${seq} returns null`,
    data: { provider: unpriced.provider, first_refused_call: seq },
  }, { once: true });
}

/** Call `seq` gave no result valid against its schema; raised for every such call. */
export function schemaValidationFailed(
  ctx: RunContext,
  call: { seq: number; label: string | undefined },
  attempts: number,
  problems: string,
): void {
  ctx.raise({
    type: "SchemaValidationFailed",
    message: `call #${call.seq}${
      call.label ? ` (${call.label})` : ""
    } returned no valid result in ${attempts} attempts: ${problems}`,
    data: { call: call.seq, attempts, errors: clip(problems) },
  }, { once: false });
}

/**
 * Takes room for call `seq`'s result in the run's ledger allowance, or raises the condition and
 * says why there is none. A result the run's ledger limits cannot take never reaches the
 * script (write-ahead rule).
 */
export function unrecordable(ctx: RunContext, seq: number, value: JsonValue): string | undefined {
  const reason = ctx.admitResult(value);
  if (reason === undefined) return undefined;
  ctx.raise({
    type: "LedgerLimitExceeded",
    message: `${reason}; call #${seq} and later calls with results return null`,
    data: { ...ctx.recordedFigures(), first_refused_call: seq },
  }, { once: true });
  return reason;
}

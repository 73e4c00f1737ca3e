import type { JsonValue } from "../schemas/mod.ts";
import { type DispatchOutcome, ProviderError } from "./dispatcher.ts";
import { type CompiledSchema, structuredValue } from "../structured/mod.ts";
import type { Usage } from "./types.ts";

/** What every attempt of one step used, summed: a failed attempt counts what its provider said. */
export interface StepSpent {
  usage: Usage;
  /** The known costs summed; a lower bound when `costUnknown`. */
  cost_usd: number;
  /** Some attempt did not say what it cost. */
  costUnknown: boolean;
  /** A provider failed without saying what it used: `usage` is a lower bound. */
  usageUnknown: boolean;
}

/** How a step ended. Every branch carries the attempts made and what they spent together. */
export type StepResult =
  | {
    ok: true;
    /** The answer: the structured value for a schema call, else the provider's output. */
    value: JsonValue;
    /** The last attempt's outcome, with `output` the value and usage and cost summed. */
    outcome: DispatchOutcome;
    attempts: number;
    spent: StepSpent;
  }
  | {
    ok: false;
    /** No attempt gave an answer valid against the schema. */
    reason: "invalid";
    /** The last attempt's validation errors, in words. */
    problems: string[];
    /** The last attempt's outcome, with usage and cost summed. */
    last: DispatchOutcome;
    attempts: number;
    spent: StepSpent;
  }
  | {
    ok: false;
    /** An attempt threw (a provider failure, a refusal, an abort): `error` is what it threw. */
    reason: "error";
    error: unknown;
    /** The last attempt that answered before the one that threw, with usage and cost summed. */
    last?: DispatchOutcome;
    attempts: number;
    spent: StepSpent;
  };

/** Options of {@linkcode structuredStep}. */
export interface StructuredStepOptions<O extends { schema?: unknown }> {
  /** Attempts a schema call may make; a call without a schema is asked once. */
  attempts: number;
  /** The call's options; a schema call's attempts get the compiled schema's `schema`. */
  options: O;
  /** One dispatch of the call. */
  once(options: O): Promise<DispatchOutcome>;
}

/** The spend as one figure: null when some part of the cost is unknown. */
export function stepCost(spent: StepSpent): number | null {
  return spent.costUnknown ? null : spent.cost_usd;
}

/**
 * One call, the way runs (`agent()`) and tasks (direct dispatches) both make it: dispatched
 * through `once`; with a schema, the answer is extracted (`structuredValue`), validated, and
 * asked for again up to `attempts` times. Never throws: a failure is returned with what every
 * attempt used, so that each caller reports it its own way and pays for all of it.
 */
export async function structuredStep<O extends { schema?: unknown }>(
  schema: CompiledSchema | undefined,
  step: StructuredStepOptions<O>,
): Promise<StepResult> {
  const spent: StepSpent = {
    usage: { input_tokens: 0, output_tokens: 0 },
    cost_usd: 0,
    costUnknown: false,
    usageUnknown: false,
  };
  const summed = (outcome: DispatchOutcome): DispatchOutcome => ({
    ...outcome,
    usage: { ...spent.usage },
    cost_usd: stepCost(spent),
  });
  const options = schema ? { ...step.options, schema: schema.schema } : step.options;
  const maxAttempts = schema ? step.attempts : 1;
  let last: DispatchOutcome | undefined;
  let problems: string[] = [];
  let attempts = 0;
  while (attempts < maxAttempts) {
    attempts++;
    try {
      const outcome = await step.once(options);
      spent.usage.input_tokens += outcome.usage.input_tokens;
      spent.usage.output_tokens += outcome.usage.output_tokens;
      if (outcome.cost_usd === null) spent.costUnknown = true;
      else spent.cost_usd += outcome.cost_usd;
      last = outcome;
      const value = schema ? structuredValue(outcome.output) : outcome.output;
      const errors = schema ? schema.check(value) : null;
      if (errors === null) {
        return { ok: true, value, outcome: { ...summed(outcome), output: value }, attempts, spent };
      }
      problems = errors;
    } catch (error) {
      // A provider that ran and failed cost what it said it used, else an unknown amount, not
      // zero. A call refused before any provider ran (unknown, unavailable, unpriced, bad
      // session) spent nothing.
      if (error instanceof ProviderError) {
        if (error.usage) {
          spent.usage.input_tokens += error.usage.input_tokens;
          spent.usage.output_tokens += error.usage.output_tokens;
        } else spent.usageUnknown = true;
        if (error.cost_usd === null) spent.costUnknown = true;
        else spent.cost_usd += error.cost_usd;
      }
      return {
        ok: false,
        reason: "error",
        error,
        ...(last ? { last: summed(last) } : {}),
        attempts,
        spent,
      };
    }
  }
  return { ok: false, reason: "invalid", problems, last: summed(last!), attempts, spent };
}

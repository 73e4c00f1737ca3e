/**
 * A run's own limits (`agent()` calls, simultaneous calls): the host's defaults (the
 * specification's 200 and 8), raised or lowered by the script's `meta.maxAgents` and
 * `meta.concurrency` or, over both, by the run's `max_agents` and `concurrency`, and never
 * above the operator's ceiling (`admission.max_run_agents`, `admission.max_run_concurrency`):
 * a value over it is clamped, with a narrated warning.
 * @module
 */
import type { RunStatus } from "../../ledger/mod.ts";
import type { WorkflowRunRequest } from "../../schemas/mod.ts";
import type { ScriptMeta } from "../script_check.ts";

/** The host's defaults, or the operator's ceilings, of a run's limits. */
export interface LimitFigures {
  /** `agent()` calls of one run. */
  maxAgents: number;
  /** Simultaneous calls of one run. */
  concurrency: number;
}

/** A run's limits and what a person should hear about how they were set. */
export interface RunLimits {
  /** The limits the run gets. */
  limits: RunStatus["limits"];
  /** One line per value that was ignored or clamped. */
  warnings: string[];
}

interface Asked {
  value: number;
  /** Where it came from, for the warning. */
  from: string;
}

/** What the run or its meta asks for one limit; undefined when neither does. */
function asked(
  option: number | undefined,
  optionName: string,
  meta: unknown,
  metaName: string,
  warnings: string[],
): Asked | undefined {
  if (option !== undefined) return { value: option, from: `the run's ${optionName}` };
  if (meta === undefined) return undefined;
  if (typeof meta === "number" && Number.isSafeInteger(meta) && meta > 0) {
    return { value: meta, from: `meta.${metaName}` };
  }
  warnings.push(`meta.${metaName} must be a whole number above 0: ignored`);
  return undefined;
}

/** One limit: what was asked (else the default), clamped to the ceiling. */
function limit(
  wanted: Asked | undefined,
  fallback: number,
  ceiling: number,
  unit: string,
  warnings: string[],
): number {
  if (wanted === undefined) return Math.min(fallback, ceiling);
  if (wanted.value <= ceiling) return wanted.value;
  warnings.push(
    `${wanted.from} ${wanted.value} is over the operator's ceiling of ${ceiling} ${unit}: ` +
      `the run gets ${ceiling}`,
  );
  return ceiling;
}

/**
 * The run's limits: its options first, then its script's meta, then the host's defaults, each
 * clamped to the operator's ceilings.
 */
export function runLimits(
  request: Pick<WorkflowRunRequest, "max_agents" | "concurrency">,
  meta: ScriptMeta,
  defaults: LimitFigures,
  ceiling: LimitFigures,
): RunLimits {
  const warnings: string[] = [];
  const agents = asked(request.max_agents, "max_agents", meta.maxAgents, "maxAgents", warnings);
  const concurrent = asked(
    request.concurrency,
    "concurrency",
    meta.concurrency,
    "concurrency",
    warnings,
  );
  return {
    limits: {
      max_agents: limit(
        agents,
        defaults.maxAgents,
        ceiling.maxAgents,
        "agent() calls",
        warnings,
      ),
      concurrency: limit(
        concurrent,
        defaults.concurrency,
        ceiling.concurrency,
        "simultaneous calls",
        warnings,
      ),
    },
    warnings,
  };
}

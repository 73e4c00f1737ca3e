/**
 * A legacy run as an ordinary run: the request shared by HTTP (`POST /api/workflow/legacy`),
 * the tool protocol (`svc_workflow_legacy`) and the command line, turned into a version-2 run
 * request of the equivalent script. The run then has the journal, resume, budget, limits,
 * events and status of every run.
 * @module
 */
import * as z from "zod";
import { SvcError } from "../errors/mod.ts";
import {
  type Assert,
  describeIssue,
  type IsolationTier,
  type SameType,
  type SandboxLevel,
  WorkflowRunBodySchema,
  WorkflowRunRequestSchema,
} from "../schemas/mod.ts";
import type { LegacyChain } from "./chain_schema.ts";
import { MAX_LEGACY_CHAIN_BYTES, parseLegacyChain, shown } from "./parse_chain.ts";
import { legacyToScript } from "./to_script.ts";

/** The longest `input`, in characters: as JSON it stays within a run's `args` limit. */
export const MAX_LEGACY_INPUT_CHARS = 128 * 1024;

/**
 * The deprecation notice every surface shows with a legacy run: version 1 is retiring, use
 * workflow scripts; where the equivalent script is.
 */
export const LEGACY_DEPRECATION: string =
  "Version-1 workflow chains are deprecated and will be removed: write a workflow script " +
  "instead and run it with svc_workflow, POST /api/workflow/run or `svc workflow run`. This " +
  "chain runs as its equivalent script, which `svc workflow legacy --to-script <file>` prints " +
  "(and the `script` field of the HTTP answer holds, as does GET /api/workflow/{run_id}/script).";

const run = WorkflowRunBodySchema.shape;

const legacyWorkflowBodySchema = z.strictObject({
  chain: z.union([
    z.string().min(1, "must not be empty").max(
      MAX_LEGACY_CHAIN_BYTES,
      `must be at most ${MAX_LEGACY_CHAIN_BYTES} characters`,
    ).meta({ description: "the chain file's text, YAML or JSON" }),
    z.record(z.string(), z.unknown()).meta({
      description: "the parsed chain: {version: 1, name?, description?, steps: [{id, prompt, " +
        "...agent() options}]}",
    }),
  ]),
  input: z.string().max(
    MAX_LEGACY_INPUT_CHARS,
    `must be at most ${MAX_LEGACY_INPUT_CHARS} characters`,
  ).optional().meta({ description: "the text of {{input}} (empty when absent)" }),
  // The run options of a workflow run that make sense for a chain, validated the same way;
  // absent ones get the run's defaults when the run request is checked.
  fake_dispatch: run.fake_dispatch.unwrap().optional(),
  timeout: run.timeout.unwrap().optional(),
  budget_tokens: run.budget_tokens,
  budget_usd: run.budget_usd,
  workdir: run.workdir,
  sandbox_default: run.sandbox_default.unwrap().optional(),
  sandbox_max: run.sandbox_max,
  isolation: run.isolation.unwrap().optional(),
  max_agents: run.max_agents,
  concurrency: run.concurrency,
  resume_from: run.resume_from,
  schema_attempts: run.schema_attempts.unwrap().optional(),
});

/** The body of `POST /api/workflow/legacy` and the arguments of the tool `svc_workflow_legacy`. */
export interface LegacyWorkflowBody {
  /** The chain: its file's text (YAML or JSON), or the parsed value. */
  chain: string | Record<string, unknown>;
  /** The text of `{{input}}` (empty when absent). */
  input?: string;
  /** Answer every `agent()` call with the fake provider. */
  fake_dispatch?: boolean;
  /** Seconds the run may take (default 3600). */
  timeout?: number;
  /** The run's budget in tokens. */
  budget_tokens?: number;
  /** The run's budget in USD. */
  budget_usd?: number;
  /** The run's working directory. */
  workdir?: string;
  /** The sandbox level of a step that names none (default `read-only`). */
  sandbox_default?: SandboxLevel;
  /** The ceiling of every step's sandbox level. */
  sandbox_max?: SandboxLevel;
  /** Where the translated script is evaluated (default `unsafe-local`). */
  isolation?: IsolationTier;
  /** `agent()` calls the run may make (default 200). */
  max_agents?: number;
  /** Calls of the run that may run at once (default 8; a chain makes one at a time). */
  concurrency?: number;
  /** A past run (of the same chain) whose journaled steps are replayed. */
  resume_from?: string;
  /** Attempts of a schema step whose result fails validation (default 3, first try included). */
  schema_attempts?: number;
}
type _LegacyWorkflowBodyMatches = Assert<
  SameType<LegacyWorkflowBody, z.infer<typeof legacyWorkflowBodySchema>>
>;

/**
 * zod schema (a strict object, so its `shape` is there for tool-protocol servers): the body of
 * `POST /api/workflow/legacy` and the arguments of the MCP tool `svc_workflow_legacy`.
 */
export const LegacyWorkflowBodySchema = legacyWorkflowBodySchema;

/** What {@linkcode legacyRunRequest} makes of a legacy request. */
export interface LegacyRunRequest {
  /** A valid `WorkflowRunRequest` body: the script, its file name, `args: {input}` and the run options. */
  request: Record<string, unknown>;
  /** The equivalent version-2 script. */
  script: string;
  /** The deprecation notice, naming the run's script. */
  notice: string;
  /** The validated chain. */
  chain: LegacyChain;
}

/** Options of {@linkcode legacyRunRequest}. */
export interface LegacyRunRequestOptions {
  /** The chain file's name: errors name it, and the run's script is named after it. */
  filename?: string;
}

/** `review.yaml` → `review`; other characters than letters, digits, `.`, `_`, `-` become `-`. */
function stemOf(name: string): string {
  const base = name.split(/[\\/]/).at(-1) ?? "";
  const stem = base.replace(/\.(ya?ml|json)$/i, "").replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[.-]+/, "").slice(0, 64);
  return stem === "" ? "chain" : stem;
}

/**
 * Turns a legacy request into a version-2 run request, the equivalent script and the notice.
 * Throws `SvcError("invalid_request")` naming the step and field of a bad chain, or the field
 * of a bad run option.
 */
export function legacyRunRequest(
  body: LegacyWorkflowBody,
  options: LegacyRunRequestOptions = {},
): LegacyRunRequest {
  const checked = legacyWorkflowBodySchema.safeParse(body);
  if (!checked.success) {
    throw new SvcError(
      "invalid_request",
      `Cannot run the legacy workflow: ${describeIssue(checked.error)}`,
    );
  }
  const { chain: source, input, ...runOptions } = checked.data;
  const chain = parseLegacyChain(
    source,
    options.filename !== undefined ? { filename: options.filename } : {},
  );
  const script = legacyToScript(chain);
  const filename = `${stemOf(options.filename ?? chain.name ?? "chain")}.legacy.js`;
  const request: Record<string, unknown> = {
    script,
    filename,
    args: { input: input ?? "" },
    ...runOptions,
  };
  const valid = WorkflowRunRequestSchema.safeParse(request);
  if (!valid.success) {
    throw new SvcError(
      "invalid_request",
      `Cannot run the legacy workflow: ${shown(describeIssue(valid.error), 300)}`,
    );
  }
  return {
    request,
    script,
    notice: `${LEGACY_DEPRECATION} This run's script is '${filename}'.`,
    chain,
  };
}

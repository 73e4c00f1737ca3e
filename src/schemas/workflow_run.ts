import * as z from "zod";
import { sandboxAbove, SandboxLevelSchema } from "./agent_options.ts";
import { boundedJson, type JsonValue } from "./json.ts";
import type { Assert, SameType } from "./same_type.ts";
import type { SandboxLevel } from "./agent_options.ts";
import type { Schema } from "./schema.ts";

/** Isolation tiers of the specification. */
export const IsolationSchema = z.enum(["unsafe-local", "microvm"]);
/**
 * Where a run's script is evaluated: `unsafe-local` in a permissionless Deno process on the host,
 * `microvm` in a virtual machine (refused until a backend exists).
 */
export type IsolationTier = "unsafe-local" | "microvm";
type _IsolationTierMatches = Assert<SameType<IsolationTier, z.infer<typeof IsolationSchema>>>;

/** The most `agent()` calls a run may be allowed (`max_agents`). */
export const MAX_AGENTS_LIMIT = 1000;
/**
 * The most simultaneous calls a run may be allowed (`concurrency`). Each running harness call
 * is a process tree on the host; per-provider caps still apply on top.
 */
export const CONCURRENCY_LIMIT = 64;
/**
 * The operator's ceiling of `concurrency` when the configuration names none
 * (`admission.max_run_concurrency`): the most a run's request could always ask for, so that a
 * ceiling added later takes nothing away; an operator lowers it in the configuration.
 */
export const RUN_CONCURRENCY_CEILING = CONCURRENCY_LIMIT;
/**
 * The largest `args` a run accepts, in bytes of UTF-8 JSON: the ledger records them with the
 * run (`input.json` in its directory), so that the run can be resumed or started elsewhere.
 */
export const MAX_ARGS_BYTES = 1024 * 1024;

/** Seconds a run may take: at most a week. */
/** A run's timeout when its request names none, in seconds. */
export const DEFAULT_RUN_TIMEOUT_S = 3600;
const timeoutSchema = z.number().int("must be whole seconds").positive().max(7 * 24 * 3600);
const budgetFields = {
  budget_tokens: z.number().int("must be a whole number of tokens").positive().optional(),
  budget_usd: z.number().positive().optional(),
};

/** Longest `title` of a run, in characters. */
export const RUN_TITLE_LIMIT = 200;
/** Longest `description` of a run, in characters. */
export const RUN_DESCRIPTION_LIMIT = 2000;

// deno-lint-ignore no-control-regex -- refusing control characters is the point
const ONE_LINE = /^[^\x00-\x1f\x7f]*$/;
// deno-lint-ignore no-control-regex -- line breaks and tabs only
const TEXT = /^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$/;

const workflowRunFields = {
  /** The script's text. One of `script`, `name` and `scriptPath` says what runs. */
  script: z.string().min(1, "must not be empty").optional().meta({
    description: "the script's text; one of script, name and scriptPath is required",
  }),
  /**
   * A saved workflow of the project, by its `meta.name` (else its file name), as
   * `workflow(name)` finds it: Claude Code's `name`.
   */
  name: z.string().max(128, "must be at most 128 characters").regex(
    /^[A-Za-z0-9][A-Za-z0-9_-]*$/,
    "must be a workflow name: letters, digits, '_' and '-'",
  ).optional().meta({
    description: "a saved workflow of the run's project, by its meta.name (else its file name)",
  }),
  /**
   * A script file of the project: a path from the project's root, or an absolute path inside
   * it, as `workflow({scriptPath})` takes it. Claude Code's `scriptPath`.
   */
  scriptPath: z.string().min(1, "must not be empty").max(
    4096,
    "must be at most 4096 characters",
  ).regex(ONE_LINE, "must be a path without control characters").optional().meta({
    description: "a script file of the run's project: from its root, or absolute inside it; " +
      "wins over name and script",
  }),
  /** What the run is for, in a line: recorded on the run and shown with it. */
  title: z.string().max(RUN_TITLE_LIMIT, `must be at most ${RUN_TITLE_LIMIT} characters`)
    .regex(ONE_LINE, "must be one line without control characters").optional()
    .meta({ description: "what the run is for, in a line: recorded and shown with the run" }),
  /** A longer description of the run: recorded on the run and shown with it. */
  description: z.string().max(
    RUN_DESCRIPTION_LIMIT,
    `must be at most ${RUN_DESCRIPTION_LIMIT} characters`,
  ).regex(TEXT, "must be text without control characters other than line breaks and tabs")
    .optional().meta({ description: "a longer description, recorded and shown with the run" }),
  /** The script's file name, for messages and stack traces: a base name, never a path. */
  filename: z.string().max(255, "must be at most 255 characters").regex(
    // deno-lint-ignore no-control-regex -- refusing control characters is the point
    /^(?!\.\.?$)[^/\\\x00-\x1f\x7f]+$/,
    "must be a file name without '/', '\\' or control characters",
  ).optional(),
  args: boundedJson({ maxBytes: MAX_ARGS_BYTES }).optional(),
  sandbox_default: SandboxLevelSchema.default("read-only"),
  /** The ceiling of every call's sandbox level; `sandbox_default` when absent. */
  sandbox_max: SandboxLevelSchema.optional(),
  isolation: IsolationSchema.default("unsafe-local"),
  workdir: z.string().min(1).max(4096, "must be at most 4096 characters").regex(
    // deno-lint-ignore no-control-regex
    /^[^\x00-\x1f\x7f]*$/,
    "must be a path without control characters",
  ).optional(),
  timeout: timeoutSchema.default(DEFAULT_RUN_TIMEOUT_S),
  fake_dispatch: z.boolean().default(false),
  ...budgetFields,
  resume_from: z.string().regex(/^run_[0-9a-z]+$/, "must be a run id like run_01abc").optional(),
  /** `agent()` calls the run may make, sub-workflows included; later ones return null. Default 200. */
  max_agents: z.number().int("must be a whole number").min(1).max(MAX_AGENTS_LIMIT).optional(),
  /** `agent()` calls of the run that may run at once; more queue. Default 8. */
  concurrency: z.number().int("must be a whole number").min(1).max(CONCURRENCY_LIMIT).optional(),
  /** Attempts of a schema call whose result fails validation (first try included). */
  schema_attempts: z.number().int().min(1).max(10).default(3),
  /** The board card the run works on: recorded on the run, and the card lists the run. */
  card_id: z.string().regex(/^[1-9][0-9]{0,14}$/, "must be a card number (1, 2, ...)").optional(),
};

/** Only a ceiling at or above the default makes sense. */
function ceilingNotBelowDefault(
  r: { sandbox_default: SandboxLevel; sandbox_max?: SandboxLevel },
): boolean {
  return r.sandbox_max === undefined || !sandboxAbove(r.sandbox_default, r.sandbox_max);
}
const CEILING_ISSUE = { path: ["sandbox_max"], message: "must not be below sandbox_default" };

/** A run says what it runs: script text, a saved workflow's name, or a script file. */
function namesAScript(r: { script?: string; name?: string; scriptPath?: string }): boolean {
  return r.script !== undefined || r.name !== undefined || r.scriptPath !== undefined;
}
const SCRIPT_ISSUE = {
  path: ["script"],
  message: "is required unless 'name' or 'scriptPath' names a saved workflow",
};

const workflowRunRequestSchema = z.strictObject({
  ...workflowRunFields,
  /**
   * The folder the script came from (the CLI sets it from the script file's real path): the
   * relative refs of its `workflow()` calls start there. An existing absolute directory.
   */
  script_dir: z.string().max(4096, "must be at most 4096 characters").regex(
    // deno-lint-ignore no-control-regex
    /^\/[^\x00-\x1f\x7f]*$/,
    "must be an absolute path without control characters",
  ).optional(),
}).refine(ceilingNotBelowDefault, CEILING_ISSUE).refine(namesAScript, SCRIPT_ISSUE);

/**
 * The body of `POST /api/workflow/run` (and the tool protocol's `svc_workflow`): the request
 * without `script_dir`, which only the command line sets from a script file's real path.
 */
export const WorkflowRunBodySchema = z.strictObject({
  ...workflowRunFields,
  /** Accepted and ignored: the owner of a run is the one its token is bound to. */
  owner_user_id: z.unknown().optional().meta({
    description: "ignored: the run's owner is the one the bearer token is bound to",
  }),
}).refine(ceilingNotBelowDefault, CEILING_ISSUE).refine(namesAScript, SCRIPT_ISSUE);

/**
 * The arguments of the tool protocol's `svc_workflow`: the body of `POST /api/workflow/run`
 * without `owner_user_id`, which a tool client has no reason to send (the run's owner is the
 * one its token is bound to) and so is not advertised; sent anyway, it is an unknown key.
 */
export const WorkflowRunToolSchema = z.strictObject(workflowRunFields)
  .refine(ceilingNotBelowDefault, CEILING_ISSUE).refine(namesAScript, SCRIPT_ISSUE);

/**
 * A validated workflow run request: the parameters of a run, the same from the command line,
 * HTTP and the tool protocol, with defaults applied.
 */
export interface WorkflowRunRequest {
  /** The script's source; absent when `name` or `scriptPath` names a saved workflow. */
  script?: string;
  /** A saved workflow of the project, by its `meta.name` (else its file name). */
  name?: string;
  /** A script file of the project: from the project's root, or absolute inside it. */
  scriptPath?: string;
  /** What the run is for, in a line (at most 200 characters): recorded and shown. */
  title?: string;
  /** A longer description of the run (at most 2000 characters): recorded and shown. */
  description?: string;
  /** The script's file name, for messages and stack traces: a base name, never a path. */
  filename?: string;
  /** Passed to the script unchanged; absent means the script sees `undefined`. */
  args?: JsonValue;
  /** The sandbox level of a call that names none (default `read-only`). */
  sandbox_default: SandboxLevel;
  /** The ceiling of every call's sandbox level; `sandbox_default` when absent. */
  sandbox_max?: SandboxLevel;
  /** Where the script is evaluated (default `unsafe-local`). */
  isolation: IsolationTier;
  /** The run's working directory: calls' agents work there unless they name their own. */
  workdir?: string;
  /**
   * The folder the script came from (the CLI sets it from the script file's real path): the
   * relative refs of its `workflow()` calls start there. An existing absolute directory.
   */
  script_dir?: string;
  /** Seconds the run may take before it is stopped (default 3600, at most a week). */
  timeout: number;
  /** Answer every `agent()` call with the fake provider instead of a real one. */
  fake_dispatch: boolean;
  /** The run's budget in tokens: calls stop being started at it (docs/SCRIPTS.md, "Budget"). */
  budget_tokens?: number;
  /** The run's budget in USD: calls stop being started at it (docs/SCRIPTS.md, "Budget"). */
  budget_usd?: number;
  /** A past run whose journaled results are replayed instead of calling again. */
  resume_from?: string;
  /** `agent()` calls the run may make, sub-workflows included; later ones return null. Default 200. */
  max_agents?: number;
  /** `agent()` calls of the run that may run at once; more queue. Default 8. */
  concurrency?: number;
  /** Attempts of a schema call whose result fails validation (first try included). */
  schema_attempts: number;
  /**
   * The board card the run works on (a card number its owner may see): recorded on the run as
   * `card_id`, and the card lists the run (docs/BOARD.md, "Board cards and runs").
   */
  card_id?: string;
}
type _WorkflowRunRequestMatches = Assert<
  SameType<WorkflowRunRequest, z.infer<typeof workflowRunRequestSchema>>
>;

/**
 * Validates the parameters of a workflow run, the same from the command line, HTTP and the tool
 * protocol: unknown fields and out-of-range values are refused, defaults filled in.
 */
export const WorkflowRunRequestSchema: Schema<WorkflowRunRequest> = workflowRunRequestSchema;

/**
 * What a resume of a run may change (`POST /api/workflow/{run_id}/resume`, `svc workflow
 * resume`): everything else is the source run's. Each field overrides the source's value.
 */
export interface WorkflowResumeRequest {
  /** Answer every `agent()` call with the fake provider, or not. */
  fake_dispatch?: boolean;
  /** Seconds the new run may take. */
  timeout?: number;
  /** The new run's budget in tokens. */
  budget_tokens?: number;
  /** The new run's budget in USD. */
  budget_usd?: number;
}

const workflowResumeRequestSchema = z.strictObject({
  fake_dispatch: z.boolean().optional(),
  timeout: timeoutSchema.optional(),
  ...budgetFields,
});
type _WorkflowResumeRequestMatches = Assert<
  SameType<WorkflowResumeRequest, z.infer<typeof workflowResumeRequestSchema>>
>;

/** Validates what a resume may change: unknown fields and out-of-range values are refused. */
export const WorkflowResumeRequestSchema: Schema<WorkflowResumeRequest> =
  workflowResumeRequestSchema;
/** The same, as the zod schema the HTTP route's OpenAPI document is generated from. */
export const WorkflowResumeBodySchema = workflowResumeRequestSchema;

import * as z from "zod";
import type { Assert, SameType } from "./same_type.ts";
import { jsonProblem } from "./json.ts";
import { SessionNameSchema } from "./session_name.ts";
import {
  BashCommandClampSchema,
  clampWithoutBashProblem,
  DisallowedToolsSchema,
} from "./narrowing.ts";

/**
 * How much a call's agent may touch: `read-only` reads the workdir, `write` may change it, `full`
 * may also run anything and reach the network. The kernel admits or clamps what a call asks for.
 */
export type SandboxLevel = "read-only" | "write" | "full";
/** Sandbox levels a call may ask for; the kernel admits or clamps them. */
export const SandboxLevelSchema = z.enum(["read-only", "write", "full"]);
type _SandboxLevelMatches = Assert<SameType<SandboxLevel, z.infer<typeof SandboxLevelSchema>>>;

const SANDBOX_RANK: Record<SandboxLevel, number> = { "read-only": 0, write: 1, full: 2 };

/** Whether sandbox level `a` grants more than `b`. */
export function sandboxAbove(a: SandboxLevel, b: SandboxLevel): boolean {
  return SANDBOX_RANK[a] > SANDBOX_RANK[b];
}

/**
 * Reasoning effort of a call, Claude Code's five levels. Each provider maps it onto its own
 * setting (docs/PROVIDERS.md, "Effort"); routing may also rank providers by it.
 */
export const EffortSchema = z.enum(["low", "medium", "high", "xhigh", "max"]);
/** Reasoning effort of a call, Claude Code's five levels from `low` to `max`. */
export type Effort = "low" | "medium" | "high" | "xhigh" | "max";
type _EffortMatches = Assert<SameType<Effort, z.infer<typeof EffortSchema>>>;

const nonEmpty = z.string().min(1, "must not be empty");

/** The shortest `stallMs` other than 0 (none): a second, so that a tool's start is not a stall. */
export const STALL_MS_MIN = 1_000;
/** The longest `stallMs`: a day; a call silent for longer is stopped by its timeout anyway. */
export const STALL_MS_MAX = 86_400_000;

/** `stallMs`: 0 (no stall watch, as Claude Code reads it) or whole milliseconds in bounds. */
const StallMsSchema = z.number().refine(
  (ms) => ms === 0 || (Number.isInteger(ms) && ms >= STALL_MS_MIN && ms <= STALL_MS_MAX),
  `must be a whole number of milliseconds from ${STALL_MS_MIN} to ${STALL_MS_MAX}, or 0 for no stall watch`,
);

/** `sharedHeadLength`: Claude Code's own rule and words for it. */
const SharedHeadLengthSchema = z.number().refine(
  (n) => Number.isSafeInteger(n) && n >= 0,
  "must be a whole number of characters, 0 or more (for example head.length). Pass one, or leave the option out.",
);

/** A per-call cost estimate: a number in the run budget's unit, or explicit tokens and currency. */
export const EstimateSchema = z.union([
  z.number().nonnegative(),
  z.strictObject({
    tokens: z.number().int().nonnegative().optional(),
    usd: z.number().nonnegative().optional(),
  }),
]);

/**
 * The options of `agent(prompt, opts)`: every name of the specification's table. Unknown
 * names are refused, so a typo is a script bug that throws rather than a silently ignored wish.
 */
export const AgentOptionsSchema = z.strictObject({
  label: z.string().optional(),
  phase: z.string().optional(),
  effort: EffortSchema.optional(),
  // Bounded in depth here, where every surface's request is parsed: a schema nested thousands
  // of levels deep must be refused clearly before anything copies it (structuredClone throws).
  schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]).superRefine((value, ctx) => {
    const problem = jsonProblem(value);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  }).optional(),
  schema_id: nonEmpty.optional(),
  isolation: z.enum(["none", "worktree"]).optional(),
  provider: nonEmpty.optional(),
  profile: nonEmpty.optional(),
  model: nonEmpty.optional(),
  sandbox: SandboxLevelSchema.optional(),
  workdir: nonEmpty.optional(),
  session: SessionNameSchema.optional(),
  tag: nonEmpty.optional(),
  estimate: EstimateSchema.optional(),
  /** A subagent definition (`.claude/agents/<name>.md`, or a built-in type), as in Claude Code. */
  agentType: nonEmpty.optional(),
  /** Stop the call as stalled once its agent shows no progress for this many ms (0: never). */
  stallMs: StallMsSchema.optional(),
  /** How many characters at the prompt's start are shared by sibling calls (label, cache). */
  sharedHeadLength: SharedHeadLengthSchema.optional(),
  /** Tools the agent does not get, as in Claude Code (`narrowing.ts`). */
  disallowedTools: DisallowedToolsSchema.optional(),
  /** `Bash(<command or prefix>)` rules the agent's shell is limited to, as in Claude Code. */
  bashCommandClamp: BashCommandClampSchema.optional(),
}).refine((o) => !(o.schema !== undefined && o.schema_id !== undefined), {
  message: "'schema' and 'schema_id' are mutually exclusive: pass one of them",
}).superRefine((o, ctx) => {
  const problem = clampWithoutBashProblem(o.disallowedTools, o.bashCommandClamp);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
});

/**
 * Validated options of one `agent()` call: the specification's table (docs/SCRIPTS.md says what
 * each does). All are optional; the dispatcher's routing and defaults fill in the rest.
 */
export interface AgentOptions {
  /** The call's name in narration, the journal and history. */
  label?: string;
  /** The phase of the workflow the call belongs to (one of `meta.phases`, by convention). */
  phase?: string;
  /** How hard the model should think; each provider maps it onto its own setting. */
  effort?: Effort;
  /** A JSON Schema (or `true`/`false`) the result must satisfy: asks for structured output. */
  schema?: Record<string, unknown> | boolean;
  /** The id of a schema registered earlier, instead of `schema`. */
  schema_id?: string;
  /** `worktree` runs the call in a fresh git worktree of the workdir; `none` (default) does not. */
  isolation?: "none" | "worktree";
  /** The configured provider to use; absent or `auto`, routing chooses. */
  provider?: string;
  /** A named profile of the configuration: provider and model at once. */
  profile?: string;
  /** The model to ask the provider for. */
  model?: string;
  /** The sandbox level the call asks for (`read-only` when absent), at most the run's ceiling. */
  sandbox?: SandboxLevel;
  /** The folder the agent works in. */
  workdir?: string;
  /**
   * A session (its `ses_` id or a name): the call continues that conversation. A name follows
   * the one rule of session names ({@linkcode SessionNameSchema}), checked before the call starts.
   */
  session?: string;
  /** A routing tag: providers configured for it are tried first. */
  tag?: string;
  /** The call's expected cost, checked against the run's budget before it starts. */
  estimate?: number | {
    /** Expected tokens. */
    tokens?: number;
    /** Expected cost in USD. */
    usd?: number;
  };
  /** A subagent definition (`.claude/agents/<name>.md`, or a built-in type), as in Claude Code. */
  agentType?: string;
  /**
   * Milliseconds the call's agent may go without progress (output of its tool, a chunk of its
   * stream) before the call is stopped and fails as stalled; 0 or absent: no stall watch.
   */
  stallMs?: number;
  /**
   * Length of the prompt's head that sibling calls share: the default label comes from the text
   * after it, and the Anthropic API gets a prompt-cache breakpoint there.
   */
  sharedHeadLength?: number;
  /**
   * Tools the agent does not get (Claude Code's names, or rules such as `Bash(rm:*)`): each
   * harness enforces them or refuses the call (docs/SCRIPTS.md, "Narrowing options").
   */
  disallowedTools?: string[];
  /** `Bash(<command or prefix>)` rules: the agent's shell runs only those command forms. */
  bashCommandClamp?: string[];
}
type _AgentOptionsMatches = Assert<SameType<AgentOptions, z.infer<typeof AgentOptionsSchema>>>;

/** What `agent()` sends across the bridge. */
export const AgentCallSchema = z.strictObject({
  // Empty is allowed: Claude Code sends it, and svc narrates a warning (engine/lenient_call.ts).
  prompt: z.string(),
  options: AgentOptionsSchema,
});

/** One validated `agent()` call. */
export type AgentCall = z.infer<typeof AgentCallSchema>;

/** Result of {@linkcode parseAgentCall}: the call, or a message in the words a script author reads. */
export type ParsedAgentCall = { ok: true; call: AgentCall } | { ok: false; message: string };

/** Validates an `agent()` call and phrases any problem as `agent(): option 'x' ...`. */
export function parseAgentCall(params: unknown): ParsedAgentCall {
  const parsed = AgentCallSchema.safeParse(params);
  if (parsed.success) return { ok: true, call: parsed.data };
  const issue = parsed.error.issues[0];
  if (!issue) return { ok: false, message: "agent(): invalid call" };
  // The narrowing options' messages are Claude Code's, whole.
  if (issue.message.startsWith("agent() ")) return { ok: false, message: issue.message };
  const [head, name, ...rest] = issue.path.map(String);
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((k) => `'${k}'`).join(", ");
    return head === "options"
      ? { ok: false, message: `agent(): unknown option ${keys}` }
      : { ok: false, message: `agent(): unexpected ${keys}` };
  }
  if (head === "prompt") return { ok: false, message: `agent(): prompt ${issue.message}` };
  if (head === "options" && name !== undefined) {
    const where = [name, ...rest].join(".");
    return { ok: false, message: `agent(): option '${where}' ${lowerFirst(issue.message)}` };
  }
  return { ok: false, message: `agent(): ${lowerFirst(issue.message)}` };
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

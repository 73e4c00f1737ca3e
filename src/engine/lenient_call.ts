/**
 * What a script's `agent()` may get wrong and still dispatch, as under Claude Code's Workflow
 * tool: unknown options are dropped, an effort that is not one of the five levels falls back to
 * `medium`, options that are not an object count as none, and an empty prompt is sent as it
 * is. Claude Code does this silently; svc does the same and narrates a warning for each, so a
 * typo is seen and a public script written with extra options still runs.
 *
 * The rule of what may be dropped: only an option that cannot widen what the agent may do. An
 * option that narrows it (`disallowedTools`, `bashCommandClamp`, `agentType`, `isolation`) is a
 * known option, checked strictly and enforced or refused by the harness; an unknown option
 * whose name says it may restrict the agent (tools, permissions, a sandbox, a limit) is refused,
 * never dropped, so that a restriction svc does not know never runs the agent without it.
 * @module
 */
import { AgentOptionsSchema, EffortSchema } from "../schemas/mod.ts";

/** Option names one warning lists, and the characters of each: the names come from a script. */
const LISTED_NAMES = 5;
const NAME_CHARS = 40;

/**
 * Unknown option names that may restrict the agent: refused rather than dropped. Dropping a
 * restriction would run the agent with more than the script allowed.
 */
const MAY_NARROW =
  /tool|allow|deny|clamp|restrict|permission|sandbox|read_?only|forbid|block|limit|max/i;

/** The names `agent()` knows. */
const KNOWN_OPTIONS: ReadonlySet<string> = new Set(Object.keys(AgentOptionsSchema.shape));

/** What `describe()` of the guest says options were, when they were no object. */
const NOT_OBJECT = new Set([
  "null",
  "an array",
  "string",
  "number",
  "boolean",
  "bigint",
  "symbol",
  "function",
]);

/** An `agent()` call's params with what was dropped, and the warnings to narrate. */
export interface LenientCall {
  /** The params without the dropped parts: `{prompt, options}`. */
  params: unknown;
  /** One line per thing ignored, for the run's narration. */
  warnings: string[];
  /** The options as given, when some were dropped or replaced. */
  given?: Record<string, unknown>;
  /** Why the call is refused: an unknown option that may restrict the agent. */
  refusal?: string;
}

function quoted(names: string[]): string {
  const shown = names.slice(0, LISTED_NAMES).map((name) =>
    `'${name.length > NAME_CHARS ? `${name.slice(0, NAME_CHARS)}…` : name}'`
  );
  const more = names.length > LISTED_NAMES ? ` and ${names.length - LISTED_NAMES} more` : "";
  return `${shown.join(", ")}${more}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Makes an `agent()` call's params dispatchable where Claude Code would dispatch them;
 * `ignored` is the guest's word for options that were no object. Anything else wrong is left
 * for the strict check, which throws it to the script.
 */
export function lenientCall(params: unknown, ignored: unknown): LenientCall {
  if (!isRecord(params)) return { params, warnings: [] };
  const warnings: string[] = [];
  const options = isRecord(params.options) ? { ...params.options } : params.options;
  if (typeof ignored === "string" && NOT_OBJECT.has(ignored)) {
    warnings.push(
      `agent(): options must be an object, got ${ignored}: ignored, as Claude Code does`,
    );
  }
  if (params.prompt === "") warnings.push("agent(): the prompt is empty: sent as it is");
  if (!isRecord(options) || !isRecord(params.options)) return { params, warnings };
  const unknown = Object.keys(options).filter((name) => !KNOWN_OPTIONS.has(name));
  const narrowing = unknown.filter((name) => MAY_NARROW.test(name));
  if (narrowing.length > 0) {
    const noun = narrowing.length === 1 ? "option" : "options";
    const refusal = `agent(): unknown ${noun} ${
      quoted(narrowing)
    } may restrict the agent, and svc does not know ${
      narrowing.length === 1 ? "it" : "them"
    }: the call is refused rather than run without the restriction`;
    return { params, warnings, refusal };
  }
  for (const name of unknown) delete options[name];
  if (unknown.length > 0) {
    const noun = unknown.length === 1 ? "option" : "options";
    warnings.push(`agent(): unknown ${noun} ${quoted(unknown)} ignored, as Claude Code does`);
  }
  if (options.effort !== undefined && !EffortSchema.safeParse(options.effort).success) {
    const given = typeof options.effort === "string" ? quoted([options.effort]) : "a non-string";
    warnings.push(`agent(): effort ${given} is not low, medium, high, xhigh or max: medium used`);
    options.effort = "medium";
  }
  const changed = unknown.length > 0 || options.effort !== params.options.effort;
  return {
    params: { ...params, options },
    warnings,
    ...(changed ? { given: params.options as Record<string, unknown> } : {}),
  };
}

import * as z from "zod";

/**
 * The two `agent()` options that narrow what an agent may do, checked as Claude Code's Workflow
 * tool (2.1.337) checks them: `disallowedTools`, tool names the agent does not get, and
 * `bashCommandClamp`, `Bash(<command or prefix>)` permission rules its shell is limited to. A
 * malformed one refuses the spawn with Claude Code's own reason, never runs the agent
 * un-narrowed. Every message is whole (`agent() opts.…`), not prefixed by the option's name.
 * @module
 */

/** Bounds of the narrowing options: the values come from a script. */
export const NARROWING_LIMITS = {
  /** Entries of one list (Claude Code's own bound on `disallowedTools` elsewhere). */
  entries: 512,
  /** Characters of one entry. */
  entryChars: 1024,
};

/** The tool a clamp rule names: Claude Code's shell tool, case-sensitive. */
export const CLAMPED_TOOL = "Bash";

/**
 * Claude Code's built-in tool names. An entry that differs from one of them only in case is
 * refused, as Claude Code refuses it: the deny would otherwise match nothing.
 */
export const CLAUDE_TOOL_NAMES: readonly string[] = [
  "Agent",
  "Bash",
  "BashOutput",
  "Edit",
  "ExitPlanMode",
  "Glob",
  "Grep",
  "KillShell",
  "LS",
  "MultiEdit",
  "NotebookEdit",
  "NotebookRead",
  "Read",
  "Skill",
  "SlashCommand",
  "StructuredOutput",
  "Task",
  "TodoWrite",
  "WebFetch",
  "WebSearch",
  "Write",
];

/** An entry as a message shows it: clipped, control characters and quotes escaped. */
export function shownEntry(entry: string): string {
  const clipped = entry.length > 60 ? `${entry.slice(0, 60)}…` : entry;
  return JSON.stringify(clipped).slice(1, -1);
}

/** A permission rule `Tool(content)` read as Claude Code reads it; `Tool` alone has no content. */
export function parsePermissionRule(rule: string): { toolName: string; ruleContent?: string } {
  const open = rule.indexOf("(");
  if (open <= 0 || !rule.endsWith(")")) return { toolName: rule };
  const content = rule.slice(open + 1, -1);
  const toolName = rule.slice(0, open);
  // `Tool()` and `Tool(*)` are the whole tool, as in Claude Code's rule parser.
  return content === "" || content === "*" ? { toolName } : { toolName, ruleContent: content };
}

function badEntries(value: unknown): boolean {
  return !Array.isArray(value) ||
    value.some((entry) => typeof entry !== "string" || entry === "" || entry !== entry.trim());
}

function got(value: unknown): string {
  return Array.isArray(value)
    ? "an array with non-string, empty, or whitespace-padded entries"
    : typeof value;
}

function tooMany(option: string, value: unknown[], ending: string): string | undefined {
  if (value.length > NARROWING_LIMITS.entries) {
    return `agent() opts.${option} has ${value.length} entries, more than ${NARROWING_LIMITS.entries}. ${ending}`;
  }
  const long = (value as string[]).find((entry) => entry.length > NARROWING_LIMITS.entryChars);
  if (long !== undefined) {
    return `agent() opts.${option} entry '${
      shownEntry(long)
    }' is longer than ${NARROWING_LIMITS.entryChars} characters. ${ending}`;
  }
  return undefined;
}

const UN_NARROWED = "Refusing the spawn rather than running it un-narrowed.";
const UN_CLAMPED = "Refusing the spawn rather than running it un-clamped.";

/** Why a `disallowedTools` value is refused, in Claude Code's words; undefined when it is good. */
export function disallowedToolsProblem(value: unknown): string | undefined {
  if (badEntries(value)) {
    return `agent() opts.disallowedTools must be an array of non-empty tool-name strings (e.g. ['Bash', 'Write']); got ${
      got(value)
    }. ${UN_NARROWED}`;
  }
  const entries = value as string[];
  const bound = tooMany("disallowedTools", entries, UN_NARROWED);
  if (bound !== undefined) return bound;
  for (const entry of entries) {
    const { toolName } = parsePermissionRule(entry);
    if (toolName.includes("*") && !/^mcp__/i.test(toolName)) {
      return `agent() opts.disallowedTools entry '${
        shownEntry(entry)
      }' cannot match any tool \u2014 '*' is not a deny wildcard outside mcp__ server specs. Enumerate the tools to deny (e.g. ['Bash', 'Write']), or use 'mcp__*' to deny every MCP server's tools. ${UN_NARROWED}`;
    }
    const lower = toolName.toLowerCase();
    const exists = CLAUDE_TOOL_NAMES.find((name) => name.toLowerCase() === lower);
    if (exists !== undefined && exists !== toolName) {
      return `agent() opts.disallowedTools entry '${shownEntry(entry)}'${
        toolName !== entry ? ` (parsed tool name '${shownEntry(toolName)}')` : ""
      } does not match any tool, but '${exists}' exists \u2014 tool names are case-sensitive. Refusing the spawn rather than running it with this deny silently dropped.`;
    }
  }
  return undefined;
}

/** Why a `bashCommandClamp` value is refused, in Claude Code's words; undefined when it is good. */
export function bashCommandClampProblem(value: unknown): string | undefined {
  if (badEntries(value)) {
    return `agent() opts.bashCommandClamp must be an array of non-empty strings; got ${
      got(value)
    }. ${UN_CLAMPED}`;
  }
  const entries = value as string[];
  const bound = tooMany("bashCommandClamp", entries, UN_CLAMPED);
  if (bound !== undefined) return bound;
  for (const entry of entries) {
    const { toolName, ruleContent } = parsePermissionRule(entry);
    const padded = ruleContent !== undefined && ruleContent !== ruleContent.trim();
    if (toolName !== CLAMPED_TOOL || ruleContent === undefined || padded) {
      return `agent() opts.bashCommandClamp entry '${
        shownEntry(entry)
      }' must be a '${CLAMPED_TOOL}(<command or prefix>)' permission rule (tool name case-sensitive, non-empty content with no leading/trailing whitespace inside the parens); it parses to tool '${
        shownEntry(toolName)
      }'${
        ruleContent === undefined
          ? " with no rule content"
          : padded
          ? " with whitespace-padded rule content"
          : ""
      }. Refusing the spawn rather than running it with an inert clamp entry.`;
    }
  }
  return undefined;
}

/**
 * Why a clamp beside these denies is refused: a clamp on an agent without Bash keeps nothing,
 * and Claude Code refuses to run that blind agent.
 */
export function clampWithoutBashProblem(
  disallowedTools: readonly string[] | undefined,
  bashCommandClamp: readonly string[] | undefined,
): string | undefined {
  // `Bash`, `Bash()` and `Bash(*)` all deny the whole tool.
  const bashless = disallowedTools?.some((entry) => {
    const rule = parsePermissionRule(entry);
    return rule.toolName === CLAMPED_TOOL && rule.ruleContent === undefined;
  });
  if (!bashCommandClamp?.length || !bashless) return undefined;
  return `agent() opts.bashCommandClamp can bind nothing: the spawned agent's resolved tool pool has no ${CLAMPED_TOOL} (removed by this spawn's disallowedTools, the agent definition's denies, or absent from the session pool). A clamp on a Bash-less agent means the commands it was meant to keep are unavailable \u2014 refusing the spawn rather than running a blind agent. Drop the clamp or the Bash deny.`;
}

/** What the refusal of options that are not plain data says, `where` naming the option. */
export function notPlainDataMessage(where: string): string {
  return `agent() could not read ${where} as plain data, so the agent was not started. Write the options as an object literal: agentType and isolation as strings, disallowedTools and bashCommandClamp as arrays of strings, and no Proxy, getter, or inherited or non-enumerable property.`;
}

/** A list option's schema: Claude Code's message for every way it can be wrong. */
function listSchema(problem: (value: unknown) => string | undefined) {
  // An element that is no string is reported as one of an array's bad entries.
  const entry = z.string({ error: () => ({ message: problem([null]) ?? "" }) });
  return z.array(entry, { error: (issue) => ({ message: problem(issue.input) ?? "" }) })
    .superRefine((value, ctx) => {
      const found = problem(value);
      if (found !== undefined) ctx.addIssue({ code: "custom", message: found });
    });
}

/**
 * `disallowedTools`: tool names (or permission rules such as `Bash(rm:*)`) the agent does not
 * get. Every message is whole, starting `agent() opts.`: `parseAgentCall` shows it as it is.
 */
export const DisallowedToolsSchema = listSchema(disallowedToolsProblem);

/** `bashCommandClamp`: `Bash(<command or prefix>)` rules the agent's shell is limited to. */
export const BashCommandClampSchema = listSchema(bashCommandClampProblem);

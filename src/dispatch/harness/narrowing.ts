/**
 * A call's narrowing options as the harnesses see them: `disallowedTools` (Claude Code's tool
 * names, or rules such as `Bash(rm:*)`) and `bashCommandClamp` (`Bash(<command or prefix>)`
 * rules), validated by the schema (src/schemas/narrowing.ts). Each tool maps them onto its own
 * settings where those hold, or names why it cannot; the runner then refuses the call.
 * @module
 */

/** The narrowing options of one call; both lists may be empty, never both. */
export interface Narrowing {
  /** Tools the agent does not get. */
  disallowedTools: readonly string[];
  /** The command forms the agent's shell is limited to; empty when it is not clamped. */
  bashCommandClamp: readonly string[];
}

/** The options as a refusal names them: `disallowedTools Bash, Write; bashCommandClamp …`. */
export function describeNarrowing(narrowing: Narrowing): string {
  const part = (name: string, list: readonly string[]) => {
    if (list.length === 0) return [];
    const shown = list.slice(0, 5).map((entry) => JSON.stringify(entry.slice(0, 60)));
    const more = list.length > 5 ? ` and ${list.length - 5} more` : "";
    return [`${name} ${shown.join(", ")}${more}`];
  };
  return [
    ...part("disallowedTools", narrowing.disallowedTools),
    ...part("bashCommandClamp", narrowing.bashCommandClamp),
  ].join("; ");
}

/** The tool name of a permission rule: `Bash(git diff:*)` is `Bash`. */
export function ruleTool(rule: string): string {
  const open = rule.indexOf("(");
  return open <= 0 ? rule : rule.slice(0, open);
}

/** Claude Code's editing tools: a read-only sandbox makes denying them true by itself. */
const EDITING_TOOLS: ReadonlySet<string> = new Set(["Write", "Edit", "MultiEdit", "NotebookEdit"]);

/**
 * Why Codex cannot hold a call's narrowing. Codex has no setting that takes a tool away or
 * limits its shell to given commands; only its sandbox restricts, so the one narrowing it holds
 * is a denial of the editing tools in a `read-only` call, whose sandbox writes nothing anyway.
 */
export function codexNarrowingProblem(call: {
  sandbox: string;
  narrowing?: Narrowing;
}): string | undefined {
  const narrowing = call.narrowing;
  if (narrowing === undefined) return undefined;
  if (narrowing.bashCommandClamp.length > 0) {
    return "Codex has no setting that limits its shell to given commands";
  }
  const held = call.sandbox === "read-only"
    ? narrowing.disallowedTools.filter((tool) => EDITING_TOOLS.has(tool))
    : [];
  const other = narrowing.disallowedTools.find((tool) => !held.includes(tool));
  if (other === undefined) return undefined;
  return `Codex has no setting that takes away a tool (${
    JSON.stringify(other.slice(0, 60))
  }); only its read-only sandbox makes a denial of the editing tools true`;
}

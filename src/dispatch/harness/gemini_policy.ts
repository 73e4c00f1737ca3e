/**
 * How Gemini CLI (0.61) holds a call's narrowing options: a policy file of its Policy Engine,
 * passed with `--policy` (the user tier, above the built-in rules of every approval mode, `yolo`'s
 * allow-all included). `disallowedTools` become `deny` rules without arguments, which take the
 * tools out of what the model is offered; a `bashCommandClamp` becomes `allow` rules for its
 * command forms over a `deny` of every other shell command, and a `deny` of any command with a
 * redirection, which Gemini's allow rules would otherwise let through. Gemini splits chained
 * commands and checks each part, and matches a `commandPrefix` at a word's end.
 *
 * Claude Code's tool names map onto Gemini's; a name Gemini has no tool for (`NotebookEdit`)
 * holds by itself. An entry with no mapping (an MCP tool, a rule such as `Bash(rm:*)`) and a
 * clamp rule with a `*` inside are refused: no Gemini rule says the same.
 * @module
 */
import { joinPath, platform } from "../../platform/mod.ts";
import type { HarnessCall } from "./run_harness.ts";

/** Claude Code's tool names and the Gemini tools that do the same; none for tools Gemini lacks. */
export const GEMINI_TOOLS: Readonly<Record<string, readonly string[]>> = {
  Bash: ["run_shell_command", "list_background_processes", "read_background_output"],
  BashOutput: ["read_background_output"],
  KillShell: [],
  Write: ["write_file"],
  Edit: ["replace"],
  MultiEdit: ["replace"],
  NotebookEdit: [],
  NotebookRead: [],
  Read: ["read_file", "read_many_files"],
  Glob: ["glob"],
  Grep: ["grep_search"],
  LS: ["list_directory"],
  WebFetch: ["web_fetch"],
  WebSearch: ["google_web_search"],
  TodoWrite: ["write_todos"],
  Task: ["invoke_agent"],
  Agent: ["invoke_agent"],
  Skill: ["activate_skill"],
};

const SHELL = "run_shell_command";
const SUBAGENTS = "invoke_agent";
/** Gemini's policy priorities run from 0 to 999: svc's rules take the top. */
const DENY = 999;
const ALLOW = 998;
const OTHER_SHELL = 997;

/** A string as a TOML basic string. */
function toml(value: string): string {
  return JSON.stringify(value).replace(
    /[\u007f-\u009f\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** A regular expression that matches `text` literally. */
function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** Why Gemini cannot hold this call's narrowing, or undefined when its policy can. */
export function geminiNarrowingProblem(call: HarnessCall): string | undefined {
  const narrowing = call.narrowing;
  if (narrowing === undefined) return undefined;
  const unmapped = narrowing.disallowedTools.find((tool) => GEMINI_TOOLS[tool] === undefined);
  if (unmapped !== undefined) {
    return `Gemini CLI has no tool known to be ${JSON.stringify(unmapped.slice(0, 60))}`;
  }
  const unwritable = narrowing.bashCommandClamp.find((rule) => !rule.isWellFormed());
  if (unwritable !== undefined) {
    return "a clamp rule holds a lone surrogate, which no Gemini policy file can hold";
  }
  const wild = narrowing.bashCommandClamp.find((rule) => {
    const content = clampContent(rule);
    return (content.endsWith(":*") ? content.slice(0, -2) : content).includes("*");
  });
  if (wild !== undefined) {
    return `Gemini CLI's policy has no rule for the wildcard clamp ${
      JSON.stringify(wild.slice(0, 60))
    }`;
  }
  return undefined;
}

function clampContent(rule: string): string {
  return rule.slice(rule.indexOf("(") + 1, -1);
}

/** One clamp rule as a Gemini `allow` rule: a prefix (`x:*`), or the exact command. */
function allowRule(rule: string): string {
  const content = clampContent(rule);
  const match = content.endsWith(":*")
    ? `commandPrefix = ${toml(content.slice(0, -2))}`
    // Gemini matches `"command":"<regex>` in the call's JSON: the closing quote makes it exact.
    : `commandRegex = ${toml(`${literal(JSON.stringify(content).slice(1, -1))}"`)}`;
  return `[[rule]]\ntoolName = "${SHELL}"\n${match}\ndecision = "allow"\npriority = ${ALLOW}\n`;
}

/**
 * The call's policy files: the denies, made of svc's own strings only, and the clamp's allows,
 * which hold the script's commands. Gemini skips a policy file it cannot read and runs on; apart,
 * a file it cannot read costs only allows, which narrows, never a deny.
 */
export function geminiPolicies(call: HarnessCall): string[] {
  const { disallowedTools = [], bashCommandClamp = [] } = call.narrowing ?? {};
  // A sub-agent runs on a policy of its own: a narrowed call starts none.
  const denied = [
    ...new Set([...disallowedTools.flatMap((tool) => GEMINI_TOOLS[tool] ?? []), SUBAGENTS]),
  ];
  const denies: string[] = [];
  if (denied.length > 0) {
    denies.push(
      `[[rule]]\ntoolName = [${
        denied.map(toml).join(", ")
      }]\ndecision = "deny"\npriority = ${DENY}\n`,
    );
  }
  // A read-only call has no shell at all, which a clamp cannot widen.
  const clamped = bashCommandClamp.length > 0 && call.sandbox !== "read-only";
  if (clamped) {
    denies.push(
      `[[rule]]\ntoolName = "${SHELL}"\nargsPattern = "[<>]"\ndecision = "deny"\npriority = ${DENY}\n`,
      `[[rule]]\ntoolName = "${SHELL}"\ndecision = "deny"\npriority = ${OTHER_SHELL}\n`,
    );
  }
  return [denies.join("\n"), clamped ? bashCommandClamp.map(allowRule).join("\n") : ""]
    .filter((text) => text !== "");
}

function policyPath(call: HarnessCall, text: string): string {
  const bytes = platform().sha256(new TextEncoder().encode(text));
  const hash = Array.from(bytes.slice(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
  return joinPath(call.stateDir!, "policies", `narrowing-${hash}.toml`);
}

/** Where the call's policy files are kept: named by their content. */
export function geminiPolicyPaths(call: HarnessCall): string[] {
  return geminiPolicies(call).map((text) => policyPath(call, text));
}

/**
 * Writes the call's policy files under the provider's state directory (calls with the same
 * narrowing share them, each replaced whole through a rename so that none reads half of one).
 */
export async function writeGeminiPolicies(call: HarnessCall): Promise<void> {
  const p = platform();
  await p.mkdir(joinPath(call.stateDir!, "policies"));
  for (const text of geminiPolicies(call)) {
    const path = policyPath(call, text);
    const temp = `${path}.${p.pid()}.${crypto.randomUUID()}.tmp`;
    await p.writeTextFile(temp, text, { mode: 0o600 });
    await p.rename(temp, path);
  }
}

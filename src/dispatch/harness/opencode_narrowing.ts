/**
 * How opencode (1.18) holds a call's narrowing options: through the permissions svc already
 * sets for the sandbox level (`OPENCODE_PERMISSION`). A `disallowedTools` entry denies the
 * opencode tool that does the same, which takes it out of what the model is offered; opencode
 * has one permission for every editing tool, so denying `Write` or `Edit` denies both (the
 * stricter side). A `bashCommandClamp` turns `bash` into patterns: every command denied but the
 * clamp's forms (`cmd` exactly, `prefix:*` as `prefix` and `prefix *`); opencode splits chained
 * commands and checks each part. Where the level already denies `bash` (read-only, write), it
 * stays denied, which a clamp cannot widen. A narrowed call gets no sub-agents (`task`): their
 * permissions come from their own agent definitions, not from the call's.
 *
 * A Claude Code name opencode has no tool for (`NotebookEdit`) holds by itself; an entry with no
 * mapping (an MCP tool, a rule such as `Bash(rm:*)`) and a clamp rule with a `*` inside are
 * refused: no opencode permission says the same.
 * @module
 */
import type { HarnessCall } from "./run_harness.ts";

/** Claude Code's tool names and the opencode permissions that cover the same tools. */
export const OPENCODE_TOOLS: Readonly<Record<string, readonly string[]>> = {
  Bash: ["bash"],
  BashOutput: [],
  KillShell: [],
  Write: ["edit"],
  Edit: ["edit"],
  MultiEdit: ["edit"],
  NotebookEdit: [],
  NotebookRead: [],
  Read: ["read"],
  Glob: ["glob"],
  Grep: ["grep"],
  LS: ["list"],
  WebFetch: ["webfetch"],
  WebSearch: ["websearch"],
  TodoWrite: ["todowrite"],
  Task: ["task"],
  Agent: ["task"],
  Skill: ["skill"],
};

type Decision = "allow" | "deny";
/** An opencode permission: one decision, or patterns of a tool's input and their decisions. */
export type OpencodePermission = Record<string, Decision | Record<string, Decision>>;

function content(rule: string): string {
  return rule.slice(rule.indexOf("(") + 1, -1);
}

/** Why opencode cannot hold this call's narrowing, or undefined when its permissions can. */
export function opencodeNarrowingProblem(call: HarnessCall): string | undefined {
  const narrowing = call.narrowing;
  if (narrowing === undefined) return undefined;
  const unmapped = narrowing.disallowedTools.find((tool) => OPENCODE_TOOLS[tool] === undefined);
  if (unmapped !== undefined) {
    return `opencode has no tool known to be ${JSON.stringify(unmapped.slice(0, 60))}`;
  }
  // opencode's patterns read `*` and `?` as wildcards: a rule holding one would match more.
  const wild = narrowing.bashCommandClamp.find((rule) => {
    const body = content(rule);
    return /[*?]/.test(body.endsWith(":*") ? body.slice(0, -2) : body);
  });
  if (wild !== undefined) {
    return `opencode's permissions have no pattern for the wildcard clamp ${
      JSON.stringify(wild.slice(0, 60))
    }`;
  }
  return undefined;
}

/** The level's permissions with the call's narrowing applied. */
export function narrowedPermission(
  base: Readonly<Record<string, Decision>>,
  call: HarnessCall,
): OpencodePermission {
  const permission: OpencodePermission = { ...base };
  const narrowing = call.narrowing;
  if (narrowing === undefined) return permission;
  if (narrowing.bashCommandClamp.length > 0 && permission.bash === "allow") {
    const patterns: Record<string, Decision> = { "*": "deny" };
    for (const rule of narrowing.bashCommandClamp) {
      const body = content(rule);
      if (body.endsWith(":*")) {
        const prefix = body.slice(0, -2);
        patterns[prefix] = "allow";
        patterns[`${prefix} *`] = "allow";
      } else {
        patterns[body] = "allow";
      }
    }
    permission.bash = patterns;
  }
  for (const tool of narrowing.disallowedTools) {
    for (const key of OPENCODE_TOOLS[tool] ?? []) permission[key] = "deny";
  }
  // A sub-agent's permissions are its agent's own: a narrowed call starts none.
  permission.task = "deny";
  return permission;
}

/**
 * How Claude Code holds a `bashCommandClamp` from its command line: a `PreToolUse` hook on Bash
 * that denies every command no clamp rule matches. Claude Code's permission rules alone do not
 * clamp: read-only commands (`pwd`, `echo`, `git status`) run in every permission mode without
 * an allow rule, and `acceptEdits` runs file-system commands (`touch`, `mkdir`) in the working
 * directory. The hook runs before those checks, and its denial (exit status 2) wins over every
 * allow.
 *
 * The hook is a small program run by svc's own Deno (it needs no permission: it reads its
 * standard input only), its source and the rules passed base64-encoded so that no script value
 * reaches the shell Claude Code runs hooks with. It matches as a narrower Claude Code would: a
 * rule is the exact command, a `prefix:*` the prefix and its arguments, a `*` any characters;
 * a command with a shell operator (`;`, `&`, `|`, `$`, a backquote, a redirection, a
 * subshell, a backslash, a line break) matches only a rule that is exactly it. Anything that
 * goes wrong in the hook (no Deno, a crash) denies too: its command ends in `|| exit 2`.
 * @module
 */

/** Longest Claude Code may wait for the hook, in seconds. */
export const CLAMP_HOOK_TIMEOUT_S = 30;

/**
 * The hook's program. The glob match is the linear two-pointer one (no regular expression
 * built from a script's rule, so no rule can make it backtrack for long).
 */
const HOOK_SOURCE = `
const rules = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(Deno.args[0]), (c) => c.charCodeAt(0))));
const OPERATOR = /[;&|\`$<>()\\\\\\n\\r]/;
function glob(pattern, text) {
  let p = 0, t = 0, star = -1, mark = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern[p] === "*") { star = p++; mark = t; }
    else if (p < pattern.length && pattern[p] === text[t]) { p++; t++; }
    else if (star !== -1) { p = star + 1; t = ++mark; }
    else return false;
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}
function matches(rule, command) {
  if (command === rule) return true;
  if (OPERATOR.test(command)) return false;
  if (rule.endsWith(":*")) {
    const prefix = rule.slice(0, -2);
    return command === prefix || command.startsWith(prefix + " ");
  }
  return rule.includes("*") && glob(rule, command);
}
const event = JSON.parse(await new Response(Deno.stdin.readable).text());
if (event.tool_name !== "Bash") Deno.exit(0);
const command = event.tool_input?.command;
if (typeof command === "string" && rules.some((rule) => matches(rule, command))) Deno.exit(0);
console.error("Permission to use Bash has been denied: this agent's Bash use is clamped to a fixed set of command forms (bashCommandClamp: " + rules.map((r) => "Bash(" + r + ")").join(", ") + "), and " + JSON.stringify(String(command).slice(0, 200)) + " is none of them. Use only those commands.");
Deno.exit(2);
`;

function base64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** A path as one word of a POSIX shell command. */
function shellWord(path: string): string {
  return `'${path.replaceAll("'", `'\\''`)}'`;
}

/** The rule contents of a clamp: `Bash(npm test:*)` is `npm test:*`. */
export function clampContents(clamp: readonly string[]): string[] {
  return clamp.map((rule) => rule.slice(rule.indexOf("(") + 1, -1));
}

/**
 * The `hooks` settings of a clamped call: the hook command run by `deno`, with the clamp's
 * rule contents.
 */
export function clampHookSettings(deno: string, clamp: readonly string[]): Record<string, unknown> {
  const source = `data:application/javascript;base64,${base64(HOOK_SOURCE)}`;
  const rules = base64(JSON.stringify(clampContents(clamp)));
  const command = `DENO_NO_UPDATE_CHECK=1 ${
    shellWord(deno)
  } run --quiet --no-config --no-lock --no-prompt '${source}' '${rules}' || exit 2`;
  return {
    PreToolUse: [{
      matcher: "Bash",
      hooks: [{ type: "command", command, timeout: CLAMP_HOOK_TIMEOUT_S }],
    }],
  };
}

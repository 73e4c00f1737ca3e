/**
 * The program of Claude Code's Bash clamp hook (src/dispatch/harness/claude_clamp_hook.ts): it
 * reads Claude Code's `PreToolUse` event on standard input and exits 2, denying the command,
 * unless a rule of the clamp (base64 JSON in its first argument) matches it. Like a script's
 * guest, it runs in a Deno process of svc's with no permissions, so it lives beside the guest's
 * code; the host passes it as text, in a `data:` URL, so that nothing of it is a file to swap.
 *
 * The glob match is the linear two-pointer one (no regular expression built from a script's
 * rule, so no rule can make it backtrack for long).
 */
export const CLAMP_HOOK_SOURCE = `
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

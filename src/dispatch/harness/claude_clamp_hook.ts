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
import { CLAMP_HOOK_SOURCE as HOOK_SOURCE } from "../../../guest/clamp_hook.js";

/** Longest Claude Code may wait for the hook, in seconds. */
export const CLAMP_HOOK_TIMEOUT_S = 30;

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

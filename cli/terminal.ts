/**
 * Everything svc prints on a person's terminal passes through here. Texts that came from a
 * script, a tool or a request (narration, error messages, tool output) may hold escape
 * sequences that set the window title, write the clipboard (OSC 52) or move the cursor, and
 * newlines that forge svc's own lines; they are shown with their control characters made
 * visible. What svc records (the narration in the ledger) stays exact: only printing escapes.
 * @module
 */
import { platform } from "../src/platform/mod.ts";

/**
 * C0 controls but tab, DEL, C1 controls, the bidirectional overrides and isolates (which reorder
 * what a reader sees), and the Unicode line and paragraph separators.
 */
const CONTROL =
  // deno-lint-ignore no-control-regex -- matching control characters is the point
  /[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\x1b": "\\e" };

function escapeOne(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
}

/** `text` on one line with every control character shown as an escape (`\e`, `\n`, `\x07`, ...). */
export function visible(text: string): string {
  return text.replace(CONTROL, escapeOne);
}

/**
 * JSON for a terminal: `JSON.stringify` already escapes C0 controls inside strings, but not C1
 * controls, bidirectional overrides or line separators. Those only occur inside strings, where
 * a `\u` escape denotes the same character, so the document parses to the same value.
 */
export function terminalJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(
    /[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Prints one line on standard error, its control characters made visible. */
export function printLine(text: string): void {
  platform().writeStderr(`${visible(text)}\n`);
}

/** Prints lines on standard output, their control characters made visible. */
export function printOut(lines: readonly string[]): Promise<void> {
  return platform().writeStdout(lines.map((line) => `${visible(line)}\n`).join(""));
}

/** Prints a value as one JSON document on standard output (pretty with `space`). */
export function printJson(value: unknown, space?: number): Promise<void> {
  return platform().writeStdout(`${terminalJson(value, space)}\n`);
}

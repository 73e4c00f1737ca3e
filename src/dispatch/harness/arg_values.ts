/**
 * The one check every script-derived value passes before it reaches a tool's command line: a
 * model name or a session id that starts with `-` would be read as an option by a tool that
 * takes the next argument only when it does not look like one (yargs' string options,
 * commander's optional values), and control characters or an unbounded length have no place
 * in an argument either.
 * @module
 */
import { SvcError } from "../../errors/mod.ts";

/** Longest model name or session id passed to a tool. */
export const ARG_VALUE_LIMIT = 256;

// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Longest text passed as one argument (a system prompt): below Linux's limit of 128 KiB on one
 * argument, with room for the option's name.
 */
export const ARG_TEXT_LIMIT = 100 * 1024;

// deno-lint-ignore no-control-regex
const TEXT_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** A value for a message: JSON-quoted (so control characters show escaped) and clipped. */
function quoted(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}

/**
 * Refuses a value that a tool could misread: empty, longer than {@linkcode ARG_VALUE_LIMIT},
 * with a control character, or starting with `-`. `what` names it (`model`, `session id`).
 */
export function checkArgValue(provider: string, what: string, value: string): void {
  let reason: string | undefined;
  if (value === "") reason = "it is empty";
  else if (value.length > ARG_VALUE_LIMIT) {
    reason = `it is longer than ${ARG_VALUE_LIMIT} characters`;
  } else if (CONTROL.test(value)) reason = "it contains a control character";
  else if (value.startsWith("-")) reason = "it starts with '-' and would be read as an option";
  if (reason === undefined) return;
  throw new SvcError(
    "invalid_request",
    `Cannot dispatch to ${provider}: the ${what} ${quoted(value)} is refused: ${reason}`,
  );
}

/**
 * Refuses a text (a system prompt, glued to its option as `--opt=<text>`) that cannot be one
 * argument: longer than {@linkcode ARG_TEXT_LIMIT} characters, or with a control character
 * other than tab and line breaks (NUL cannot be in an argument at all).
 */
export function checkArgText(provider: string, what: string, value: string): void {
  let reason: string | undefined;
  if (value.length > ARG_TEXT_LIMIT) reason = `it is longer than ${ARG_TEXT_LIMIT} characters`;
  else if (TEXT_CONTROL.test(value)) reason = "it contains a control character";
  if (reason === undefined) return;
  throw new SvcError(
    "invalid_request",
    `Cannot dispatch to ${provider}: the ${what} ${quoted(value)} is refused: ${reason}`,
  );
}

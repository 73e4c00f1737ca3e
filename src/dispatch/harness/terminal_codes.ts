/**
 * Terminal control sequences in a tool's text: the colours and cursor moves a coding agent
 * writes to its terminal, which must not reach a run record, an error or another terminal.
 * @module
 */

/**
 * Every escape sequence a terminal acts on: CSI (`ESC [ ... final`, colours and cursor moves,
 * and its 8-bit form `U+009B`), OSC (`ESC ] ... BEL` or `ESC \`, titles and links), the string
 * sequences DCS, SOS, PM and APC, and the two-character escapes (`ESC c`, `ESC 7`, ...).
 */
const ESCAPE_SEQUENCE = new RegExp(
  [
    "(?:\\u001b\\[|\\u009b)[0-?]*[ -/]*[@-~]",
    "(?:\\u001b\\]|\\u009d)[^\\u0007\\u001b\\u009c]*(?:\\u0007|\\u001b\\\\|\\u009c)?",
    "(?:\\u001b[PX^_]|[\\u0090\\u0098\\u009e\\u009f])[^\\u001b\\u009c]*(?:\\u001b\\\\|\\u009c)?",
    "\\u001b[ -/]*[0-~]?",
  ].join("|"),
  "g",
);

/** Control characters left once the sequences are gone, but tab and newline: C0, DEL and C1. */
// deno-lint-ignore no-control-regex -- removing control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * `text` without terminal escape sequences and control characters (tab and newline kept), so
 * that a tool's coloured error reads the same in a run record, a JSON answer and a terminal,
 * and cannot move the cursor or retitle the window of whoever prints it.
 */
export function stripTerminalCodes(text: string): string {
  return text.replace(ESCAPE_SEQUENCE, "").replace(CONTROL, "");
}

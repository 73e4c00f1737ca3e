import { clipText, type RunError } from "../ledger/mod.ts";
import type { ScriptFailure } from "./guest_session.ts";

/** Lines the AsyncFunction constructor puts before the body. */
const HEADER_LINES = 2;
/** Length of the `"use strict";` the guest puts at the start of the body's first line. */
const STRICT_PREFIX = '"use strict";'.length;
/** A frame of a body compiled by the guest: `(<sourceURL>, <anonymous>:line:column)`. */
const FRAME = /([^\s(),]+), <anonymous>:(\d+):(\d+)/g;
const TEXT_LIMIT = 4 * 1024;
/** Longest error name kept: the guest chooses it. */
const NAME_LIMIT = 256;
/**
 * The tail of a stack line that is searched for a position. The line comes from the guest: a
 * function named with 70 KB would make the frame pattern backtrack for seconds. A position
 * sits at the end of its line, so the tail holds it.
 */
const LINE_TAIL = 512;
/** Stack lines looked at, and frames kept. */
const MAX_LINES = 100;
const MAX_FRAMES = 20;

/**
 * Turns an error thrown by the script (or a sub-workflow) into a run error whose positions
 * are those of the files as written, keeping only the stack frames that lie in them.
 */
export function scriptRunError(failure: ScriptFailure): RunError {
  let where: { file: string; line: number; column: number } | undefined;
  const frames: string[] = [];
  for (const line of failure.stack.split("\n", MAX_LINES)) {
    const raw = line.length > LINE_TAIL ? `…${line.slice(-LINE_TAIL)}` : line;
    const mapped = raw.replace(FRAME, (_all, file: string, l: string, c: string) => {
      const line = Number(l) - HEADER_LINES;
      const column = line === 1 ? Math.max(1, Number(c) - STRICT_PREFIX) : Number(c);
      where ??= { file, line, column };
      return `${file}:${line}:${column}`;
    });
    if (mapped !== raw) frames.push(mapped.trim());
  }
  const label = failure.name === "Thrown"
    ? "uncaught exception"
    : clipText(failure.name, NAME_LIMIT);
  const message = clipText(failure.message, TEXT_LIMIT);
  const at = where ? ` (${where.file}:${where.line}:${where.column})` : "";
  const error: RunError = { code: "script_error", message: `${label}: ${message}${at}` };
  if (where) Object.assign(error, where);
  if (frames.length > 0) error.stack = clipText(frames.slice(0, MAX_FRAMES).join("\n"), TEXT_LIMIT);
  return error;
}

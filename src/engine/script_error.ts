import type { RunError } from "../ledger/mod.ts";
import type { ScriptFailure } from "./guest_session.ts";

/** Lines the AsyncFunction constructor puts before the body. */
const HEADER_LINES = 2;
/** Length of the `"use strict";` the guest puts at the start of the body's first line. */
const STRICT_PREFIX = '"use strict";'.length;
/** A frame of a body compiled by the guest: `(<sourceURL>, <anonymous>:line:column)`. */
const FRAME = /([^\s(),]+), <anonymous>:(\d+):(\d+)/g;
const TEXT_LIMIT = 4 * 1024;

/**
 * Turns an error thrown by the script (or a sub-workflow) into a run error whose positions
 * are those of the files as written, keeping only the stack frames that lie in them.
 */
export function scriptRunError(failure: ScriptFailure): RunError {
  let where: { file: string; line: number; column: number } | undefined;
  const frames: string[] = [];
  for (const raw of failure.stack.split("\n")) {
    const mapped = raw.replace(FRAME, (_all, file: string, l: string, c: string) => {
      const line = Number(l) - HEADER_LINES;
      const column = line === 1 ? Math.max(1, Number(c) - STRICT_PREFIX) : Number(c);
      where ??= { file, line, column };
      return `${file}:${line}:${column}`;
    });
    if (mapped !== raw) frames.push(mapped.trim());
  }
  const label = failure.name === "Thrown" ? "uncaught exception" : failure.name;
  const message = failure.message.length > TEXT_LIMIT
    ? `${failure.message.slice(0, TEXT_LIMIT)}…`
    : failure.message;
  const at = where ? ` (${where.file}:${where.line}:${where.column})` : "";
  const error: RunError = { code: "script_error", message: `${label}: ${message}${at}` };
  if (where) Object.assign(error, where);
  if (frames.length > 0) error.stack = frames.slice(0, 20).join("\n");
  return error;
}

import type { ScriptFailure } from "./guest_session.ts";
import type { RunError } from "../ledger/mod.ts";

/** Lines the AsyncFunction constructor puts before the body. */
const HEADER_LINES = 2;
/** Length of the `"use strict";` the guest puts at the start of the body's first line. */
const STRICT_PREFIX = '"use strict";'.length;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Turns an error thrown by the script into a run error whose positions are those of the
 * script file, keeping only the stack frames that lie in the script.
 */
export function scriptRunError(failure: ScriptFailure, filename: string): RunError {
  const frame = new RegExp(`${escapeRegExp(filename)}, <anonymous>:(\\d+):(\\d+)`, "g");
  let line: number | undefined;
  let column: number | undefined;
  const frames: string[] = [];
  for (const raw of failure.stack.split("\n")) {
    const mapped = raw.replace(frame, (_all, l: string, c: string) => {
      const fileLine = Number(l) - HEADER_LINES;
      const fileColumn = fileLine === 1 ? Math.max(1, Number(c) - STRICT_PREFIX) : Number(c);
      if (line === undefined) {
        line = fileLine;
        column = fileColumn;
      }
      return `${filename}:${fileLine}:${fileColumn}`;
    });
    if (mapped !== raw) frames.push(mapped.trim());
  }
  const where = line !== undefined ? ` (${filename}:${line}:${column})` : "";
  const label = failure.name === "Thrown" ? "uncaught exception" : failure.name;
  const error: RunError = { code: "script_error", message: `${label}: ${failure.message}${where}` };
  if (line !== undefined) {
    error.line = line;
    error.column = column;
  }
  if (frames.length > 0) error.stack = frames.join("\n");
  return error;
}

/**
 * The one answer to an id the caller cannot see: not found, whether it does not exist or is
 * another owner's, so that an id says nothing about other owners' work.
 * @module
 */
import { SvcError } from "../errors/mod.ts";

/** The not-found error of a run, task, session or card id the caller cannot see. */
export function noSuch(kind: "run" | "task" | "session" | "card", id: string): SvcError {
  const shown = JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}...` : id);
  return new SvcError("not_found", `Cannot find ${kind} ${shown}: no such ${kind}`);
}

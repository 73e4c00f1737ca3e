import { SvcError } from "../errors/mod.ts";
import { shownId } from "../ledger/mod.ts";

/** What {@linkcode requireVisible} names when the record is missing. */
export interface VisibleTarget {
  /** The record's kind. */
  kind: "run" | "task";
  /** The id asked for (shown bounded). */
  id: string;
  /** What the caller tried, as in "Cannot <action> run 'r-…'". */
  action: string;
}

/**
 * The record a caller asked for, or `not_found` naming it: an unknown id and a record of
 * another owner get the same answer, so that no caller learns which ids exist.
 */
export function requireVisible<T>(found: T | undefined, target: VisibleTarget): T {
  if (found !== undefined) return found;
  const { kind, id, action } = target;
  throw new SvcError("not_found", `Cannot ${action} ${kind} '${shownId(id)}': no such ${kind}`);
}

import { SvcError } from "../errors/mod.ts";
import type { CallRecord } from "./records.ts";
import { isId, shownId } from "./ids.ts";

/**
 * Checks the `before` cursor of a listing of runs, tasks or sessions: an id of that kind (it
 * need not name a record: ids sort by creation time, so any id is a position). Anything else is
 * refused before it reaches a key.
 */
export function checkBefore(prefix: "run" | "task" | "ses", before: string, what: string): string {
  if (isId(prefix, before)) return before;
  throw new SvcError(
    "invalid_request",
    `Cannot list ${what}: 'before' ${JSON.stringify(shownId(before))} is not a ${prefix}_ id`,
  );
}

/** When a call ended, as the ledger stamps it: `toISOString()` of a date between years 0 and 9999. */
const CALL_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** Highest `seq` of a call in the call log: a run's calls are far fewer. */
const CALL_SEQ_LIMIT = 1_000_000_000;

/**
 * The cursor of a call in the call log, for `listCalls({ before })`: the call's place in the
 * log (`<at>~<id>~<seq>`), since calls have no id of their own. The call log is newest first,
 * so the cursor of a page's last call fetches the next page.
 */
export function callCursor(call: Pick<CallRecord, "at" | "id" | "seq">): string {
  return `${call.at}~${call.id}~${call.seq}`;
}

/** The key parts of a call cursor made by {@linkcode callCursor}; anything else is refused. */
export function parseCallCursor(before: string): [at: string, id: string, seq: number] {
  const [at, id, seq, ...rest] = before.split("~");
  const n = Number(seq);
  if (
    rest.length === 0 && at !== undefined && CALL_AT.test(at) && id !== undefined &&
    (isId("run", id) || isId("task", id)) && seq !== undefined && /^[0-9]{1,10}$/.test(seq) &&
    n <= CALL_SEQ_LIMIT
  ) {
    return [at, id, n];
  }
  throw new SvcError(
    "invalid_request",
    `Cannot list calls: 'before' ${
      JSON.stringify(shownId(before))
    } is not a call cursor (<at>~<run or task id>~<seq>)`,
  );
}

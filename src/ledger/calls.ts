import { fromBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";
import { parseCallCursor } from "./cursor.ts";
import type { LedgerContext } from "./context.ts";
import type { CallLedger, ListOptions } from "./interface.ts";
import type { CallRecord } from "./records.ts";

/** The call log (runs' calls and tasks), newest first; older than the `before` cursor when given. */
async function listCalls(ctx: LedgerContext, options: ListOptions = {}): Promise<CallRecord[]> {
  const out: CallRecord[] = [];
  const limit = options.limit ?? 1000;
  const end = options.before === undefined
    ? {}
    : { end: [...KEYS.calls, ...parseCallCursor(options.before)] };
  for await (const entry of ctx.kv.list(KEYS.calls, { reverse: true, ...end })) {
    if (!entry.value) continue;
    const call = fromBytes<CallRecord>(entry.value);
    if (options.owner !== undefined && call.owner !== options.owner) continue;
    out.push(call);
    if (out.length >= limit) break;
  }
  return out;
}

/** The call log of a ledger's context. */
export function callLedger(ctx: LedgerContext): CallLedger {
  return { listCalls: (options) => listCalls(ctx, options) };
}

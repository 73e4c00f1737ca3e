import { fromBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";
import { eventsPrefix, type LedgerContext, streamKey } from "./context.ts";
import type { FeedLedger } from "./interface.ts";
import type { ActivityItem, EventStream, FeedItem, RunEvent, TaskEvent } from "./records.ts";

/** Options of a wait for a stream to pass `after`. */
type WaitOptions = { after: number; signal?: AbortSignal; timeoutMs?: number };

/** Events of a stream after `after`: from memory when this process wrote them last, else the store. */
async function readEvents(
  ctx: LedgerContext,
  stream: EventStream,
  options: { after?: number; limit?: number } = {},
): Promise<FeedItem[]> {
  const out: FeedItem[] = [];
  const after = options.after ?? -1;
  const limit = options.limit ?? Infinity;
  const known = ctx.heads.get(streamKey(stream));
  // What this process wrote last of the stream is still in memory: no read of the store.
  if (known && after < known.head && after >= known.head - known.tail.length) {
    const first = known.head - known.tail.length + 1;
    for (let seq = after + 1; seq <= known.head && out.length < limit; seq++) {
      const bytes = known.tail[seq - first];
      if (bytes) out.push({ seq, event: fromBytes<RunEvent | TaskEvent>(bytes) });
    }
    return out;
  }
  const prefix = eventsPrefix(stream);
  for await (const entry of ctx.kv.list(prefix, { start: [...prefix, after + 1] })) {
    const seq = entry.key.at(-1);
    if (typeof seq !== "number" || seq <= after || !entry.value) continue;
    out.push({ seq, event: fromBytes<RunEvent | TaskEvent>(entry.value) });
    if (out.length >= limit) break;
  }
  return out;
}

/** Items of an owner's activity stream after `after`, in order. */
async function readActivity(
  ctx: LedgerContext,
  owner: string,
  options: { after?: number; limit?: number } = {},
): Promise<ActivityItem[]> {
  const out: ActivityItem[] = [];
  const after = options.after ?? -1;
  const limit = options.limit ?? Infinity;
  const prefix = KEYS.activity(owner);
  for await (const entry of ctx.kv.list(prefix, { start: [...prefix, after + 1] })) {
    const seq = entry.key.at(-1);
    if (typeof seq !== "number" || seq <= after || !entry.value) continue;
    out.push({ ...fromBytes<ActivityItem>(entry.value), seq });
    if (out.length >= limit) break;
  }
  return out;
}

/** The feeds of runs and tasks, and the owners' activity streams, of a ledger's context. */
export function feedLedger(ctx: LedgerContext): FeedLedger {
  return {
    readEvents: (stream, options) => readEvents(ctx, stream, options),
    waitForEvents: (stream, options: WaitOptions) => ctx.notifier.wait(stream, options),
    readActivity: (owner, options) => readActivity(ctx, owner, options),
    activityHead: (owner) => ctx.headOf({ kind: "activity", id: owner }),
    waitForActivity: (owner, options: WaitOptions) =>
      ctx.notifier.wait({ kind: "activity", id: owner }, options),
  };
}

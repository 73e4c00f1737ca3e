import { fromBytes, toBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";
import type { LedgerContext } from "./context.ts";
import { countActiveRuns } from "./active_runs.ts";
import type { HostRef, QueueItem, QueueLedger } from "./interface.ts";

/** Queued runs and tasks no worker has claimed yet, oldest first. */
async function listQueue(
  ctx: LedgerContext,
  options: { limit?: number; kind?: "run" | "task" } = {},
): Promise<QueueItem[]> {
  const limit = options.limit ?? 100;
  const out: QueueItem[] = [];
  for (const kind of options.kind ? [options.kind] : ["run", "task"] as const) {
    for await (const entry of ctx.kv.list(KEYS.queue(kind), { limit })) {
      const id = entry.key.at(-1);
      if (typeof id !== "string" || !entry.value) continue;
      const doc = fromBytes<{ owner: string; at: string; provider?: string }>(entry.value);
      out.push({
        kind,
        id,
        owner: doc.owner,
        queued_at: doc.at,
        ...(doc.provider ? { provider: doc.provider } : {}),
      });
    }
  }
  // Oldest first across both kinds: ids sort by creation time after their prefix.
  out.sort((a, b) => a.id.slice(a.kind.length).localeCompare(b.id.slice(b.kind.length)));
  return out.slice(0, limit);
}

/** Takes a queued run off the queue for `host`, atomically; false when it is not queued. */
async function claimRun(ctx: LedgerContext, runId: string, host: HostRef): Promise<boolean> {
  const queued = await ctx.kv.get(KEYS.queue("run", runId));
  if (!queued.value) return false;
  // The active entry names the owner, so that counting an owner's active runs reads no more.
  const queuedOwner = fromBytes<{ owner: string }>(queued.value).owner;
  return (await ctx.kv.atomic()
    .check(KEYS.queue("run", runId), queued.versionstamp)
    .check(KEYS.active(runId), null)
    .delete(KEYS.queue("run", runId))
    .set(KEYS.active(runId), toBytes({ host_id: host.id, pid: host.pid, owner: queuedOwner }))
    .commit()).ok;
}

/** The queue of a ledger's context. */
export function queueLedger(ctx: LedgerContext): QueueLedger {
  return {
    listQueue: (options) => listQueue(ctx, options),
    claimRun: (runId, host) => claimRun(ctx, runId, host),
    countActiveRuns: (owner) => countActiveRuns(ctx, owner),
  };
}

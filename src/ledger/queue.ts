import { fromBytes, toBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";
import type { LedgerContext } from "./context.ts";
import { countActiveRuns } from "./active_runs.ts";
import { countOwnerLive, OWNER_LIVE_ATTEMPTS, readOwnerLive, takeOwnerLive } from "./owner_live.ts";
import type { ClaimOutcome, HostRef, QueueItem, QueueLedger } from "./interface.ts";

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

/**
 * Takes a queued run off the queue for `host`, atomically, with its owner's live slot
 * (src/ledger/owner_live.ts): `not_queued` when it is not queued, `owner_full` when `ownerCap`
 * is given and the owner holds that many live runs on any host.
 */
async function claimRun(
  ctx: LedgerContext,
  runId: string,
  host: HostRef,
  options: { ownerCap?: number } = {},
): Promise<ClaimOutcome> {
  for (let attempt = 1;; attempt++) {
    const queued = await ctx.kv.get(KEYS.queue("run", runId));
    if (!queued.value) return "not_queued";
    // The active entry names the owner, so that counting an owner's active runs reads no more.
    const owner = fromBytes<{ owner: string }>(queued.value).owner;
    const gate = options.ownerCap === undefined ? undefined : await readOwnerLive(ctx, owner);
    if (gate && gate.count >= options.ownerCap!) return "owner_full";
    const atomic = ctx.kv.atomic()
      .check(KEYS.queue("run", runId), queued.versionstamp)
      .check(KEYS.active(runId), null)
      .delete(KEYS.queue("run", runId))
      .set(KEYS.active(runId), toBytes({ host_id: host.id, pid: host.pid, owner }));
    takeOwnerLive(atomic, { owner, runId, host, gate });
    if ((await atomic.commit()).ok) return "claimed";
    // Another worker claimed it (the next look finds it gone), or another host took a slot.
    if (gate === undefined) return "not_queued";
    if (attempt >= OWNER_LIVE_ATTEMPTS) return "owner_full";
  }
}

/** The queue of a ledger's context. */
export function queueLedger(ctx: LedgerContext): QueueLedger {
  return {
    listQueue: (options) => listQueue(ctx, options),
    claimRun: (runId, host, options) => claimRun(ctx, runId, host, options),
    countActiveRuns: (owner) => countActiveRuns(ctx, owner),
    countOwnerLive: (owner) => countOwnerLive(ctx, owner),
  };
}

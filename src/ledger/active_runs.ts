import { fromBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";
import type { LedgerContext } from "./context.ts";
import type { ActiveRunCounts } from "./interface.ts";

/** Owner-index reads made at once for active entries that do not name their owner. */
const INDEX_READ_BATCH = 64;

/**
 * How many runs wait in the queue and how many hosts have taken, of `owner` (everyone's
 * without it). It lists the queue and the active runs, whose entries name their owner, and never
 * reads a run's document, so that a status read of a host with hundreds of live runs does not
 * decode hundreds of documents. An active entry written before entries named their owner is
 * looked up in the owner's index.
 */
export async function countActiveRuns(
  ctx: LedgerContext,
  owner?: string,
): Promise<ActiveRunCounts> {
  let queued = 0;
  for await (const entry of ctx.kv.list(KEYS.queue("run"))) {
    if (!entry.value) continue;
    if (owner === undefined || fromBytes<{ owner: string }>(entry.value).owner === owner) {
      queued++;
    }
  }
  let running = 0;
  const unnamed: string[] = [];
  for await (const entry of ctx.kv.list(KEYS.active())) {
    const runId = entry.key.at(-1);
    if (typeof runId !== "string" || !entry.value) continue;
    const named = fromBytes<{ owner?: string }>(entry.value).owner;
    if (owner === undefined || named === owner) running++;
    else if (named === undefined) unnamed.push(runId);
  }
  if (owner === undefined) return { queued, running };
  for (let i = 0; i < unnamed.length; i += INDEX_READ_BATCH) {
    const found = await Promise.all(
      unnamed.slice(i, i + INDEX_READ_BATCH).map((runId) =>
        ctx.kv.get(KEYS.runsByOwner(owner, runId))
      ),
    );
    running += found.filter((entry) => entry.value !== null).length;
  }
  return { queued, running };
}

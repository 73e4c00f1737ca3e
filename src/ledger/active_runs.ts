import { fromBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";
import type { LedgerContext } from "./context.ts";
import type { ActiveRunCounts } from "./interface.ts";

/** Owner-index reads made at once while counting an owner's runs taken by hosts. */
const INDEX_READ_BATCH = 64;

/**
 * How many runs wait in the queue and how many hosts have taken, of `owner` (everyone's
 * without it). It reads the queue (each entry names its owner) and the keys of the active runs,
 * and for an owner one small index entry per active run: never a run's document, so that a
 * status read of a host with hundreds of live runs does not decode hundreds of documents.
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
  const taken: string[] = [];
  for await (const entry of ctx.kv.list(KEYS.active())) {
    const runId = entry.key.at(-1);
    if (typeof runId === "string") taken.push(runId);
  }
  if (owner === undefined) return { queued, running: taken.length };
  let running = 0;
  for (let i = 0; i < taken.length; i += INDEX_READ_BATCH) {
    const found = await Promise.all(
      taken.slice(i, i + INDEX_READ_BATCH).map((runId) =>
        ctx.kv.get(KEYS.runsByOwner(owner, runId))
      ),
    );
    running += found.filter((entry) => entry.value !== null).length;
  }
  return { queued, running };
}

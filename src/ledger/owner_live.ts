/**
 * The live runs and dispatch tasks of each owner, every host's: the counts
 * `admission.owner_live_runs` and `admission.owner_live_tasks` cap. A run
 * takes its owner's slot in the very commit that records it as taken by a host (its `active`
 * entry: a run started at once, or a queued run claimed), and gives it back in the commit that
 * ends it or marks it `interrupted`, so a slot lives exactly as long as the run's `active`
 * entry. A host that dies leaves its runs' slots to whoever recovers its runs; none leaks. A
 * task takes its slot with its record (queued or about to run) and gives it back with its end.
 *
 * A capped take reads the owner's head, then counts the owner's slots, and commits only if the
 * head is unchanged: every take rewrites the head, so of two hosts taking the last slot at once
 * one commit fails and counts again. A give-back leaves the head alone (it only lowers the
 * count, which a take counting too many refuses at worst, and then queues).
 * @module
 */
import type { KvAtomic } from "../platform/mod.ts";
import { toBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";
import type { LedgerContext } from "./context.ts";
import type { HostRef } from "./interface.ts";

/** Attempts of a capped take while other hosts take the owner's slots too. */
export const OWNER_LIVE_ATTEMPTS = 32;

/** What is counted: an owner's live runs, or its live dispatch tasks. */
export type SlotKind = "run" | "task";

/** The keys of an owner's slots of `kind`, and of their head. */
function keysOf(kind: SlotKind) {
  return kind === "run"
    ? { slot: KEYS.ownerLive, head: KEYS.ownerLiveHead }
    : { slot: KEYS.ownerTasks, head: KEYS.ownerTasksHead };
}

/** What a capped take checks: the head as read, and the slots counted after it. */
export interface OwnerLiveGate {
  /** The owner's head, as read before counting. */
  stamp: string | null;
  /** The owner's live runs, every host's. */
  count: number;
}

/** How many live runs (or, with `kind` task, tasks) `owner` has, every host's. */
export async function countOwnerLive(
  ctx: LedgerContext,
  owner: string,
  kind: SlotKind = "run",
): Promise<number> {
  let count = 0;
  for await (const _ of ctx.kv.list(keysOf(kind).slot(owner))) count++;
  return count;
}

/** Reads the owner's head, then counts its slots: in this order, so a later take shows. */
export async function readOwnerLive(
  ctx: LedgerContext,
  owner: string,
  kind: SlotKind = "run",
): Promise<OwnerLiveGate> {
  const head = await ctx.kv.get(keysOf(kind).head(owner));
  return { stamp: head.versionstamp, count: await countOwnerLive(ctx, owner, kind) };
}

/**
 * Adds the take of `owner`'s slot for `runId` by `host` to a commit: checked against `gate`
 * when the take is capped (it fails when another take came in between), unchecked otherwise.
 */
export function takeOwnerLive(
  atomic: KvAtomic,
  take: { owner: string; runId: string; host: HostRef; gate?: OwnerLiveGate; kind?: SlotKind },
): void {
  const keys = keysOf(take.kind ?? "run");
  const head = keys.head(take.owner);
  if (take.gate) atomic.check(head, take.gate.stamp);
  atomic
    .set(head, toBytes({}))
    .set(keys.slot(take.owner, take.runId), toBytes({ host_id: take.host.id }));
}

/** Adds the give-back of `owner`'s slot for `id` (a run, or a task) to a commit: it ended. */
export function giveOwnerLive(
  atomic: KvAtomic,
  owner: string,
  id: string,
  kind: SlotKind = "run",
): void {
  atomic.delete(keysOf(kind).slot(owner, id));
}

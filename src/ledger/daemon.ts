/**
 * The daemon's records in the ledger, as functions over the KV store that the KV ledger
 * delegates to: leases (which daemon leads the scheduler), automations and the last slot each
 * fired, and webhook deliveries (so that a repeated delivery does nothing twice).
 *
 * | key | value |
 * |---|---|
 * | `["leases", name]` | `{holder, expires_at}`: held until it expires or is released |
 * | `["automations", automation_id]` | an automation made through the API |
 * | `["automation_slots", automation_id]` | `{slot, at, item}`: the last slot that fired |
 * | `["automation_counts", owner]` | `{count}`: how many automations made through the API the owner has |
 * | `["automation_total"]` | `{count}`: how many automations made through the API there are |
 * | `["automation_names", owner, name]` | `{automation_id}`: keeps a name unique per owner |
 * | `["webhook_deliveries", hook, replay_key]` | a delivery and what it started, for the hook's replay window |
 * | `["webhook_delivery_times", hook, received_ms, replay_key]` | `{}`: finds the records past the window |
 * @module
 */
import type { JsonValue } from "../schemas/mod.ts";
import type { KvKey, KvStore } from "../platform/mod.ts";
import { fitRecord } from "./fit.ts";
import { fromBytes, toBytes } from "./json_bytes.ts";

/** Who holds a lease, until when. */
export interface LeaseState {
  /** Whether the asker holds it now. */
  held: boolean;
  /** Its holder (the asker's id when `held`), or null when nobody holds it. */
  holder: string | null;
  /** When the holder's hold ends unless renewed (ISO 8601), or null. */
  expires_at: string | null;
}

/** What an automation does when it fires: start a named workflow, or dispatch a prompt. */
export type AutomationAction =
  | { workflow: string; args?: JsonValue; fake_dispatch?: boolean }
  | { dispatch: Record<string, JsonValue> };

/** A named workflow or dispatch on a cron schedule. */
export interface AutomationRecord {
  /** `aut_...` for one made through the API; `config.<name>` for one of the configuration file. */
  automation_id: string;
  /** Its name, for people. */
  name: string;
  /** Whose work it starts: only its owner sees it. */
  owner: string;
  /** The cron expression (five or six fields). */
  cron: string;
  /** The time zone the expression is read in (IANA name); UTC when absent. */
  timezone?: string;
  /** What firing does. */
  action: AutomationAction;
  /** Where it was defined: the configuration file, or the API. */
  source: "config" | "api";
  /**
   * Made by a remote caller (dashboard API, MCP, A2A): every firing starts its work as that
   * caller's, so the workspace policy and the owner's caps apply again each time.
   */
  remote?: boolean;
  /** When it was made (ISO 8601). */
  created_at: string;
}

/** The last slot an automation fired, and what that started. */
export interface FiredSlot {
  /** The slot (ISO 8601): the time the schedule named, not when it ran. */
  slot: string;
  /** When it fired (ISO 8601). */
  at: string;
  /**
   * The run or task it started, or the error that stopped it. With `skipped`, the slot started
   * nothing (why), and the run or task named is the earlier one that was still queued or running.
   */
  item:
    | { run_id: string; skipped?: string }
    | { task_id: string; skipped?: string }
    | { error: string };
}

/** One webhook delivery, as received and handled. */
export interface WebhookDelivery {
  /** The hook's name (from the configuration). */
  hook: string;
  /** The sender's delivery id (`X-GitHub-Delivery` or `webhook-id`). */
  delivery_id: string;
  /**
   * What the record is kept under: what the signature covers (a digest of a GitHub-style
   * signature and body; a Standard Webhooks `webhook-id`). Absent in older records, which are
   * kept under `delivery_id`.
   */
  replay_key?: string;
  /** The hook's owner, who owns what the delivery started. */
  owner: string;
  /** When it was received (ISO 8601). */
  received_at: string;
  /** `accepted` once what it starts is queued; `failed` when that was refused. */
  outcome: "received" | "accepted" | "failed";
  /** The run it started. */
  run_id?: string;
  /** The task it started. */
  task_id?: string;
  /** Why starting failed. */
  error?: { code: string; message: string };
}

const LEASES: KvKey = ["leases"];
const AUTOMATIONS: KvKey = ["automations"];
const SLOTS: KvKey = ["automation_slots"];
const COUNTS: KvKey = ["automation_counts"];
const TOTAL: KvKey = ["automation_total"];
const NAMES: KvKey = ["automation_names"];
/**
 * Commits tried before a save or delete gives up. Every failed check means another commit on the
 * same counters won, so each round makes progress; this only bounds a pathological pile-up.
 */
const COUNT_ATTEMPTS = 200;
const DELIVERIES: KvKey = ["webhook_deliveries"];
const DELIVERY_TIMES: KvKey = ["webhook_delivery_times"];
/** Expired replay records removed per claim: bounds a claim's work, and still outpaces arrivals. */
const PRUNE_BATCH = 16;

/**
 * Takes or renews the lease `name` for `holder` for `ttlMs`: granted when nobody holds it, its
 * hold has expired, or `holder` holds it already. One atomic check, so that two askers never
 * both hold it.
 */
export async function acquireLease(
  kv: KvStore,
  name: string,
  options: { holder: string; ttlMs: number },
): Promise<LeaseState> {
  const key = [...LEASES, name];
  const current = await kv.get(key);
  const doc = current.value
    ? fromBytes<{ holder: string; expires_at: string }>(current.value)
    : undefined;
  const nowMs = Date.now();
  if (doc && doc.holder !== options.holder && Date.parse(doc.expires_at) > nowMs) {
    return { held: false, holder: doc.holder, expires_at: doc.expires_at };
  }
  const next = {
    holder: options.holder,
    expires_at: new Date(nowMs + options.ttlMs).toISOString(),
  };
  const ok = (await kv.atomic().check(key, current.versionstamp).set(key, toBytes(next)).commit())
    .ok;
  if (ok) return { held: true, ...next };
  const after = await kv.get(key);
  const won = after.value ? fromBytes<{ holder: string; expires_at: string }>(after.value) : null;
  return { held: false, holder: won?.holder ?? null, expires_at: won?.expires_at ?? null };
}

/** Who holds a lease now (`held` is always false: nobody asked). */
export async function readLease(kv: KvStore, name: string): Promise<LeaseState> {
  const entry = await kv.get([...LEASES, name]);
  const doc = entry.value
    ? fromBytes<{ holder: string; expires_at: string }>(entry.value)
    : undefined;
  if (!doc || Date.parse(doc.expires_at) <= Date.now()) {
    return { held: false, holder: null, expires_at: null };
  }
  return { held: false, holder: doc.holder, expires_at: doc.expires_at };
}

/** Gives the lease up, if `holder` holds it. */
export async function releaseLease(kv: KvStore, name: string, holder: string): Promise<void> {
  const key = [...LEASES, name];
  const current = await kv.get(key);
  if (!current.value || fromBytes<{ holder: string }>(current.value).holder !== holder) return;
  await kv.atomic().check(key, current.versionstamp).delete(key).commit();
}

/** The quotas an automation made through the API is saved under. */
export interface AutomationQuota {
  /** Most automations one owner may have. */
  perOwner: number;
  /** Most automations of every owner together. */
  total: number;
}

/** Why an automation was not saved: a quota is reached, or the owner has one of that name. */
export type AutomationRefusal =
  | { reason: "owner" | "total"; count: number; limit: number }
  | { reason: "name" };

/** A counter's value and the versionstamp a commit checks it against. */
interface Count {
  key: KvKey;
  count: number;
  versionstamp: string | null;
}

/**
 * Reads a counter. One that was never written (automations saved before counters existed) is
 * counted from the records once; from then on every save and delete updates it in its commit.
 */
async function readCount(kv: KvStore, key: KvKey, owner?: string): Promise<Count> {
  const entry = await kv.get(key);
  if (entry.value) {
    return {
      key,
      count: fromBytes<{ count: number }>(entry.value).count,
      versionstamp: entry.versionstamp,
    };
  }
  const records = await listAutomations(kv);
  const count = records.filter((r) => owner === undefined || r.owner === owner).length;
  return { key, count, versionstamp: null };
}

/**
 * Saves an automation made through the API, unless its owner has `quota.perOwner` already, there
 * are `quota.total` in all, or the owner has one of the same name: then saves nothing and says
 * why. The record, its name and both counters are written in one atomic commit that checks the
 * counters did not change since they were read (retried when they did), so parallel saves never
 * pass a quota together. Without `quota`, only the name is checked.
 */
export async function saveAutomation(
  kv: KvStore,
  record: AutomationRecord,
  quota?: AutomationQuota,
): Promise<AutomationRefusal | undefined> {
  const nameKey = [...NAMES, record.owner, record.name];
  for (let attempt = 0; attempt < COUNT_ATTEMPTS; attempt++) {
    const mine = await readCount(kv, [...COUNTS, record.owner], record.owner);
    const all = await readCount(kv, TOTAL);
    if (quota && mine.count >= quota.perOwner) {
      return { reason: "owner", count: mine.count, limit: quota.perOwner };
    }
    if (quota && all.count >= quota.total) {
      return { reason: "total", count: all.count, limit: quota.total };
    }
    const name = await kv.get(nameKey);
    if (name.value) return { reason: "name" };
    const ok = (await kv.atomic()
      .check(mine.key, mine.versionstamp)
      .check(all.key, all.versionstamp)
      .check(nameKey, null)
      .set(mine.key, toBytes({ count: mine.count + 1 }))
      .set(all.key, toBytes({ count: all.count + 1 }))
      .set(nameKey, toBytes({ automation_id: record.automation_id }))
      .set([...AUTOMATIONS, record.automation_id], fitRecord(record).bytes)
      .commit()).ok;
    if (ok) return undefined;
  }
  throw new Error("the automation counters stayed contended");
}

/** The automations made through the API, oldest first. */
export async function listAutomations(kv: KvStore): Promise<AutomationRecord[]> {
  const out: AutomationRecord[] = [];
  for await (const entry of kv.list(AUTOMATIONS)) {
    if (entry.value) out.push(fromBytes<AutomationRecord>(entry.value));
  }
  return out;
}

/**
 * Deletes an automation, its last slot and its name, and counts it off its owner's and the total
 * quota, in one atomic commit (retried when a counter changed meanwhile); false when there was none.
 */
export async function deleteAutomation(kv: KvStore, automationId: string): Promise<boolean> {
  const key = [...AUTOMATIONS, automationId];
  for (let attempt = 0; attempt < COUNT_ATTEMPTS; attempt++) {
    const current = await kv.get(key);
    if (!current.value) return false;
    const record = fromBytes<AutomationRecord>(current.value);
    const mine = await readCount(kv, [...COUNTS, record.owner], record.owner);
    const all = await readCount(kv, TOTAL);
    const ok = (await kv.atomic()
      .check(key, current.versionstamp)
      .check(mine.key, mine.versionstamp)
      .check(all.key, all.versionstamp)
      .set(mine.key, toBytes({ count: Math.max(0, mine.count - 1) }))
      .set(all.key, toBytes({ count: Math.max(0, all.count - 1) }))
      .delete(key)
      .delete([...SLOTS, automationId])
      .delete([...NAMES, record.owner, record.name])
      .commit()).ok;
    if (ok) return true;
  }
  throw new Error("the automation counters stayed contended");
}

/** The last slot an automation fired, or undefined. */
export async function lastSlot(kv: KvStore, automationId: string): Promise<FiredSlot | undefined> {
  const entry = await kv.get([...SLOTS, automationId]);
  return entry.value ? fromBytes<FiredSlot>(entry.value) : undefined;
}

/**
 * Records that an automation fires `slot`: only when it is later than the last slot recorded,
 * checked and written in one atomic commit, so that a slot fires once across every daemon
 * however their clocks and leases overlap. Returns whether this caller may fire it.
 */
export async function claimSlot(
  kv: KvStore,
  automationId: string,
  slot: string,
): Promise<boolean> {
  const key = [...SLOTS, automationId];
  const current = await kv.get(key);
  const last = current.value ? fromBytes<FiredSlot>(current.value) : undefined;
  if (last && Date.parse(last.slot) >= Date.parse(slot)) return false;
  const claimed: FiredSlot = { slot, at: new Date().toISOString(), item: { error: "starting" } };
  return (await kv.atomic().check(key, current.versionstamp).set(key, toBytes(claimed)).commit())
    .ok;
}

/** Records what a claimed slot started (or why it did not). */
export async function saveSlot(kv: KvStore, automationId: string, fired: FiredSlot): Promise<void> {
  const key = [...SLOTS, automationId];
  const current = await kv.get(key);
  if (current.value && fromBytes<FiredSlot>(current.value).slot !== fired.slot) return;
  await kv.atomic().check(key, current.versionstamp).set(key, fitRecord(fired).bytes).commit();
}

/**
 * Records a new delivery, unless one with its replay key was recorded for this hook within the
 * last `windowMs` (a record older than that is replaced): then returns the delivery recorded
 * first, and records nothing. Removes a few records past the window on the way.
 */
export async function claimDelivery(
  kv: KvStore,
  delivery: WebhookDelivery,
  options: { windowMs: number },
): Promise<WebhookDelivery | undefined> {
  const key = deliveryKey(delivery);
  const receivedMs = Date.parse(delivery.received_at);
  const cutoffMs = receivedMs - options.windowMs;
  await pruneDeliveries(kv, delivery.hook, cutoffMs);
  // A failed commit means another claim wrote the key meanwhile: read it again to answer it.
  for (let attempt = 0; attempt < 4; attempt++) {
    const current = await kv.get(key);
    const seen = current.value ? fromBytes<WebhookDelivery>(current.value) : undefined;
    if (seen && Date.parse(seen.received_at) > cutoffMs) return seen;
    const ok = (await kv.atomic()
      .check(key, current.versionstamp)
      .set(key, fitRecord(delivery).bytes)
      .set([...DELIVERY_TIMES, delivery.hook, receivedMs, replayKeyOf(delivery)], toBytes({}))
      .commit()).ok;
    if (ok) return undefined;
  }
  // Still contended after four reads: answering "duplicate" never starts work twice.
  return delivery;
}

/**
 * Deletes up to PRUNE_BATCH of a hook's replay records received at or before `cutoffMs`; a
 * record claimed again since (its time index entry is stale) keeps its newer claim.
 */
async function pruneDeliveries(kv: KvStore, hook: string, cutoffMs: number): Promise<void> {
  const stale = kv.list([...DELIVERY_TIMES, hook], {
    end: [...DELIVERY_TIMES, hook, cutoffMs + 1],
    limit: PRUNE_BATCH,
  });
  for await (const index of stale) {
    const key = [...DELIVERIES, hook, String(index.key[index.key.length - 1])];
    const entry = await kv.get(key);
    const record = entry.value ? fromBytes<WebhookDelivery>(entry.value) : undefined;
    const atomic = kv.atomic().delete(index.key);
    if (record && Date.parse(record.received_at) <= cutoffMs) {
      atomic.check(key, entry.versionstamp).delete(key);
    }
    await atomic.commit();
  }
}

function replayKeyOf(delivery: WebhookDelivery): string {
  return delivery.replay_key ?? delivery.delivery_id;
}

/** The key of a delivery, for the ledger to write it with its activity item. */
export function deliveryKey(delivery: WebhookDelivery): KvKey {
  return [...DELIVERIES, delivery.hook, replayKeyOf(delivery)];
}

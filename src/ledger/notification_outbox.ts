/**
 * The outbox of notifications and their outbound deliveries: every notification enters the
 * outbox in the commit that makes it (`planNotes()`, src/ledger/notifications.ts) and leaves it
 * once the daemon's deliverer has ended every delivery of it; each delivery (one per endpoint)
 * is kept with its attempts beside its notification, and goes with it.
 * @module
 */
import { clipText } from "./fit.ts";
import { fromBytes, toBytes } from "./json_bytes.ts";
import type { KvStore } from "../platform/mod.ts";
import { NOTE_KEYS, NOTIFICATION_LIMITS } from "./notifications.ts";

/** One outbound delivery of a notification to one configured endpoint, with its attempts. */
export interface NotificationDelivery {
  /** The notification's id (the `webhook-id` of every attempt). */
  notification_id: string;
  /** Its owner. */
  owner: string;
  /** Its position in the owner's stream. */
  seq: number;
  /** The endpoint's name in the configuration. */
  endpoint: string;
  /** `pending` while attempts remain, then `delivered` or `failed` (gave up). */
  status: "pending" | "delivered" | "failed";
  /** Attempts made. */
  attempts: number;
  /** When the next attempt is due (ISO 8601), while pending. */
  next_at?: string;
  /** The HTTP status of the last attempt, when it got one. */
  last_status?: number;
  /** Why the last attempt failed (clipped). */
  last_error?: string;
  /** When it was first tried and last tried (ISO 8601). */
  first_at: string;
  /** When it was last tried. */
  last_at?: string;
}

/** Notifications not yet handed over to delivery, every owner's, oldest position first per owner. */
export async function listOutbox(
  kv: KvStore,
  limit: number,
): Promise<{ owner: string; seq: number; at: string }[]> {
  const out: { owner: string; seq: number; at: string }[] = [];
  for await (const entry of kv.list(NOTE_KEYS.outbox(), { limit })) {
    const [, owner, seq] = entry.key;
    if (typeof owner !== "string" || typeof seq !== "number" || !entry.value) continue;
    out.push({ owner, seq, at: fromBytes<{ at: string }>(entry.value).at });
  }
  return out;
}

/** Takes a notification out of the outbox: every delivery of it has ended. */
export async function leaveOutbox(kv: KvStore, owner: string, seq: number): Promise<void> {
  await kv.atomic().delete(NOTE_KEYS.outbox(owner, seq)).commit();
}

/** The deliveries of a notification, by endpoint. */
export async function listDeliveries(
  kv: KvStore,
  owner: string,
  seq: number,
): Promise<NotificationDelivery[]> {
  const out: NotificationDelivery[] = [];
  for await (const entry of kv.list(NOTE_KEYS.deliveries(owner, seq), { limit: 64 })) {
    if (entry.value) out.push(fromBytes<NotificationDelivery>(entry.value));
  }
  return out;
}

/** Records a delivery after an attempt (its last error clipped), while its notification is kept. */
export async function saveDelivery(kv: KvStore, delivery: NotificationDelivery): Promise<void> {
  const stored: NotificationDelivery = {
    ...delivery,
    ...(delivery.last_error !== undefined
      ? { last_error: clipText(delivery.last_error, NOTIFICATION_LIMITS.error) }
      : {}),
  };
  const note = NOTE_KEYS.note(delivery.owner, delivery.seq);
  const kept = await kv.get(note);
  if (!kept.value) return;
  await kv.atomic().check(note, kept.versionstamp).set(
    NOTE_KEYS.deliveries(delivery.owner, delivery.seq, delivery.endpoint),
    toBytes(stored),
  ).commit();
}

/**
 * Notifications: what an owner should hear about (a run or task that ended badly, one that hit
 * a budget or a limit, a call waiting for a person), derived from the owner's activity stream.
 * A notification is written in the same commit as the activity item it comes from (see
 * `LedgerContext.commit`), keyed by that item's position: it is never missed and never doubled,
 * however many hosts share the ledger. Its read state is the absence of its unread mark.
 *
 * | key | value |
 * |---|---|
 * | `["notifications", owner, seq]` | the notification of the owner's activity item `seq` |
 * | `["notification_unread", owner, seq]` | `{}`: not yet read |
 * | `["notification_count", owner]` | `{count}`: how many the owner keeps |
 * | `["notification_outbox", owner, seq]` | `{at}`: not yet handed to the outbound deliverer |
 * | `["notification_deliveries", owner, seq, endpoint]` | one outbound delivery and its attempts (`notification_outbox.ts`) |
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import type { KvAtomic, KvKey, KvStore } from "../platform/mod.ts";
import { clipText, fitRecord } from "./fit.ts";
import { fromBytes, sha256, toBytes } from "./json_bytes.ts";
import type { ActivityItem } from "./records.ts";

/** What a notification is about. */
export type NotificationKind = "failed" | "limit" | "approval";

/** A notification of an owner. */
export interface NotificationRecord {
  /** Its id, `ntf_<owner digest>_<seq>`: unique across owners, the idempotency id of its deliveries. */
  id: string;
  /** The position of the activity item it comes from, in its owner's stream. */
  seq: number;
  /** Whose it is. */
  owner: string;
  /** When it happened (ISO 8601). */
  at: string;
  /** Ended badly (`failed`, `timeout`, `interrupted`), hit a budget or a limit, or waits for a person. */
  kind: NotificationKind;
  /** A run or a dispatch task. */
  subject: "run" | "task";
  /** The run, when the subject is a run. */
  run_id?: string;
  /** The task, when the subject is a task. */
  task_id?: string;
  /** The approval a person is asked for. */
  approval_id?: string;
  /** The state the run or task entered; `pending` for an approval. */
  state: string;
  /** The run's script name, when it has one. */
  name?: string;
  /** The error code of a run or task that did not succeed. */
  code?: string;
  /** The limit hit: a run condition (`BudgetExceeded`, ...) or an error code. */
  limit?: string;
  /** What happened, in words (bounded). */
  title: string;
}

/** A notification with its read state, as listed. */
export interface NotificationView extends NotificationRecord {
  /** Whether the owner marked it read. */
  read: boolean;
}

/** Bounds of notifications. */
export const NOTIFICATION_LIMITS = {
  /** Notifications one owner keeps: the oldest goes when a new one comes. */
  keep: 1000,
  /** Most notifications in one page. */
  page: 100,
  /** Most ids one mark-read names. */
  ids: 100,
  /** Characters of a title. */
  title: 300,
  /** Characters of a delivery's last error. */
  error: 500,
} as const;

/** The run conditions that are limits a person should hear about. */
const LIMIT_CONDITIONS = new Set(["BudgetExceeded", "AgentLimitExceeded", "LedgerLimitExceeded"]);
/** The error codes that are limits. */
const LIMIT_CODES = new Set(["rate_limited", "budget_exceeded"]);
/** The states of ending badly; a cancel is the person's own doing and no news to them. */
const BAD_STATES = new Set(["failed", "timeout", "interrupted"]);

/** Where notifications are kept. */
export const NOTE_KEYS = {
  note: (owner: string, seq?: number): KvKey =>
    seq === undefined ? ["notifications", owner] : ["notifications", owner, seq],
  unread: (owner: string, seq?: number): KvKey =>
    seq === undefined ? ["notification_unread", owner] : ["notification_unread", owner, seq],
  count: (owner: string): KvKey => ["notification_count", owner],
  outbox: (owner?: string, seq?: number): KvKey =>
    owner === undefined
      ? ["notification_outbox"]
      : seq === undefined
      ? ["notification_outbox", owner]
      : ["notification_outbox", owner, seq],
  deliveries: (owner: string, seq: number, endpoint?: string): KvKey =>
    endpoint === undefined
      ? ["notification_deliveries", owner, seq]
      : ["notification_deliveries", owner, seq, endpoint],
};

/** The id of an owner's notification `seq`: a digest of the owner keeps ids apart across owners. */
export function notificationId(owner: string, seq: number): string {
  return `ntf_${sha256(owner).slice(0, 12)}_${seq}`;
}

/** The seq an id names, when it is an id of this owner's; undefined for anything else. */
export function seqOfId(owner: string, id: string): number | undefined {
  const match = /^ntf_([0-9a-f]{12})_(\d{1,15})$/.exec(id);
  if (!match || match[1] !== sha256(owner).slice(0, 12)) return undefined;
  return Number(match[2]);
}

/** Which notification an activity item makes, if any: nothing for what went as asked. */
function kindOf(item: Omit<ActivityItem, "seq">): NotificationKind | undefined {
  if (item.kind === "approval") return item.state === "pending" ? "approval" : undefined;
  if (item.kind !== "run" && item.kind !== "task") return undefined;
  if (item.limit !== undefined) return "limit";
  return BAD_STATES.has(item.state) ? "failed" : undefined;
}

function titleOf(item: Omit<ActivityItem, "seq">, kind: NotificationKind): string {
  const what = item.kind === "approval"
    ? `${item.run_id ? `Run ${item.run_id}` : `Task ${item.task_id ?? "?"}`}`
    : `${item.kind === "run" ? "Run" : "Task"} ${item.id}${item.name ? ` (${item.name})` : ""}`;
  if (kind === "approval") return `${what} waits for approval of a full-sandbox call`;
  if (kind === "limit") return `${what} hit a limit (${item.limit}) and ended ${item.state}`;
  return `${what} ended ${item.state}${item.code ? `: ${item.code}` : ""}`;
}

/** The notification an owner's activity item at `seq` makes, or undefined. */
export function notificationOf(
  owner: string,
  seq: number,
  item: Omit<ActivityItem, "seq">,
): NotificationRecord | undefined {
  const kind = kindOf(item);
  if (kind === undefined) return undefined;
  const approval = item.kind === "approval";
  const runId = approval ? item.run_id : item.kind === "run" ? item.id : undefined;
  const taskId = approval ? item.task_id : item.kind === "task" ? item.id : undefined;
  return {
    id: notificationId(owner, seq),
    seq,
    owner,
    at: item.at,
    kind,
    subject: runId !== undefined ? "run" : "task",
    ...(runId !== undefined ? { run_id: runId } : {}),
    ...(taskId !== undefined ? { task_id: taskId } : {}),
    ...(approval ? { approval_id: item.id } : {}),
    state: item.state,
    ...(item.name ? { name: clipText(item.name, 128) } : {}),
    ...(item.code ? { code: clipText(item.code, 64) } : {}),
    ...(item.limit ? { limit: clipText(item.limit, 64) } : {}),
    title: clipText(titleOf(item, kind), NOTIFICATION_LIMITS.title),
  };
}

/** The limit a run's conditions or a run's or task's error code names, if any. */
export function limitOf(
  conditions: readonly { type: string }[],
  code?: string,
): string | undefined {
  const condition = conditions.find((c) => LIMIT_CONDITIONS.has(c.type));
  if (condition) return condition.type;
  return code !== undefined && LIMIT_CODES.has(code) ? code : undefined;
}

/**
 * What a commit appending `items` at `first`.. to `owner`'s activity stream also writes: their
 * notifications, unread and in the outbox, and the owner's count, dropping the oldest beyond
 * {@linkcode NOTIFICATION_LIMITS}.keep. Reads before the commit; the activity head's check
 * makes the reads hold (every writer of these keys appends to the same stream).
 */
export async function planNotes(
  kv: KvStore,
  owner: string,
  first: number,
  items: readonly Omit<ActivityItem, "seq">[],
): Promise<(atomic: KvAtomic) => void> {
  const notes = items.flatMap((item, index) => {
    const note = notificationOf(owner, first + index, item);
    return note ? [note] : [];
  });
  if (notes.length === 0) return () => {};
  const counted = await kv.get(NOTE_KEYS.count(owner));
  let count = counted.value ? fromBytes<{ count: number }>(counted.value).count : 0;
  const drop: number[] = [];
  const excess = count + notes.length - NOTIFICATION_LIMITS.keep;
  if (excess > 0) {
    for await (const entry of kv.list(NOTE_KEYS.note(owner), { limit: excess })) {
      const seq = entry.key.at(-1);
      if (typeof seq === "number") drop.push(seq);
    }
  }
  const gone = await Promise.all(drop.map((seq) => deliveryKeys(kv, owner, seq)));
  count += notes.length - drop.length;
  return (atomic) => {
    for (const note of notes) {
      atomic.set(NOTE_KEYS.note(owner, note.seq), fitRecord(note).bytes);
      atomic.set(NOTE_KEYS.unread(owner, note.seq), toBytes({}));
      atomic.set(NOTE_KEYS.outbox(owner, note.seq), toBytes({ at: note.at }));
    }
    for (const seq of drop) {
      atomic.delete(NOTE_KEYS.note(owner, seq));
      atomic.delete(NOTE_KEYS.unread(owner, seq));
      atomic.delete(NOTE_KEYS.outbox(owner, seq));
    }
    for (const key of gone.flat()) atomic.delete(key);
    atomic.set(NOTE_KEYS.count(owner), toBytes({ count }));
  };
}

async function deliveryKeys(kv: KvStore, owner: string, seq: number): Promise<KvKey[]> {
  const keys: KvKey[] = [];
  for await (const entry of kv.list(NOTE_KEYS.deliveries(owner, seq), { limit: 64 })) {
    keys.push(entry.key);
  }
  return keys;
}

/** Options of {@linkcode listNotifications}. */
export interface ListNotificationsOptions {
  /** Most returned, at most {@linkcode NOTIFICATION_LIMITS}.page. */
  limit: number;
  /** The id of the last notification of the previous page. */
  cursor?: string;
  /** Only unread ones. */
  unread?: boolean;
}

/** A page of an owner's notifications, newest first, with its unread count. */
export interface NotificationPage {
  /** The notifications. */
  items: NotificationView[];
  /** The cursor of the next page; null on the last. */
  next_cursor: string | null;
  /** How many of the owner's notifications are unread. */
  unread: number;
}

function badCursor(): SvcError {
  return new SvcError(
    "invalid_request",
    "Cannot list notifications: 'cursor' must be a notification id from a previous page",
  );
}

/** A page of an owner's notifications, newest first. */
export async function listNotifications(
  kv: KvStore,
  owner: string,
  options: ListNotificationsOptions,
): Promise<NotificationPage> {
  const limit = Math.max(1, Math.min(options.limit, NOTIFICATION_LIMITS.page));
  const end = options.cursor === undefined ? undefined : seqOfId(owner, options.cursor);
  if (options.cursor !== undefined && end === undefined) throw badCursor();
  const prefix = options.unread ? NOTE_KEYS.unread(owner) : NOTE_KEYS.note(owner);
  const seqs: number[] = [];
  let more = false;
  const list = kv.list(prefix, {
    reverse: true,
    limit: limit + 1,
    ...(end !== undefined ? { end: [...prefix, end] } : {}),
  });
  for await (const entry of list) {
    const seq = entry.key.at(-1);
    if (typeof seq !== "number") continue;
    if (seqs.length === limit) {
      more = true;
      break;
    }
    seqs.push(seq);
  }
  const [notes, unreadMarks] = await Promise.all([
    Promise.all(seqs.map((seq) => kv.get(NOTE_KEYS.note(owner, seq)))),
    Promise.all(seqs.map((seq) => kv.get(NOTE_KEYS.unread(owner, seq)))),
  ]);
  const items: NotificationView[] = [];
  notes.forEach((entry, index) => {
    if (entry.value) {
      items.push({
        ...fromBytes<NotificationRecord>(entry.value),
        read: !unreadMarks[index]?.value,
      });
    }
  });
  const last = items.at(-1);
  return {
    items,
    next_cursor: more && last ? last.id : null,
    unread: await unreadCount(kv, owner),
  };
}

/** How many of an owner's notifications are unread (at most the number kept). */
export async function unreadCount(kv: KvStore, owner: string): Promise<number> {
  let count = 0;
  const list = kv.list(NOTE_KEYS.unread(owner), { limit: NOTIFICATION_LIMITS.keep + 1 });
  for await (const _ of list) count++;
  return count;
}

/** What to mark read: some ids, or everything up to a notification (itself included). */
export type MarkRead = { ids: readonly string[] } | { up_to: string } | { all: true };

/**
 * Marks an owner's notifications read; ids of other owners' and unknown ones mark nothing.
 * Returns how many were unread and are read now, and the unread count after.
 */
export async function markRead(
  kv: KvStore,
  owner: string,
  what: MarkRead,
): Promise<{ marked: number; unread: number }> {
  const seqs: number[] = [];
  if ("ids" in what) {
    for (const id of what.ids.slice(0, NOTIFICATION_LIMITS.ids)) {
      const seq = seqOfId(owner, id);
      if (seq !== undefined) seqs.push(seq);
    }
  } else {
    const upTo = "up_to" in what ? seqOfId(owner, what.up_to) : Infinity;
    if (upTo === undefined) return { marked: 0, unread: await unreadCount(kv, owner) };
    const prefix = NOTE_KEYS.unread(owner);
    const list = kv.list(prefix, { limit: NOTIFICATION_LIMITS.keep + 1 });
    for await (const entry of list) {
      const seq = entry.key.at(-1);
      if (typeof seq === "number" && seq <= upTo) seqs.push(seq);
    }
  }
  const entries = await Promise.all(seqs.map((seq) => kv.get(NOTE_KEYS.unread(owner, seq))));
  const present = seqs.filter((_, index) => entries[index]?.value);
  // KV commits hold a bounded number of mutations: mark in slices.
  for (let at = 0; at < present.length; at += 500) {
    const atomic = kv.atomic();
    for (const seq of present.slice(at, at + 500)) atomic.delete(NOTE_KEYS.unread(owner, seq));
    await atomic.commit();
  }
  return { marked: present.length, unread: await unreadCount(kv, owner) };
}

/** One notification of an owner, or undefined. */
export async function getNotification(
  kv: KvStore,
  owner: string,
  seq: number,
): Promise<NotificationRecord | undefined> {
  const entry = await kv.get(NOTE_KEYS.note(owner, seq));
  return entry.value ? fromBytes<NotificationRecord>(entry.value) : undefined;
}

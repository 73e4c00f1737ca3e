/**
 * The ledger's agent-to-agent tasks: the A2A protocol's view of the work this host does for
 * other agents (the A2A task store of `src/a2a/`), as functions over the KV store that the KV
 * ledger delegates to. Tasks are kept per owner, so that another owner's task is not found
 * rather than refused. Keys:
 *
 * | key | value |
 * |---|---|
 * | `["a2a_tasks", owner, task_id]` | the record (the task in the protocol's JSON form) |
 * | `["a2a_tasks_by_owner", owner, newestFirstKey(seq)]` | `{task_id}`: index, newest first |
 * @module
 */
import type { KvKey, KvStore } from "../platform/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";
import { fitRecord } from "./fit.ts";
import { isId } from "./ids.ts";
import { fromBytes } from "./json_bytes.ts";
import { newestFirstKey } from "./pages.ts";

/** One A2A task of an owner, as the A2A task store keeps it. */
export interface A2aTaskRecord {
  /** The A2A task id (the protocol's, checked by the A2A layer before it reaches a key). */
  task_id: string;
  /** Whose task it is: only its owner finds it. */
  owner: string;
  /** A sortable id (`a2t_...`) given when the task was first saved: the listing's order and cursor. */
  seq: string;
  /** The task's A2A context id. */
  context_id: string;
  /** The task's A2A state, as the protocol's JSON names it (`TASK_STATE_WORKING`, ...). */
  state: string;
  /** When the task was first saved (ISO 8601). */
  created_at: string;
  /** When it last changed (ISO 8601). */
  updated_at: string;
  /** The task, in the A2A 1.0 JSON form. */
  task: JsonValue;
}

/** Options of {@linkcode listA2aTasks}. */
export interface A2aTaskListOptions {
  /** Most tasks returned. */
  limit: number;
  /** Continue after this `seq` (the last of a previous page). */
  cursor?: string;
  /** Only the tasks this returns true for (filters by context, state, time). */
  filter?: (record: A2aTaskRecord) => boolean;
  /** Most index entries read to fill one page when a filter drops some. Default 2000. */
  scanLimit?: number;
}

/** A page of A2A tasks, and the cursor of the next one when there may be more. */
export interface A2aTaskPage {
  /** The tasks, newest first. */
  records: A2aTaskRecord[];
  /** The `seq` to continue after; absent at the end. */
  next?: string;
  /** The tasks the filter kept, this page's and later ones', counted up to the scan limit. */
  matched: number;
}

/** The prefix of {@linkcode A2aTaskRecord.seq} ids. */
export const A2A_SEQ_PREFIX = "a2t";

const TABLE = "a2a_tasks";
const BY_OWNER = "a2a_tasks_by_owner";

function taskKey(owner: string, taskId: string): KvKey {
  return [TABLE, owner, taskId];
}

/**
 * Writes a task, and on its first write its index entry, in one atomic step; a concurrent
 * first write of the same id loses (returns false) rather than indexing the task twice.
 */
export async function saveA2aTask(kv: KvStore, record: A2aTaskRecord): Promise<boolean> {
  const key = taskKey(record.owner, record.task_id);
  const current = await kv.get(key);
  const atomic = kv.atomic().check(key, current.versionstamp).set(key, fitRecord(record).bytes);
  if (current.value === null) {
    atomic.set(
      [BY_OWNER, record.owner, newestFirstKey(record.seq)],
      fitRecord({ task_id: record.task_id }).bytes,
    );
  }
  return (await atomic.commit()).ok;
}

/** An owner's task by id, or undefined (also for another owner's). */
export async function getA2aTask(
  kv: KvStore,
  owner: string,
  taskId: string,
): Promise<A2aTaskRecord | undefined> {
  const entry = await kv.get(taskKey(owner, taskId));
  return entry.value ? fromBytes<A2aTaskRecord>(entry.value) : undefined;
}

/**
 * An owner's tasks, newest first, a page at a time. A cursor of the wrong shape lists from the
 * start (the A2A layer checks it first). At most `scanLimit` index entries are read: enough to
 * fill a page when a filter drops some, and to count the matches (`matched`) up to that bound.
 */
export async function listA2aTasks(
  kv: KvStore,
  owner: string,
  options: A2aTaskListOptions,
): Promise<A2aTaskPage> {
  const prefix: KvKey = [BY_OWNER, owner];
  const cursor = options.cursor !== undefined && isId(A2A_SEQ_PREFIX, options.cursor)
    ? options.cursor
    : undefined;
  const scanLimit = options.scanLimit ?? 2000;
  const records: A2aTaskRecord[] = [];
  let matched = 0;
  let more = false;
  const entries = kv.list(prefix, {
    ...(cursor !== undefined ? { start: [...prefix, newestFirstKey(cursor)] } : {}),
    limit: scanLimit + 1,
  });
  let scanned = 0;
  for await (const entry of entries) {
    if (!entry.value) continue;
    if (cursor !== undefined && entry.key[entry.key.length - 1] === newestFirstKey(cursor)) {
      continue;
    }
    if (scanned++ >= scanLimit) break;
    const { task_id } = fromBytes<{ task_id: string }>(entry.value);
    const record = await getA2aTask(kv, owner, task_id);
    if (!record || (options.filter && !options.filter(record))) continue;
    matched++;
    if (records.length < options.limit) records.push(record);
    else more = true;
  }
  const last = records[records.length - 1];
  return { records, matched, ...(more && last ? { next: last.seq } : {}) };
}

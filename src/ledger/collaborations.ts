/**
 * The ledger's record of agent-to-agent exchanges (collaborations), as functions over the KV
 * store that the KV ledger delegates to. Keys, newest first (see `pages.ts`):
 *
 * | key | value |
 * |---|---|
 * | `["collaborations", newestFirstKey(id)]` | the record |
 * | `["collaborations_by_owner", owner, newestFirstKey(id)]` | `{}`: index for listing |
 * @module
 */
import type { KvKey, KvStore } from "../platform/mod.ts";
import { fitRecord } from "./fit.ts";
import { fromBytes } from "./json_bytes.ts";
import { listNewestFirst, newestFirstKey, type Page, type PageOptions } from "./pages.ts";

/** States of an exchange with another agent: A2A's task states. */
export type CollaborationState =
  | "submitted"
  | "working"
  | "input-required"
  | "auth-required"
  | "completed"
  | "failed"
  | "canceled"
  | "rejected";

/** One agent-to-agent exchange: another agent asked svc (inbound), or svc asked one (outbound). */
export interface CollaborationRecord {
  /** The exchange's id (`col_...`). */
  collaboration_id: string;
  /** Whose exchange it is: only its owner sees it. */
  owner: string;
  /** `inbound`: a peer asked this svc; `outbound`: this svc asked a peer. */
  direction: "inbound" | "outbound";
  /** The other agent: its agent card URL or its name. */
  peer: string;
  /** The skill asked for, when the peer or svc named one. */
  skill?: string;
  /** The svc task that served or made the exchange, if any. */
  task_id?: string;
  /** The svc run that served or made the exchange, if any. */
  run_id?: string;
  /** Where the exchange is. */
  state: CollaborationState;
  /** What was asked and answered, in a few words. */
  summary?: string;
  /** When it started (ISO 8601). */
  started_at: string;
  /** When it last changed (ISO 8601). */
  updated_at: string;
}

const TABLE: KvKey = ["collaborations"];
const BY_OWNER: KvKey = ["collaborations_by_owner"];

/**
 * Writes a collaboration; with `create`, only if its id is new (false when it is taken),
 * otherwise only if it exists (false when it does not).
 */
export async function saveCollaboration(
  kv: KvStore,
  record: CollaborationRecord,
  options: { create: boolean },
): Promise<boolean> {
  const key = newestFirstKey(record.collaboration_id);
  const current = await kv.get([...TABLE, key]);
  if (options.create !== (current.value === null)) return false;
  const atomic = kv.atomic()
    .check([...TABLE, key], current.versionstamp)
    .set([...TABLE, key], fitRecord(record).bytes);
  if (options.create) atomic.set([...BY_OWNER, record.owner, key], fitRecord({}).bytes);
  return (await atomic.commit()).ok;
}

/** A collaboration by id, or undefined. */
export async function getCollaboration(
  kv: KvStore,
  id: string,
): Promise<CollaborationRecord | undefined> {
  const entry = await kv.get([...TABLE, newestFirstKey(id)]);
  return entry.value ? fromBytes<CollaborationRecord>(entry.value) : undefined;
}

/** Collaborations, newest first, a page at a time; only `owner`'s when given. */
export function listCollaborations(
  kv: KvStore,
  options: PageOptions,
): Promise<Page<CollaborationRecord>> {
  return listNewestFirst<CollaborationRecord>(kv, {
    table: TABLE,
    byOwner: BY_OWNER,
    idOf: (record) => record.collaboration_id,
  }, options);
}

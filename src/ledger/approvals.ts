import { SvcError } from "../errors/mod.ts";
import type { KvAtomic, KvKey, KvStore } from "../platform/mod.ts";
import type { ActivityDraft } from "./context.ts";
import { clipText } from "./fit.ts";
import { fromBytes, toBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";

/** Where an approval is in its life: only a `pending` one can be decided, once. */
export type ApprovalState = "pending" | "approved" | "denied" | "cancelled";

/** How a pending approval can end: a person approves or denies it, or its call stops waiting. */
export type ApprovalDecision = "approved" | "denied" | "cancelled";

/**
 * A call or dispatch waiting for a person: it asked for the `full` sandbox while the
 * configuration's `sandbox.full` is `ask`. Durable in the ledger, so that a run executing in
 * one process can be approved from another (the dashboard). Every text is bounded and free of
 * control characters: it is shown to the person who decides.
 */
export interface ApprovalRecord {
  /** The approval's id (`apr_...`). */
  approval_id: string;
  /** Whose call it is: only its owner (or an administrator) sees and decides it. */
  owner: string;
  /** Pending until decided; decided once. */
  state: ApprovalState;
  /** A run's `agent()` call (`call`) or an asynchronous dispatch (`dispatch`). */
  kind: "call" | "dispatch";
  /** The run of a `call`. */
  run_id?: string;
  /** The call's number in its run's journal (from 1). */
  call_seq?: number;
  /** The task of a `dispatch`. */
  task_id?: string;
  /** The call's label, if it had one. */
  label?: string;
  /** The provider the call asked for, if it named one. */
  provider?: string;
  /** The start of the prompt ({@linkcode APPROVAL_LIMITS}.preview characters), for the person who decides. */
  prompt_preview: string;
  /** The level waiting for approval: always `full`. */
  sandbox: "full";
  /** When the call asked (ISO 8601). */
  asked_at: string;
  /** When it was decided. */
  decided_at?: string;
  /** Who decided it (a person's name, or `svc` when the call stopped waiting). */
  decided_by?: string;
  /** Why, in words. */
  reason?: string;
}

/** Options of {@linkcode listApprovals}. */
export interface ListApprovalsOptions {
  /** Only this owner's approvals; every owner's when absent. */
  owner?: string;
  /** Only approvals in this state; without it, pending ones first, then the decided ones. */
  state?: ApprovalState;
  /** Most approvals returned. Default 100. */
  limit?: number;
  /** Continue after this approval id (the last one of the previous page). */
  before?: string;
}

/** The outcome of {@linkcode decideApproval}: the approval as stored, and whether this call decided it. */
export interface ApprovalDecided {
  /** The approval after the attempt: decided by this call, or as an earlier decision left it. */
  approval: ApprovalRecord;
  /** True when this call decided it; false when it was decided already (the stored decision stands). */
  decided: boolean;
}

/** Bounds of an approval's texts, in characters. */
export const APPROVAL_LIMITS = {
  /** The prompt preview. */
  preview: 500,
  /** A label, a provider name, who decided. */
  short: 128,
  /** The reason of a decision. */
  reason: 1000,
} as const;

/** A text as an approval shows it: control characters become spaces, then clipped. */
export function approvalText(text: string, max: number): string {
  // deno-lint-ignore no-control-regex
  return clipText(text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, " "), max);
}

function bounded(record: ApprovalRecord): ApprovalRecord {
  const { short, reason, preview } = APPROVAL_LIMITS;
  const out: ApprovalRecord = {
    ...record,
    prompt_preview: approvalText(record.prompt_preview, preview),
  };
  if (record.label !== undefined) out.label = approvalText(record.label, short);
  if (record.provider !== undefined) out.provider = approvalText(record.provider, short);
  if (record.decided_by !== undefined) out.decided_by = approvalText(record.decided_by, short);
  if (record.reason !== undefined) out.reason = approvalText(record.reason, reason);
  return out;
}

/**
 * Records a new pending approval, with its owner's index and, for a dispatch, its task's; the
 * commit (`LedgerContext.commit`) adds it to its owner's activity stream, so that the wait is
 * announced (and notified) with the record itself.
 */
export async function createApproval(
  record: ApprovalRecord,
  commit: (build: (atomic: KvAtomic) => void, item: ActivityDraft) => Promise<boolean>,
): Promise<void> {
  const stored = bounded(record);
  const item: ActivityDraft = {
    at: stored.asked_at,
    kind: "approval",
    id: stored.approval_id,
    state: "pending",
    ...(stored.run_id !== undefined ? { run_id: stored.run_id } : {}),
    ...(stored.task_id !== undefined ? { task_id: stored.task_id } : {}),
  };
  const ok = await commit((atomic) => {
    atomic
      .check(KEYS.approval(stored.approval_id), null)
      .set(KEYS.approval(stored.approval_id), toBytes(stored))
      .set(KEYS.approvalsByOwner(stored.owner, stored.approval_id), toBytes({}))
      .set(KEYS.approvalsPending(stored.approval_id), toBytes({ owner: stored.owner }));
    if (stored.task_id !== undefined) {
      atomic.set(
        KEYS.approvalOfTask(stored.task_id),
        toBytes({ approval_id: stored.approval_id }),
      );
    }
  }, item);
  if (!ok) {
    throw new SvcError(
      "internal",
      `Cannot record approval ${stored.approval_id}: the id is taken`,
    );
  }
}

/** An approval by id, or undefined. */
export async function getApproval(
  kv: KvStore,
  approvalId: string,
): Promise<ApprovalRecord | undefined> {
  const entry = await kv.get(KEYS.approval(approvalId));
  return entry.value ? fromBytes<ApprovalRecord>(entry.value) : undefined;
}

/** The approval a dispatch task asked for, or undefined when it asked for none. */
export async function approvalOfTask(
  kv: KvStore,
  taskId: string,
): Promise<ApprovalRecord | undefined> {
  const entry = await kv.get(KEYS.approvalOfTask(taskId));
  if (!entry.value) return undefined;
  return await getApproval(kv, fromBytes<{ approval_id: string }>(entry.value).approval_id);
}

/**
 * Decides a pending approval, atomically: of two deciders (two people, or a person and the
 * call giving up), exactly one wins; the other gets the stored decision with `decided: false`.
 * Undefined when there is no such approval.
 */
export async function decideApproval(
  kv: KvStore,
  approvalId: string,
  decision: { state: ApprovalDecision; by: string; reason?: string; at?: string },
): Promise<ApprovalDecided | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const entry = await kv.get(KEYS.approval(approvalId));
    if (!entry.value) return undefined;
    const current = fromBytes<ApprovalRecord>(entry.value);
    if (current.state !== "pending") return { approval: current, decided: false };
    const decided = bounded({
      ...current,
      state: decision.state,
      decided_at: decision.at ?? new Date().toISOString(),
      decided_by: decision.by,
      ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
    });
    const result = await kv.atomic()
      .check(KEYS.approval(approvalId), entry.versionstamp)
      .set(KEYS.approval(approvalId), toBytes(decided))
      .delete(KEYS.approvalsPending(approvalId))
      .commit();
    if (result.ok) return { approval: decided, decided: true };
  }
  throw new SvcError("conflict", `Cannot decide approval ${approvalId}: it keeps changing`);
}

/** Ids under `prefix` (the id is the key's last part), newest first, below `before` when given. */
async function* idsNewestFirst(
  kv: KvStore,
  prefix: KvKey,
  before: string | undefined,
): AsyncGenerator<{ id: string; value: Uint8Array | null }> {
  // The KV store lists from a start key only: a reverse listing skips the newer ids itself.
  for await (const entry of kv.list(prefix, { reverse: true })) {
    const id = entry.key.at(-1);
    if (typeof id !== "string" || (before !== undefined && id >= before)) continue;
    yield { id, value: entry.value };
  }
}

/**
 * Approvals, newest first: one state's, or (without `state`) the pending ones first, then the
 * decided ones. `before` continues after an approval of the previous page, in the part of the
 * listing its current state puts it in.
 */
export async function listApprovals(
  kv: KvStore,
  options: ListApprovalsOptions = {},
): Promise<ApprovalRecord[]> {
  const limit = options.limit ?? 100;
  const out: ApprovalRecord[] = [];
  const read = async (id: string, value: Uint8Array | null, all: boolean) =>
    all && value ? fromBytes<ApprovalRecord>(value) : await getApproval(kv, id);
  /** Takes the approvals of one part of the listing; true once the page is full. */
  const take = async (
    pending: boolean,
    before: string | undefined,
  ): Promise<boolean> => {
    const all = !pending && options.owner === undefined;
    const prefix = pending
      ? KEYS.approvalsPending()
      : all
      ? KEYS.allApprovals
      : KEYS.approvalsByOwner(options.owner!);
    for await (const { id, value } of idsNewestFirst(kv, prefix, before)) {
      if (pending && value && options.owner !== undefined) {
        if (fromBytes<{ owner: string }>(value).owner !== options.owner) continue;
      }
      const record = await read(id, value, all);
      if (!record) continue;
      if (options.owner !== undefined && record.owner !== options.owner) continue;
      if (options.state !== undefined && record.state !== options.state) continue;
      if (options.state === undefined && !pending && record.state === "pending") continue;
      out.push(record);
      if (out.length >= limit) return true;
    }
    return false;
  };
  if (options.state === "pending") {
    await take(true, options.before);
  } else if (options.state !== undefined) {
    await take(false, options.before);
  } else {
    const cursor = options.before === undefined ? undefined : await getApproval(kv, options.before);
    if (options.before !== undefined && cursor === undefined) {
      // A cursor that names no approval: older ids than it, in both parts.
      if (!(await take(true, options.before))) await take(false, options.before);
    } else if (cursor === undefined || cursor.state === "pending") {
      if (!(await take(true, cursor?.approval_id))) await take(false, undefined);
    } else await take(false, cursor.approval_id);
  }
  return out;
}

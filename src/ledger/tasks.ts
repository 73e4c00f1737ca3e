import { SvcError } from "../errors/mod.ts";
import type { KvKey } from "../platform/mod.ts";
import type { CallProgress } from "../schemas/mod.ts";
import { fromBytes, toBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";
import { checkBefore } from "./cursor.ts";
import {
  type ActivityAppend,
  below,
  type LedgerContext,
  type Stored,
  taskActivity,
  taskFiles,
} from "./context.ts";
import type { HostRef, ListOptions, TaskApprovalNote, TaskLedger } from "./interface.ts";
import { type CallRecord, isTerminal, type TaskEvent, type TaskStatus } from "./records.ts";
import {
  countOwnerLive,
  OWNER_LIVE_ATTEMPTS,
  type OwnerLiveGate,
  readOwnerLive,
  takeOwnerLive,
} from "./owner_live.ts";

interface TaskDoc {
  v: 1;
  task: TaskStatus;
  result?: Stored;
}

/** A task as stored: its result inline, or in a blob of its folder when large. */
export async function taskBytes(ctx: LedgerContext, task: TaskStatus): Promise<Uint8Array> {
  const { result, ...rest } = task;
  const doc: TaskDoc = { v: 1, task: rest };
  if (result !== undefined) {
    doc.result = await ctx.store(task.task_id, result, { dirOf: taskFiles });
  }
  return toBytes(doc);
}

/** A task read back from {@linkcode taskBytes}. */
export async function taskOf(ctx: LedgerContext, bytes: Uint8Array): Promise<TaskStatus> {
  const doc = fromBytes<TaskDoc>(bytes);
  const task: TaskStatus = doc.task;
  if (doc.result) {
    task.result = await ctx.load(task.task_id, doc.result, taskFiles);
  }
  return task;
}

/**
 * Records a new task (queued) with its first event; made by `host`, it takes its owner's live
 * slot with it (src/ledger/owner_live.ts), with `ownerCap` only while the owner has fewer live
 * tasks on every host: false when it was not recorded for that.
 */
async function createTask(
  ctx: LedgerContext,
  task: TaskStatus,
  options: { queue?: boolean; host?: HostRef; ownerCap?: number } = {},
): Promise<boolean> {
  const { host } = options;
  const capped = host !== undefined && options.ownerCap !== undefined;
  for (let attempt = 1;; attempt++) {
    const gate = capped ? await readOwnerLive(ctx, task.owner, "task") : undefined;
    if (gate && gate.count >= options.ownerCap!) return false;
    if (await commitNewTask(ctx, task, { ...options, gate })) return true;
    const taken = (await ctx.kv.get(KEYS.task(task.task_id))).value !== null;
    if (!capped || taken) {
      throw new SvcError("internal", `Cannot record task ${task.task_id}: the id is taken`);
    }
    if (attempt >= OWNER_LIVE_ATTEMPTS) return false;
  }
}

/** One attempt of {@linkcode createTask}'s commit; false when a check failed. */
async function commitNewTask(
  ctx: LedgerContext,
  task: TaskStatus,
  options: { queue?: boolean; host?: HostRef; gate?: OwnerLiveGate | undefined },
): Promise<boolean> {
  const event: TaskEvent = { at: task.created_at, task_id: task.task_id, state: task.state };
  const bytes = await taskBytes(ctx, task);
  const { host, gate } = options;
  const ok = await ctx.commit((atomic) => {
    if (host) {
      takeOwnerLive(atomic, {
        owner: task.owner,
        runId: task.task_id,
        host,
        kind: "task",
        ...(gate ? { gate } : {}),
      });
    }
    if (options.queue) {
      // The provider it names, if any: only a host that has it claims the task.
      const provider = task.fake_dispatch ? undefined : task.options.provider;
      atomic.set(
        KEYS.queue("task", task.task_id),
        toBytes({
          owner: task.owner,
          at: task.created_at,
          ...(typeof provider === "string" && provider !== "auto" ? { provider } : {}),
        }),
      );
    }
    return atomic
      .check(KEYS.task(task.task_id), null)
      .set(KEYS.task(task.task_id), bytes)
      .set(KEYS.tasksByOwner(task.owner, task.task_id), toBytes({}))
      .set(KEYS.taskEvents(task.task_id, 0), toBytes(event))
      .set(KEYS.feedTick, toBytes({}));
  }, taskActivity(task, event));
  if (ok) ctx.notify({ kind: "task", id: task.task_id });
  return ok;
}

/** A finished task's record in the call log. */
function taskCall(task: TaskStatus & { ended_at: string; provider: string }): CallRecord {
  return {
    at: task.ended_at,
    source: "task",
    id: task.task_id,
    seq: 1,
    owner: task.owner,
    provider: task.provider,
    model: task.model,
    outcome: task.state === "succeeded"
      ? "live"
      : task.state === "failed"
      ? "failed"
      : task.state === "cancelled"
      ? "cancelled"
      : "timeout",
    duration_ms: task.started_at ? Date.parse(task.ended_at) - Date.parse(task.started_at) : 0,
    usage: task.usage,
    cost_usd: task.cost_usd,
  };
}

type SaveTaskOptions = {
  eventSeq?: number;
  expect?: TaskStatus["state"];
  approval?: TaskApprovalNote;
};

/**
 * Saves a task; with `event`, its state change commits with it. With `expect`, the write
 * happens only if the task is still in that state (claiming a queued task, for one).
 * Returns whether it was written. A finished task also enters the call log.
 */
async function saveTask(
  ctx: LedgerContext,
  task: TaskStatus,
  options: SaveTaskOptions = {},
): Promise<boolean> {
  let expected: string | null | undefined;
  if (options.expect !== undefined) {
    const current = await ctx.kv.get(KEYS.task(task.task_id));
    if (!current.value || (await taskOf(ctx, current.value)).state !== options.expect) {
      return false;
    }
    expected = current.versionstamp;
  }
  const mutations: Array<[KvKey, Uint8Array | null]> = [
    [KEYS.task(task.task_id), await taskBytes(ctx, task)],
  ];
  if (task.state === "running" && task.host_id !== null) {
    mutations.push([KEYS.activeTasks(task.task_id), toBytes({ host_id: task.host_id })]);
  } else if (task.state !== "queued") mutations.push([KEYS.activeTasks(task.task_id), null]);
  // Claimed or ended: no longer waiting for a worker.
  if (task.state !== "queued") mutations.push([KEYS.queue("task", task.task_id), null]);
  // Ended: its owner's live slot is free.
  if (isTerminal(task.state)) mutations.push([KEYS.ownerTasks(task.owner, task.task_id), null]);
  let activity: ActivityAppend | undefined;
  if (options.eventSeq !== undefined) {
    const { approval } = options;
    const event: TaskEvent = {
      at: approval?.at ?? task.ended_at ?? task.started_at ?? task.created_at,
      task_id: task.task_id,
      state: task.state,
      ...(approval
        ? {
          approval: {
            approval_id: approval.approval_id,
            state: approval.state,
            ...(approval.decided_by !== undefined ? { decided_by: approval.decided_by } : {}),
            ...(approval.reason !== undefined ? { reason: approval.reason } : {}),
          },
        }
        : {}),
    };
    mutations.push([KEYS.taskEvents(task.task_id, options.eventSeq), toBytes(event)]);
    mutations.push([KEYS.feedTick, toBytes({})]);
    // An approval note is no state change: the owner's activity stream is for those.
    activity = approval ? undefined : taskActivity(task, event);
  }
  if (task.ended_at !== null && task.provider !== null) {
    const call = taskCall({ ...task, ended_at: task.ended_at, provider: task.provider });
    mutations.push([KEYS.call(call.at, task.task_id, 1), toBytes(call)]);
  }
  const ok = await ctx.commit((atomic) => {
    if (expected !== undefined) atomic.check(KEYS.task(task.task_id), expected);
    for (const [key, value] of mutations) {
      if (value === null) atomic.delete(key);
      else atomic.set(key, value);
    }
  }, activity);
  if (ok && options.eventSeq !== undefined) ctx.notify({ kind: "task", id: task.task_id });
  return ok;
}

/** Appends a progress event to a task's feed; its record is not written. */
async function appendTaskProgress(
  ctx: LedgerContext,
  taskId: string,
  options: { eventSeq: number; at: string; items: CallProgress[] },
): Promise<void> {
  const event: TaskEvent = {
    at: options.at,
    task_id: taskId,
    state: "running",
    progress: options.items,
  };
  await ctx.commit((atomic) => {
    atomic.set(KEYS.taskEvents(taskId, options.eventSeq), toBytes(event));
    atomic.set(KEYS.feedTick, toBytes({}));
  });
  ctx.notify({ kind: "task", id: taskId });
}

/** A task's status, or undefined. */
async function getTask(ctx: LedgerContext, taskId: string): Promise<TaskStatus | undefined> {
  const entry = await ctx.kv.get(KEYS.task(taskId));
  return entry.value ? await taskOf(ctx, entry.value) : undefined;
}

/** Tasks, newest first (older than `before` when given); only `owner`'s when given. */
async function listTasks(ctx: LedgerContext, options: ListOptions = {}): Promise<TaskStatus[]> {
  const limit = options.limit ?? 100;
  const before = options.before === undefined
    ? undefined
    : checkBefore("task", options.before, "tasks");
  const out: TaskStatus[] = [];
  if (options.owner === undefined) {
    const prefix = KEYS.allTasks;
    for await (
      const entry of ctx.kv.list(prefix, { reverse: true, limit, ...below(prefix, before) })
    ) {
      if (entry.value) out.push(await taskOf(ctx, entry.value));
    }
    return out;
  }
  const prefix = KEYS.tasksByOwner(options.owner);
  for await (
    const entry of ctx.kv.list(prefix, { reverse: true, limit, ...below(prefix, before) })
  ) {
    const id = entry.key.at(-1);
    const task = typeof id === "string" ? await getTask(ctx, id) : undefined;
    if (task) out.push(task);
  }
  return out;
}

/** Marks a task's cancel as asked for; its worker, wherever it runs, sees it. */
async function requestCancel(ctx: LedgerContext, taskId: string): Promise<TaskStatus | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const entry = await ctx.kv.get(KEYS.task(taskId));
    if (!entry.value) return undefined;
    const task = await taskOf(ctx, entry.value);
    if (task.cancel_requested) return task;
    task.cancel_requested = true;
    const result = await ctx.kv.atomic()
      .check(KEYS.task(taskId), entry.versionstamp)
      .set(KEYS.task(taskId), await taskBytes(ctx, task))
      .commit();
    if (result.ok) return task;
  }
  throw new SvcError("conflict", `Cannot cancel task ${taskId}: it keeps changing`);
}

/** The dispatch tasks of a ledger's context. */
export function taskLedger(ctx: LedgerContext): TaskLedger {
  return {
    createTask: (task, options) => createTask(ctx, task, options),
    countOwnerTasks: (owner) => countOwnerLive(ctx, owner, "task"),
    saveTask: (task, options) => saveTask(ctx, task, options),
    appendTaskProgress: (taskId, options) => appendTaskProgress(ctx, taskId, options),
    getTask: (taskId) => getTask(ctx, taskId),
    listTasks: (options) => listTasks(ctx, options),
    requestCancel: (taskId) => requestCancel(ctx, taskId),
  };
}

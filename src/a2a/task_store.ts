/**
 * The A2A task store in svc's ledger: the SDK's request handler saves and reads tasks through
 * it, each under the owner of the call's token. Another owner's task is simply not there, so
 * it answers exactly as an unknown id. A task id of a shape svc never hands out finds nothing
 * and never reaches a ledger key.
 * @module
 */
import { type ListTasksRequest, type ListTasksResponse, Task } from "@a2a-js/sdk";
import type { ServerCallContext, TaskStore } from "@a2a-js/sdk/server";
import {
  A2A_SEQ_PREFIX,
  type A2aTaskLedger,
  type A2aTaskRecord,
  isId,
  newId,
} from "../services/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";
import { callerOfContext } from "./caller_user.ts";
import type { StaleSettler } from "./stale_tasks.ts";
import { stateName } from "./state_map.ts";

/** The shape of a task id svc accepts: what the SDK makes (a UUID) and similar ids, bounded. */
export const TASK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** Writes retried when another process changed the task meanwhile. */
const SAVE_ATTEMPTS = 5;

/** A {@linkcode TaskStore} over the ledger's A2A tasks. */
export class LedgerTaskStore implements TaskStore {
  readonly #ledger: A2aTaskLedger;
  readonly #onSaved: ((task: Task) => void) | undefined;
  readonly #settle: StaleSettler | undefined;

  /**
   * A store over `ledger`; `onSaved` hears of every task written (the executor waits on it),
   * `settle` may end a task read that no host will ever end ({@linkcode staleSettler}).
   */
  constructor(
    ledger: A2aTaskLedger,
    options: { onSaved?: (task: Task) => void; settle?: StaleSettler } = {},
  ) {
    this.#ledger = ledger;
    this.#onSaved = options.onSaved;
    this.#settle = options.settle;
  }

  /** The task of a record, settled (and saved so) when its svc work was interrupted. */
  async #read(record: A2aTaskRecord, context: ServerCallContext): Promise<Task> {
    const task = Task.fromJSON(record.task);
    const settled = await this.#settle?.(task, record.owner);
    if (!settled) return task;
    await this.save(settled, context);
    return settled;
  }

  /** Saves the task as the caller's (keeping its first-save order). */
  async save(task: Task, context: ServerCallContext): Promise<void> {
    const { owner } = callerOfContext(context);
    if (!TASK_ID_PATTERN.test(task.id)) return;
    const json = Task.toJSON(task) as JsonValue;
    for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt++) {
      const current = await this.#ledger.getA2aTask(owner, task.id);
      const at = new Date().toISOString();
      const record: A2aTaskRecord = {
        task_id: task.id,
        owner,
        seq: current?.seq ?? newId(A2A_SEQ_PREFIX),
        context_id: task.contextId.slice(0, 256),
        state: stateName(task.status?.state),
        created_at: current?.created_at ?? at,
        updated_at: at,
        task: json,
      };
      if (await this.#ledger.saveA2aTask(record)) {
        this.#onSaved?.(task);
        return;
      }
    }
  }

  /** The caller's task, or undefined (unknown, another owner's, or an id of no valid shape). */
  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const { owner } = callerOfContext(context);
    if (typeof taskId !== "string" || !TASK_ID_PATTERN.test(taskId)) return undefined;
    const record = await this.#ledger.getA2aTask(owner, taskId);
    return record ? await this.#read(record, context) : undefined;
  }

  /** The caller's tasks, newest first, filtered as the request asks. */
  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const { owner } = callerOfContext(context);
    const pageSize = params.pageSize ?? 50;
    const cursor = params.pageToken && isId(A2A_SEQ_PREFIX, params.pageToken)
      ? params.pageToken
      : undefined;
    // UNSPECIFIED (0) filters nothing.
    const status = params.status ? stateName(params.status) : undefined;
    const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : undefined;
    const page = await this.#ledger.listA2aTasks(owner, {
      limit: pageSize,
      ...(cursor !== undefined ? { cursor } : {}),
      filter: (record) =>
        (!params.contextId || record.context_id === params.contextId) &&
        (status === undefined || record.state === status) &&
        (after === undefined || Date.parse(record.updated_at) > after),
    });
    const tasks: Task[] = [];
    for (const record of page.records) {
      const task = await this.#read(record, context);
      if (params.includeArtifacts !== true) task.artifacts = [];
      tasks.push(task);
    }
    return {
      tasks,
      nextPageToken: page.next ?? "",
      pageSize,
      totalSize: page.matched,
    };
  }
}

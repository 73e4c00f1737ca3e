/**
 * How svc's task and run states read as A2A task states, and A2A states as the collaboration
 * record names them. The table (docs/ARCHITECTURE.md repeats it):
 *
 * | svc state | A2A state |
 * |---|---|
 * | `queued` | `TASK_STATE_SUBMITTED` |
 * | `running` (waiting for an approval too) | `TASK_STATE_WORKING` |
 * | `succeeded` | `TASK_STATE_COMPLETED` |
 * | `failed`, `timeout`, `interrupted` | `TASK_STATE_FAILED` |
 * | `cancelled` | `TASK_STATE_CANCELED` |
 * | refused before it started (bad input, unknown workflow) | `TASK_STATE_REJECTED` |
 * @module
 */
import { TaskState } from "@a2a-js/sdk";
import type { CollaborationState, RunState } from "../services/mod.ts";

/** The A2A state of each svc task or run state. */
export const A2A_STATE_OF: Readonly<Record<RunState, TaskState>> = {
  queued: TaskState.TASK_STATE_SUBMITTED,
  running: TaskState.TASK_STATE_WORKING,
  succeeded: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  cancelled: TaskState.TASK_STATE_CANCELED,
  timeout: TaskState.TASK_STATE_FAILED,
  interrupted: TaskState.TASK_STATE_FAILED,
};

const COLLABORATION_STATE: ReadonlyMap<TaskState, CollaborationState> = new Map([
  [TaskState.TASK_STATE_SUBMITTED, "submitted"],
  [TaskState.TASK_STATE_WORKING, "working"],
  [TaskState.TASK_STATE_COMPLETED, "completed"],
  [TaskState.TASK_STATE_FAILED, "failed"],
  [TaskState.TASK_STATE_CANCELED, "canceled"],
  [TaskState.TASK_STATE_INPUT_REQUIRED, "input-required"],
  [TaskState.TASK_STATE_REJECTED, "rejected"],
  [TaskState.TASK_STATE_AUTH_REQUIRED, "auth-required"],
]);

/** The collaboration record's name of an A2A state (`working`, `canceled`, ...). */
export function collaborationState(state: TaskState): CollaborationState {
  return COLLABORATION_STATE.get(state) ?? "failed";
}

const FINAL: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

/** Whether an A2A task in `state` never changes again. */
export function isFinalState(state: TaskState | undefined): boolean {
  return state !== undefined && FINAL.has(state);
}

/** The protocol's JSON name of a state (`TASK_STATE_WORKING`). */
export function stateName(state: TaskState | undefined): string {
  return (state !== undefined ? TaskState[state] : undefined) ?? "TASK_STATE_UNSPECIFIED";
}

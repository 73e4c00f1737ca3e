import { newId, type TaskStatus } from "../ledger/mod.ts";

/** What a new task is given (as {@linkcode TaskStatus} names it); everything else starts empty. */
export type NewTaskStatus =
  & Pick<
    TaskStatus,
    "owner" | "prompt" | "options" | "label" | "timeout" | "fake_dispatch" | "schema_attempts"
  >
  & Partial<Pick<TaskStatus, "task_id" | "created_at" | "trigger">>;

/**
 * A queued task's first status: not started, nothing routed or spent. The one place the status
 * literal is written, so that a field added to {@linkcode TaskStatus} gets its starting value
 * once for the service and its fixtures.
 */
export function newTaskStatus(fields: NewTaskStatus): TaskStatus {
  const { task_id, created_at, trigger, ...given } = fields;
  return {
    task_id: task_id ?? newId("task"),
    owner: given.owner,
    state: "queued",
    prompt: given.prompt,
    options: given.options,
    label: given.label,
    timeout: given.timeout,
    fake_dispatch: given.fake_dispatch,
    schema_attempts: given.schema_attempts,
    created_at: created_at ?? new Date().toISOString(),
    started_at: null,
    ended_at: null,
    provider: null,
    model: null,
    route: null,
    sandbox: null,
    sandbox_clamped: null,
    usage: { input_tokens: 0, output_tokens: 0 },
    cost_usd: null,
    session_id: null,
    worktree: null,
    cancel_requested: false,
    host_id: null,
    ...(trigger ? { trigger } : {}),
  };
}

import { newId, type TaskStatus, type WorkTrigger } from "../ledger/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";

/** What a new task is given; everything else starts empty. */
export interface NewTaskStatus {
  /** Whose task it is. */
  owner: string;
  /** The prompt to send. */
  prompt: string;
  /** The call's options as given. */
  options: Record<string, JsonValue>;
  /** The task's `label` option. */
  label: string | null;
  /** Seconds the task may take. */
  timeout: number;
  /** Whether the fake provider answers instead of a real one. */
  fake_dispatch: boolean;
  /** Attempts a schema call may take before it fails. */
  schema_attempts: number;
  /** Its id; a new `task_...` id by default. */
  task_id?: string;
  /** When it was recorded (ISO 8601); now by default. */
  created_at?: string;
  /** What started it when no caller did directly. */
  trigger?: WorkTrigger;
}

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

/**
 * A2A tasks whose svc work was interrupted: the host serving them died (the services of the next
 * host marked the svc task or run `interrupted`), so no execution will ever publish their final
 * state. The task store settles such a task as `TASK_STATE_FAILED` when it is read, and the
 * collaboration that records it as `failed`.
 * @module
 */
import { Role, type Task, TaskState } from "@a2a-js/sdk";
import { callerOf, type RunState } from "../services/mod.ts";
import type { Services } from "../services/mod.ts";
import { COLLABORATION_KEY, RUN_ID_KEY, TASK_ID_KEY } from "./executor.ts";
import { isFinalState } from "./state_map.ts";

/** What the store calls for a task that is not final: the settled task, or undefined. */
export type StaleSettler = (task: Task, owner: string) => Promise<Task | undefined>;

/** The settler over `services`: it reads the svc task or run the A2A task names in its metadata. */
export function staleSettler(services: Services): StaleSettler {
  return async function settle(task, owner) {
    if (isFinalState(task.status?.state)) return undefined;
    const caller = callerOf(owner);
    const metadata = (task.metadata ?? {}) as Record<string, unknown>;
    const taskId = metadata[TASK_ID_KEY];
    const runId = metadata[RUN_ID_KEY];
    let state: RunState | undefined;
    if (typeof taskId === "string") state = (await services.tasks.get(taskId, caller))?.state;
    else if (typeof runId === "string") state = (await services.runs.get(runId, caller))?.state;
    if (state !== "interrupted") return undefined;
    const collaboration = metadata[COLLABORATION_KEY];
    if (typeof collaboration === "string") {
      await services.collaborations.update(collaboration, { state: "failed" }, caller)
        .catch(() => {});
    }
    return {
      ...task,
      status: {
        state: TaskState.TASK_STATE_FAILED,
        message: {
          messageId: crypto.randomUUID(),
          contextId: task.contextId,
          taskId: task.id,
          role: Role.ROLE_AGENT,
          parts: [{
            content: {
              $case: "text",
              value: "interrupted: the svc host serving this task stopped before it ended",
            },
            metadata: undefined,
            filename: "",
            mediaType: "text/plain",
          }],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        },
        timestamp: new Date().toISOString(),
      },
    };
  };
}

/**
 * Tasks and sessions: the dispatch service behind `svc dispatch`, `POST /api/tasks` and chat
 * sessions. A task is one call (or a structured step) queued, claimed, performed through the
 * dispatcher and recorded in the ledger; a session is a conversation whose turns are dispatched
 * with its history.
 *
 * Layer: a service beside the engine, above dispatch: it imports dispatch, structured output,
 * agent types, approvals, the workspace policy and the ledger; surfaces and the composition root
 * import it.
 * @module
 */
export { type NewTaskStatus, newTaskStatus } from "./task_status.ts";
export { TaskManager, type TaskManagerOptions } from "./tasks.ts";
export { type SessionDetail, SessionStore, type TurnContext } from "./sessions.ts";

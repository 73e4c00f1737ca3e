/**
 * The workflow engine: checks scripts, runs them in guests and answers their calls.
 * @module
 */
export { RunManager } from "./run_manager.ts";
export type { RunManagerOptions, StartOptions } from "./run_manager.ts";
export { checkScript, ScriptMetaSchema } from "./script_check.ts";
export type { CheckedScript, ScriptMeta } from "./script_check.ts";
export { runGuest, ScriptCallError } from "./guest_session.ts";
export type {
  AgentReply,
  GuestHandlers,
  GuestOutcome,
  GuestSessionOptions,
  ScriptFailure,
} from "./guest_session.ts";
export { Semaphore } from "./semaphore.ts";
export type { Release } from "./semaphore.ts";
export { TERMINAL_STATES } from "./run_state.ts";
export type {
  CallCounts,
  NarrationEntry,
  RunCondition,
  RunError,
  RunEvent,
  RunState,
  RunStatus,
  SecurityEvent,
  UsageTotals,
} from "./run_state.ts";

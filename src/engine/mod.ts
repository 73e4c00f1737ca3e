/**
 * The workflow engine: checks scripts, runs them in guests and answers their calls.
 * @module
 */
export { RunManager } from "./run_manager.ts";
export {
  type AdmissionReads,
  DEFAULT_RUN_ADMISSION,
  fairOrder,
  type Placement,
  RunAdmission,
  type RunAdmissionLimits,
  type RunAdmissionSnapshot,
} from "./admission.ts";
export type { RunEventsOptions, RunManagerLedger, RunManagerOptions } from "./run_manager.ts";
export { MAX_SCRIPT_FILE_BYTES, newRunStatus, type NewRunStatusOptions } from "./run/mod.ts";
export { describeItemError } from "./run_context.ts";
export { checkScript, phaseTitles, ScriptMetaSchema } from "./script_check.ts";
export type { CheckedScript, MetaPhase, ScriptMeta } from "./script_check.ts";
export { findWorkflow, locateWorkflow, resolveWorkflow } from "./sub_workflow.ts";
export { MAX_SCANNED_BYTES, MAX_SCANNED_FILES } from "./meta_name_lookup.ts";
export type {
  LocatedWorkflow,
  ResolvedWorkflow,
  WorkflowPlaces,
  WorkflowRef,
} from "./sub_workflow.ts";
export { runGuest, ScriptCallError } from "./guest_session.ts";
export type {
  AgentReply,
  GuestHandlers,
  GuestOutcome,
  GuestSessionOptions,
  ScriptFailure,
  WorkflowReply,
} from "./guest_session.ts";
export type {
  AgentRequest,
  GuestNotificationHandlers,
  GuestNotifications,
  GuestRequestHandlers,
  GuestRequests,
  ReplayedNotice,
} from "./guest_protocol.ts";
export { BudgetGate } from "./budget.ts";
export {
  callHash,
  canonicalJson,
  entryPosition,
  mergeReplay,
  positionKey,
  precedes,
  type ReplayCandidate,
} from "./journal.ts";
export { Semaphore } from "../concurrency/mod.ts";
export {
  type CallCounts,
  type FailureCause,
  type FailureCounts,
  isTerminal,
  type JournalEntry,
  type NarrationEntry,
  type RunCondition,
  type RunError,
  type RunEvent,
  type RunState,
  type RunStatus,
  type ScriptErrorRecord,
  type SecurityEvent,
  TERMINAL_STATES,
  type UsageTotals,
} from "../ledger/mod.ts";

/**
 * The ledger: durable runs, narration, conditions and journals under `SVC_HOME`.
 * @module
 */
export {
  HEARTBEAT_MS,
  type HostRef,
  INLINE_LIMIT,
  Ledger,
  type LedgerOp,
  type StoredEvent,
} from "./ledger.ts";
export { sha256 } from "./json_bytes.ts";
export { clipStrings, clipText, fitRecord, VALUE_LIMIT } from "./fit.ts";
export { SCHEMA_VERSION } from "./keys.ts";
export {
  type BudgetAxis,
  type BudgetFigures,
  type CallCounts,
  type CallOutcome,
  type CallRecord,
  type FailureCause,
  type FailureCounts,
  isTerminal,
  type JournalEntry,
  type JournalSummary,
  type NarrationEntry,
  type RunCondition,
  type RunError,
  type RunEvent,
  type RunState,
  type RunStatus,
  type ScriptErrorRecord,
  type SecurityEvent,
  type SessionRecord,
  type TaskEvent,
  type TaskState,
  type TaskStatus,
  TERMINAL_STATES,
  type UsageTotals,
} from "./records.ts";
export type { ChatMessage } from "./chat.ts";
export { newId } from "./ids.ts";

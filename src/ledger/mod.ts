/**
 * The ledger: durable runs, journals, event feeds, tasks, sessions and the call log under
 * `SVC_HOME`, behind one interface per domain ({@linkcode Ledger} is their intersection), in a
 * Deno KV file or a Postgres database. Its notifier and store opener serve the board too.
 * @module
 */
export { INLINE_LIMIT, openLedger, type OpenLedgerOptions, RUN_SCAN_LIMIT } from "./ledger.ts";
export type {
  A2aTaskLedger,
  ActiveRunCounts,
  ApprovalLedger,
  CallLedger,
  ClaimOutcome,
  CollaborationLedger,
  DaemonLedger,
  FeedLedger,
  HostInfo,
  HostLedger,
  HostRef,
  Ledger,
  LedgerCore,
  LedgerOp,
  ListOptions,
  ListRunsOptions,
  NotificationLedger,
  QueueItem,
  QueueLedger,
  ReviewLedger,
  RunEventAt,
  RunLedger,
  SessionLedger,
  TaskApprovalNote,
  TaskLedger,
} from "./interface.ts";
export { Notifier, type NotifierOptions } from "./notifier.ts";
export { type OpenedStore, openStore, type OpenStoreOptions } from "./store.ts";
export { HEARTBEAT_MS, HostLease } from "./host_lease.ts";
export { HOST_FORGET_MS } from "./hosts.ts";
export {
  exportLedger,
  importLedger,
  type LedgerLocation,
  type TransferCounts,
} from "./transfer.ts";
export { type Caller, callerOf, mayAccess, OWNER_LIMIT, ownerScope } from "./caller.ts";
export { followActivity, followEvents, type FollowOptions } from "./follow.ts";
export { callCursor } from "./cursor.ts";
export { fromBytes, sha256, toBytes } from "./json_bytes.ts";
export { clipStrings, clipText, fitRecord, VALUE_LIMIT } from "./fit.ts";
export { SCHEMA_VERSION } from "./keys.ts";
export {
  type ActivityItem,
  type BudgetAxis,
  type BudgetFigures,
  type CallCounts,
  type CallOutcome,
  type CallRecord,
  endsStream,
  type EventStream,
  type FailureCause,
  type FailureCounts,
  type FeedItem,
  type GuestSandbox,
  isTerminal,
  type JournalEntry,
  type JournalSummary,
  type NarrationEntry,
  RUN_STATES,
  type RunCondition,
  type RunError,
  type RunEvent,
  type RunInput,
  type RunState,
  type RunStatus,
  type ScriptErrorRecord,
  type SecurityEvent,
  type SessionRecord,
  type StartedBy,
  type StartSurface,
  type TaskEvent,
  type TaskState,
  type TaskStatus,
  TERMINAL_STATES,
  type UsageTotals,
  type WorkTrigger,
} from "./records.ts";
export type { ChatMessage } from "./chat.ts";
export {
  APPROVAL_LIMITS,
  type ApprovalDecided,
  type ApprovalDecision,
  type ApprovalRecord,
  type ApprovalState,
  approvalText,
  type ListApprovalsOptions,
} from "./approvals.ts";
export { isId, newId, shownId } from "./ids.ts";
export { type CollaborationRecord, type CollaborationState } from "./collaborations.ts";
export { checkCursor, type Page, type PageOptions } from "./pages.ts";
export type { ReviewRecord } from "./reviews.ts";
export type {
  AutomationAction,
  AutomationQuota,
  AutomationRecord,
  AutomationRefusal,
  FiredSlot,
  LeaseState,
  WebhookDelivery,
} from "./daemon.ts";
export {
  A2A_SEQ_PREFIX,
  type A2aTaskListOptions,
  type A2aTaskPage,
  type A2aTaskRecord,
} from "./a2a_tasks.ts";
export {
  type ListNotificationsOptions,
  type MarkRead,
  NOTIFICATION_LIMITS,
  type NotificationKind,
  type NotificationPage,
  type NotificationRecord,
  type NotificationView,
} from "./notifications.ts";
export type { NotificationDelivery } from "./notification_outbox.ts";

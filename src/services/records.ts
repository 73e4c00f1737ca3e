/**
 * The records the services answer with and the caller they are asked as: a surface names them
 * here, so that it never imports the ledger, whose store only the services touch.
 * @module
 */
export {
  A2A_SEQ_PREFIX,
  type A2aTaskLedger,
  type A2aTaskRecord,
  type Caller,
  callerOf,
  type CallRecord,
  type CollaborationRecord,
  type CollaborationState,
  endsStream,
  type EventStream,
  exportLedger,
  type FeedItem,
  importLedger,
  isId,
  isTerminal,
  type JournalEntry,
  type MarkRead,
  newId,
  NOTIFICATION_LIMITS,
  type NotificationDelivery,
  type NotificationPage,
  type NotificationRecord,
  type NotificationView,
  RUN_STATES,
  type RunEvent,
  type RunState,
  type RunStatus,
  type SessionRecord,
  type TaskEvent,
  type TaskState,
  type TaskStatus,
  type TransferCounts,
} from "../ledger/mod.ts";

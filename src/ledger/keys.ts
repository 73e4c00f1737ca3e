import type { KvKey, KvStore } from "../platform/mod.ts";

/**
 * The KV schema: every key the ledger writes. Nothing outside src/ledger/ builds keys.
 *
 * | key | value |
 * |---|---|
 * | `["meta", "schema"]` | `{version}` |
 * | `["runs", run_id]` | the run document (status without narration, security events, inline result) |
 * | `["runs_by_owner", owner, run_id]` | `{}`: index for listing |
 * | `["active", run_id]` | `{host_id, pid, owner}`: runs a host has taken (running, or about to), for recovery after a crash and the status's counts |
 * | `["owner_live", owner, run_id]` | `{host_id}`: the owner's runs a host has taken, every host's: the count of `admission.owner_live_runs`; written and deleted with the run's `active` entry |
 * | `["owner_live_head", owner]` | `{}`: rewritten by every take of an owner's live slot and checked by a capped take, so that two hosts never pass the cap together |
 * | `["owner_tasks", owner, task_id]` | `{host_id}`: the owner's live (queued or running) dispatch tasks, every host's: the count of `admission.owner_live_tasks`; written with the task's record, deleted with its end |
 * | `["owner_tasks_head", owner]` | `{}`: as `owner_live_head`, for tasks |
 * | `["narration", run_id, seq]` | one narration entry |
 * | `["security", run_id, seq]` | one security event |
 * | `["journal", run_id, seq]` | one journal entry, or a pack of consecutive replayed entries from `seq` on (`journal_pack.ts`) |
 * | `["events", run_id, seq]` | the run's event feed, from seq 0, in order |
 * | `["run_cancel", run_id]` | `{at}`: a cancel asked for, by any process, for the run's host to see |
 * | `["meta", "feed_tick"]` | rewritten by every write that adds events: what other processes poll |
 * | `["hosts", host_id]` | `{pid, started_at, heartbeat_at}` of a live host |
 * | `["tasks", task_id]` | a task's status |
 * | `["tasks_by_owner", owner, task_id]` | `{}`: index for listing |
 * | `["task_events", task_id, seq]` | a task's event feed (its state changes), from seq 0 |
 * | `["active_tasks", task_id]` | `{host_id}`: running tasks, for recovery after a crash |
 * | `["sessions", session_id]` | a session |
 * | `["session_names", owner, name]` | `{session_id}`: sessions found by name |
 * | `["sessions_by_owner", owner, session_id]` | `{}`: index for listing |
 * | `["session_messages", session_id, seq]` | an API session's history, one message each |
 * | `["calls", at, id, seq]` | every dispatch of runs and tasks, for history and statistics |
 * | `["activity", owner, seq]` | the owner's activity stream: one item per state change of its runs and tasks, from seq 0 |
 * | `["activity_head", owner]` | `{seq}`: the stream's last seq, checked by every append so that concurrent writers never share one |
 * | `["reviews", ...]`, `["collaborations", ...]` and their `_by_owner` indexes | see `reviews.ts`, `collaborations.ts` |
 * | `["a2a_tasks", ...]`, `["a2a_tasks_by_owner", ...]` | A2A tasks per owner: see `a2a_tasks.ts` |
 * | `["approvals", approval_id]` | an approval: a `full` call or dispatch waiting for a person (src/ledger/approvals.ts) |
 * | `["approvals_by_owner", owner, approval_id]` | `{}`: index for listing an owner's approvals |
 * | `["approvals_pending", approval_id]` | `{owner}`: approvals not yet decided; removed by the decision |
 * | `["approval_of_task", task_id]` | `{approval_id}`: the approval a dispatch task asked for |
 * | `["queue", "run" \| "task", id]` | `{owner, at}`: work queued for a worker (a daemon) to claim |
 * | `["notifications", ...]`, `["notification_unread", ...]`, `["notification_count", ...]`, `["notification_outbox", ...]`, `["notification_deliveries", ...]` | see `notifications.ts` |
 * | `["leases", ...]`, `["automations", ...]`, `["automation_slots", ...]`, `["automation_counts", ...]`, `["automation_total"]`, `["automation_names", ...]`, `["webhook_deliveries", ...]` | see `daemon.ts` |
 */
export const KEYS = {
  schema: ["meta", "schema"] as KvKey,
  run: (runId: string): KvKey => ["runs", runId],
  runsByOwner: (owner: string, runId?: string): KvKey =>
    runId === undefined ? ["runs_by_owner", owner] : ["runs_by_owner", owner, runId],
  allRuns: ["runs"] as KvKey,
  active: (runId?: string): KvKey => runId === undefined ? ["active"] : ["active", runId],
  ownerLive: (owner: string, runId?: string): KvKey =>
    runId === undefined ? ["owner_live", owner] : ["owner_live", owner, runId],
  ownerLiveHead: (owner: string): KvKey => ["owner_live_head", owner],
  ownerTasks: (owner: string, taskId?: string): KvKey =>
    taskId === undefined ? ["owner_tasks", owner] : ["owner_tasks", owner, taskId],
  ownerTasksHead: (owner: string): KvKey => ["owner_tasks_head", owner],
  allOwnerTasks: ["owner_tasks"] as KvKey,
  narration: (runId: string, seq?: number): KvKey =>
    seq === undefined ? ["narration", runId] : ["narration", runId, seq],
  security: (runId: string, seq?: number): KvKey =>
    seq === undefined ? ["security", runId] : ["security", runId, seq],
  journal: (runId: string, seq?: number): KvKey =>
    seq === undefined ? ["journal", runId] : ["journal", runId, seq],
  events: (runId: string, seq?: number): KvKey =>
    seq === undefined ? ["events", runId] : ["events", runId, seq],
  runCancel: (runId: string): KvKey => ["run_cancel", runId],
  runCancels: ["run_cancel"] as KvKey,
  feedTick: ["meta", "feed_tick"] as KvKey,
  host: (hostId: string): KvKey => ["hosts", hostId],
  hosts: ["hosts"] as KvKey,
  queue: (kind: "run" | "task", id?: string): KvKey =>
    id === undefined ? ["queue", kind] : ["queue", kind, id],
  task: (taskId: string): KvKey => ["tasks", taskId],
  activeTasks: (taskId?: string): KvKey =>
    taskId === undefined ? ["active_tasks"] : ["active_tasks", taskId],
  allTasks: ["tasks"] as KvKey,
  allSessions: ["sessions"] as KvKey,
  tasksByOwner: (owner: string, taskId?: string): KvKey =>
    taskId === undefined ? ["tasks_by_owner", owner] : ["tasks_by_owner", owner, taskId],
  taskEvents: (taskId: string, seq?: number): KvKey =>
    seq === undefined ? ["task_events", taskId] : ["task_events", taskId, seq],
  session: (sessionId: string): KvKey => ["sessions", sessionId],
  sessionName: (owner: string, name: string): KvKey => ["session_names", owner, name],
  sessionsByOwner: (owner: string, sessionId?: string): KvKey =>
    sessionId === undefined
      ? ["sessions_by_owner", owner]
      : ["sessions_by_owner", owner, sessionId],
  sessionMessages: (sessionId: string, seq?: number): KvKey =>
    seq === undefined ? ["session_messages", sessionId] : ["session_messages", sessionId, seq],
  calls: ["calls"] as KvKey,
  call: (at: string, id: string, seq: number): KvKey => ["calls", at, id, seq],
  activity: (owner: string, seq?: number): KvKey =>
    seq === undefined ? ["activity", owner] : ["activity", owner, seq],
  activityHead: (owner: string): KvKey => ["activity_head", owner],
  // Approvals (src/ledger/approvals.ts).
  approval: (approvalId: string): KvKey => ["approvals", approvalId],
  allApprovals: ["approvals"] as KvKey,
  approvalsByOwner: (owner: string, approvalId?: string): KvKey =>
    approvalId === undefined
      ? ["approvals_by_owner", owner]
      : ["approvals_by_owner", owner, approvalId],
  approvalsPending: (approvalId?: string): KvKey =>
    approvalId === undefined ? ["approvals_pending"] : ["approvals_pending", approvalId],
  approvalOfTask: (taskId: string): KvKey => ["approval_of_task", taskId],
};

/** Version of the KV schema this code writes. */
export const SCHEMA_VERSION = 1;

/**
 * Migrations from version `n` (index n - 1) to `n + 1`. Empty while there is one version;
 * a new version adds its step here and the ledger runs the missing ones on open.
 */
export const MIGRATIONS: ReadonlyArray<(kv: KvStore) => Promise<void>> = [];

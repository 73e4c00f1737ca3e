import type {
  ApprovalDecided,
  ApprovalDecision,
  ApprovalRecord,
  ApprovalState,
  ListApprovalsOptions,
} from "./approvals.ts";
import type { CallProgress } from "../schemas/mod.ts";
import type { ChatMessage } from "./chat.ts";
import type { CollaborationRecord } from "./collaborations.ts";
import type { A2aTaskListOptions, A2aTaskPage, A2aTaskRecord } from "./a2a_tasks.ts";
import type { Page, PageOptions } from "./pages.ts";
import type { ReviewRecord } from "./reviews.ts";
import type {
  ListNotificationsOptions,
  MarkRead,
  NotificationPage,
  NotificationRecord,
} from "./notifications.ts";
import type { NotificationDelivery } from "./notification_outbox.ts";
import type {
  AutomationQuota,
  AutomationRecord,
  AutomationRefusal,
  FiredSlot,
  LeaseState,
  WebhookDelivery,
} from "./daemon.ts";
import type {
  ActivityItem,
  CallRecord,
  EventStream,
  FeedItem,
  JournalEntry,
  NarrationEntry,
  RunEvent,
  RunInput,
  RunState,
  RunStatus,
  SecurityEvent,
  SessionRecord,
  TaskStatus,
} from "./records.ts";

/** The host that runs a run or a task, as recorded for crash recovery. */
export interface HostRef {
  /** The host's id, `host_...`, new for every process. */
  id: string;
  /** Its process id, to tell a dead host from a live one on the same machine. */
  pid: number;
  /** `daemon` for a daemon, whose queue worker claims queued work; absent for other hosts. */
  role?: "daemon";
  /** The providers this host can dispatch to (configured and available here). */
  providers?: readonly string[];
}

/** A host as the ledger knows it: the processes that share it. */
export interface HostInfo {
  /** The host's id. */
  host_id: string;
  /** Its process id. */
  pid: number;
  /** `daemon` (it claims queued work), or `host` (a command line, a dashboard, ...). */
  role: "daemon" | "host";
  /** When it started (ISO 8601). */
  started_at: string;
  /** Its last heartbeat (ISO 8601). */
  heartbeat_at: string;
  /** Whether it is alive: a fresh heartbeat, and its process exists where that can be checked. */
  alive: boolean;
  /** The name of the machine it runs on, where that can be read. */
  hostname?: string;
  /** The providers it can dispatch to, when it said. */
  providers?: string[];
}

/** Work waiting for a worker to claim it. */
export interface QueueItem {
  /** A run or a dispatch task. */
  kind: "run" | "task";
  /** Its id. */
  id: string;
  /** Its owner. */
  owner: string;
  /** When it was queued (ISO 8601). */
  queued_at: string;
  /** The provider it names: only a host where that provider is configured claims it. */
  provider?: string;
}

/** A run's event with its place in the run's feed. */
export interface RunEventAt {
  /** Its position in the run's feed, from 0. */
  seq: number;
  /** The event. */
  event: RunEvent;
}

/**
 * One write of a run. {@linkcode RunLedger.write} commits a list of them together, so a run's
 * burst of changes costs one commit. `status` is the run as it was at that write; `event` ops
 * are the run's feed, numbered by the run's host without gaps.
 */
export type LedgerOp =
  | {
    kind: "status";
    status: RunStatus;
    /** A `state` event here is a state change: it also enters the owner's activity stream. */
    event?: RunEventAt;
  }
  | { kind: "journal"; status: RunStatus; entry: JournalEntry }
  | { kind: "narration"; seq: number; entry: NarrationEntry }
  | { kind: "security"; seq: number; event: SecurityEvent }
  | { kind: "event"; event: RunEventAt };

/** A task event about the task's approval: which one, its state, and when that happened. */
export interface TaskApprovalNote {
  /** The approval (`apr_...`). */
  approval_id: string;
  /** Its state: `pending` when the task starts waiting, then the decision. */
  state: ApprovalState;
  /** When (ISO 8601): the event's time. */
  at: string;
  /** Once decided: who decided. */
  decided_by?: string;
  /** Once decided: why, in words. */
  reason?: string;
}

/** Options of {@linkcode RunLedger.listRuns}. */
export interface ListRunsOptions {
  /** Only this owner's runs; all owners' when absent. */
  owner?: string;
  /** Only runs in one of these states. */
  states?: readonly RunState[];
  /** Most runs returned. Default 100. */
  limit?: number;
  /**
   * Only runs older than this run id (a position: it need not exist), for paging: pass the
   * last id of the page before. Anything but a run id is refused (`invalid_request`).
   */
  before?: string;
}

/**
 * Options of the listings of tasks, sessions and calls. `before` pages: only records older
 * than it: a task id, a session id, or for calls a cursor made by `callCursor()`; anything
 * else is refused (`invalid_request`).
 */
export interface ListOptions {
  /** Only this owner's records; all owners' when absent. */
  owner?: string;
  /** Most records returned. */
  limit?: number;
  /** Only records older than this position. */
  before?: string;
}

/** What every ledger is: its data directory, whether hosts share it, its run and task folders, and its close. */
export interface LedgerCore {
  /** The data directory (`SVC_HOME`): run and task folders live under it. */
  readonly home: string;
  /**
   * Whether other hosts share this ledger (`SVC_LEDGER_URL`, a database), or it is the KV
   * file of this machine.
   */
  readonly shared: boolean;
  /** Closes the store; pending waits for events end. Resolves once its connections are closed. */
  close(): Promise<void>;
  /**
   * This host's directory of a run: the summary files (`status.json`, `result.json`) of the
   * runs it ended, and on the KV backend the script, input and large values too.
   */
  runDir(runId: string): string;
  /** This host's directory of a task (on the KV backend, its large results). */
  taskDir(taskId: string): string;
}

/** Runs: their records, inputs, journals, writes and cancels. */
export interface RunLedger {
  /**
   * Records a new run, its input (script, args, ...) and its first event (seq 0), as running on
   * `host`, or, with `host` null, queued for a worker to claim ({@linkcode QueueLedger.claimRun});
   * its state enters the owner's activity stream in the same commit. A run taken by `host`
   * takes its owner's live slot with it; with `ownerCap`, only while the owner has fewer live
   * runs on every host together, else nothing is recorded and the answer is false. The input is
   * written before the run exists, so whoever sees the run can read its input. `args` over
   * `MAX_ARGS_BYTES` as JSON are refused (`invalid_request`).
   */
  createRun(
    status: RunStatus,
    options: { input: RunInput; host: HostRef | null; event: RunEvent; ownerCap?: number },
  ): Promise<boolean>;
  /**
   * Commits a run's writes in order; a terminal status ends the run's feed and its cancel
   * request. Each state change enters the owner's activity stream with it.
   */
  write(runId: string, ops: LedgerOp[]): Promise<void>;
  /** The run's full status, or undefined when there is no such run. */
  getRun(runId: string): Promise<RunStatus | undefined>;
  /**
   * What the run was started with (its script, args, ...), or undefined when there is no such
   * run. A run recorded before args were kept reads without them.
   */
  getRunInput(runId: string): Promise<RunInput | undefined>;
  /** The run's journal in call order, results included. */
  getJournal(runId: string): Promise<JournalEntry[]>;
  /**
   * Statuses of runs (without narration), newest first. With `states`, at most
   * `RUN_SCAN_LIMIT` runs are examined, so a rare state may return fewer than `limit`.
   */
  listRuns(options?: ListRunsOptions): Promise<RunStatus[]>;
  /**
   * Asks the host running a run to cancel it, wherever it runs. False when the run is not
   * queued or running (ended, or unknown).
   */
  requestRunCancel(runId: string): Promise<boolean>;
  /** Which of these runs have a cancel asked for. */
  runCancelsRequested(runIds: readonly string[]): Promise<string[]>;
}

/** The event feeds of runs and tasks and the owners' activity streams, with waits for what comes next. */
export interface FeedLedger {
  /** Events of a stream after position `after` (all from the first when absent), in order. */
  readEvents(
    stream: EventStream,
    options?: { after?: number; limit?: number },
  ): Promise<FeedItem[]>;
  /**
   * The ledger's notification: resolves once the stream has an event after `after`, or at
   * `timeoutMs`, or when `signal` aborts (without throwing). Writes of any process count.
   */
  waitForEvents(
    stream: EventStream,
    options: { after: number; signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void>;

  /**
   * Items of an owner's activity stream (every state change of its runs and tasks) after
   * position `after` (all from the first when absent), in order.
   */
  readActivity(
    owner: string,
    options?: { after?: number; limit?: number },
  ): Promise<ActivityItem[]>;
  /** The position of the owner's newest activity item; -1 when it has none. */
  activityHead(owner: string): Promise<number>;
  /**
   * Resolves once the owner's activity stream has an item after `after`, or at `timeoutMs`, or
   * when `signal` aborts (without throwing). Writes of any process count.
   */
  waitForActivity(
    owner: string,
    options: { after: number; signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void>;
}

/** The hosts sharing the ledger, their crash recovery, and named leases among them. */
export interface HostLedger {
  /** Says that a host is alive. Hosts refresh it while they have work. */
  heartbeat(host: HostRef, startedAt: string): Promise<void>;
  /** Removes a host's record when it shuts down cleanly. */
  removeHost(host: HostRef): Promise<void>;
  /** Marks `interrupted` the runs of hosts that are gone; returns their ids. */
  recoverInterrupted(self: HostRef): Promise<string[]>;
  /**
   * Ends `interrupted`, from its committed record, a run of this host whose own writes failed;
   * false when it had already ended.
   */
  interruptRun(runId: string, error: { code: string; message: string }): Promise<boolean>;
  /** Marks `interrupted` the running tasks of hosts that are gone; returns their ids. */
  recoverInterruptedTasks(self: HostRef): Promise<string[]>;

  /** The hosts sharing this ledger, with their role and whether they are alive. */
  listHosts(): Promise<HostInfo[]>;
  /** Takes or renews a named lease for `holder` (one holder at a time; it expires after `ttlMs`). */
  acquireLease(name: string, options: { holder: string; ttlMs: number }): Promise<LeaseState>;
  /** Who holds a lease now, without asking for it. */
  readLease(name: string): Promise<LeaseState>;
  /** Gives a lease up, if `holder` holds it. */
  releaseLease(name: string, holder: string): Promise<void>;
}

/** Dispatch tasks: their records, saves and cancels. */
export interface TaskLedger {
  /**
   * Records a new task (queued) with its first event and its owner's activity item; with
   * `queue`, it waits in the queue for a worker to claim (by saving it with `expect: "queued"`).
   * Made by `host`, it takes its owner's live slot (freed when it ends, or when its host dies
   * before anyone took it up); with `ownerCap`, only while the owner has fewer live tasks on
   * every host together, else nothing is recorded and the answer is false.
   */
  createTask(
    task: TaskStatus,
    options?: { queue?: boolean; host?: HostRef; ownerCap?: number },
  ): Promise<boolean>;
  /** How many live (queued or running) tasks `owner` has, on every host sharing the ledger. */
  countOwnerTasks(owner: string): Promise<number>;
  /**
   * Saves a task; with `eventSeq`, its state change joins its feed and its owner's activity
   * stream (with `approval`, the event is about its approval instead, and no activity item is
   * added). With `expect`, only if the task is still in that state. Returns whether it was
   * written.
   */
  saveTask(
    task: TaskStatus,
    options?: {
      eventSeq?: number;
      expect?: TaskStatus["state"];
      approval?: TaskApprovalNote;
    },
  ): Promise<boolean>;
  /**
   * Appends a progress event (what the task's call did since the last one) to a running task's
   * feed at `eventSeq`, leaving its record as it is: a cancel another process asked for in the
   * record is never written over.
   */
  appendTaskProgress(
    taskId: string,
    options: { eventSeq: number; at: string; items: CallProgress[] },
  ): Promise<void>;
  /** A task's status, or undefined. */
  getTask(taskId: string): Promise<TaskStatus | undefined>;
  /** Tasks, newest first; only `owner`'s when given. */
  listTasks(options?: ListOptions): Promise<TaskStatus[]>;
  /** Marks a task's cancel as asked for; its worker, wherever it runs, sees it. */
  requestCancel(taskId: string): Promise<TaskStatus | undefined>;
}

/** Sessions and their messages. */
export interface SessionLedger {
  /** Records a new session; a name must be unique per owner. */
  createSession(session: SessionRecord): Promise<void>;
  /** A session by id, or undefined. */
  getSession(sessionId: string): Promise<SessionRecord | undefined>;
  /** An owner's session by name, or undefined. */
  findSession(owner: string, name: string): Promise<SessionRecord | undefined>;
  /** Sessions, newest first; only `owner`'s when given. */
  listSessions(options?: ListOptions): Promise<SessionRecord[]>;
  /** An API session's messages, oldest first. */
  getSessionMessages(sessionId: string): Promise<ChatMessage[]>;
  /** Saves a session after a turn, with the turn's messages, in one write. */
  saveSessionTurn(session: SessionRecord, messages: ChatMessage[]): Promise<void>;
}

/** The call log of runs' calls and tasks. */
export interface CallLedger {
  /** The call log (runs' calls and tasks), newest first; only `owner`'s when given. */
  listCalls(options?: ListOptions): Promise<CallRecord[]>;
}

/** Review runs and what they review. */
export interface ReviewLedger {
  /** Records that a run is a review run, and over what. */
  saveReview(record: ReviewRecord): Promise<void>;
  /** The review record of a run, or undefined when the run is no review. */
  getReview(runId: string): Promise<ReviewRecord | undefined>;
  /** Review records, newest first, a page at a time; only `owner`'s when given. */
  listReviews(options: PageOptions): Promise<Page<ReviewRecord>>;
}

/** Collaborations between runs. */
export interface CollaborationLedger {
  /** Writes a collaboration: with `create` only a new id, otherwise only an existing one. */
  saveCollaboration(record: CollaborationRecord, options: { create: boolean }): Promise<boolean>;
  /** A collaboration by id, or undefined. */
  getCollaboration(id: string): Promise<CollaborationRecord | undefined>;
  /** Collaborations, newest first, a page at a time; only `owner`'s when given. */
  listCollaborations(options: PageOptions): Promise<Page<CollaborationRecord>>;
}

/** Calls and dispatches waiting for a person to approve them. */
export interface ApprovalLedger {
  /** Records a new pending approval. */
  createApproval(record: ApprovalRecord): Promise<void>;
  /** An approval by id, or undefined. */
  getApproval(approvalId: string): Promise<ApprovalRecord | undefined>;
  /** The approval a dispatch task asked for, or undefined. */
  approvalOfTask(taskId: string): Promise<ApprovalRecord | undefined>;
  /** Approvals, newest first: one state's, or pending ones first; `before` continues a listing. */
  listApprovals(options?: ListApprovalsOptions): Promise<ApprovalRecord[]>;
  /**
   * Decides a pending approval atomically; one decided already is returned as it is, with
   * `decided: false`. Undefined when there is no such approval.
   */
  decideApproval(
    approvalId: string,
    decision: { state: ApprovalDecision; by: string; reason?: string; at?: string },
  ): Promise<ApprovalDecided | undefined>;
}

/** Queued runs and tasks and their claims by workers. */
export interface QueueLedger {
  /** Queued runs and tasks (or, with `kind`, only runs or tasks) no worker has claimed yet, oldest first. */
  listQueue(options?: { limit?: number; kind?: "run" | "task" }): Promise<QueueItem[]>;
  /**
   * Claims a queued run for `host`: takes it off the queue and records the host, with the
   * owner's live slot, atomically, so that two workers never both get it. `not_queued` when it
   * is not (or no longer) queued; `owner_full` when `ownerCap` is given and the owner has that
   * many live runs on every host together (the run stays queued).
   */
  claimRun(runId: string, host: HostRef, options?: { ownerCap?: number }): Promise<ClaimOutcome>;
  /**
   * How many live runs `owner` has, on every host sharing the ledger: what
   * `admission.owner_live_runs` caps.
   */
  countOwnerLive(owner: string): Promise<number>;
  /**
   * How many runs of `owner` (everyone's without it) wait in the queue and how many a host has
   * taken (from its record or its claim to its end), read without the runs' documents.
   */
  countActiveRuns(owner?: string): Promise<ActiveRunCounts>;
}

/** What {@linkcode QueueLedger.claimRun} did. */
export type ClaimOutcome = "claimed" | "not_queued" | "owner_full";

/** Runs waiting in the queue, and runs a host has taken (running, or about to). */
export interface ActiveRunCounts {
  /** Runs waiting in the queue for a host to claim them. */
  queued: number;
  /** Runs a host has recorded or claimed, until they end. */
  running: number;
}

/** The daemon's records: automations, their fired slots, and webhook deliveries. */
export interface DaemonLedger {
  /**
   * Saves an automation made through the API, unless a quota is reached or its owner has one of
   * that name (then says why): checked and counted in one atomic commit.
   */
  saveAutomation(
    record: AutomationRecord,
    quota?: AutomationQuota,
  ): Promise<AutomationRefusal | undefined>;
  /** Automations made through the API, oldest first. */
  listAutomations(): Promise<AutomationRecord[]>;
  /** Deletes an automation made through the API; false when there is none. */
  deleteAutomation(automationId: string): Promise<boolean>;
  /** The last slot an automation fired, or undefined. */
  lastSlot(automationId: string): Promise<FiredSlot | undefined>;
  /** Claims a slot of an automation: true once per slot, and only for a slot after the last. */
  claimSlot(automationId: string, slot: string): Promise<boolean>;
  /** Records what a claimed slot started. */
  saveSlot(automationId: string, fired: FiredSlot): Promise<void>;
  /**
   * Records a new webhook delivery; one whose replay key the hook recorded within the last
   * `windowMs` records nothing and returns the delivery recorded first.
   */
  claimDelivery(
    delivery: WebhookDelivery,
    options: { windowMs: number },
  ): Promise<WebhookDelivery | undefined>;
  /**
   * Saves what a delivery started (with `duplicate`, only notes the repeat) and adds it to the
   * hook owner's activity stream.
   */
  saveDelivery(delivery: WebhookDelivery, options?: { duplicate?: boolean }): Promise<void>;
}

/** Tasks of the A2A protocol. */
export interface A2aTaskLedger {
  /** Writes an owner's A2A task (indexing it on its first write); false when it changed meanwhile. */
  saveA2aTask(record: A2aTaskRecord): Promise<boolean>;
  /** An owner's A2A task by id, or undefined (another owner's too). */
  getA2aTask(owner: string, taskId: string): Promise<A2aTaskRecord | undefined>;
  /** An owner's A2A tasks, newest first, a page at a time. */
  listA2aTasks(owner: string, options: A2aTaskListOptions): Promise<A2aTaskPage>;
}

/**
 * Owners' notifications (src/ledger/notifications.ts): derived from the activity stream in the
 * commits that append to it, so none is missed or doubled whichever host wrote the change; their
 * read state per owner; and the outbox and deliveries of the outbound deliverer.
 */
export interface NotificationLedger {
  /** A page of an owner's notifications, newest first, with the unread count. */
  listNotifications(owner: string, options: ListNotificationsOptions): Promise<NotificationPage>;
  /** How many of an owner's notifications are unread. */
  unreadNotifications(owner: string): Promise<number>;
  /** Marks an owner's notifications read; other owners' ids mark nothing. */
  markNotificationsRead(owner: string, what: MarkRead): Promise<{ marked: number; unread: number }>;
  /** One notification of an owner, or undefined. */
  getNotification(owner: string, seq: number): Promise<NotificationRecord | undefined>;
  /** Notifications whose outbound delivery has not ended, every owner's, at most `limit`. */
  listNotificationOutbox(limit: number): Promise<{ owner: string; seq: number; at: string }[]>;
  /** Takes a notification out of the outbox once every delivery of it ended. */
  leaveNotificationOutbox(owner: string, seq: number): Promise<void>;
  /** A notification's deliveries, one per endpoint. */
  listNotificationDeliveries(owner: string, seq: number): Promise<NotificationDelivery[]>;
  /** Records a delivery and its last attempt (while its notification is kept). */
  saveNotificationDelivery(delivery: NotificationDelivery): Promise<void>;
}

/**
 * The durable store of svc: runs, journals, the event feed, tasks, sessions, the call log and
 * the hosts that work on them, as the intersection of one interface per domain. Everything
 * above `src/ledger/` talks to these interfaces and never to a storage engine; a service takes
 * the narrow one it uses. `openLedger()` opens the Deno KV file of `SVC_HOME`, or with a `url`
 * the same ledger in a Postgres database several hosts share.
 */
export interface Ledger
  extends
    LedgerCore,
    RunLedger,
    FeedLedger,
    HostLedger,
    TaskLedger,
    SessionLedger,
    CallLedger,
    ReviewLedger,
    CollaborationLedger,
    ApprovalLedger,
    QueueLedger,
    DaemonLedger,
    A2aTaskLedger,
    NotificationLedger {}

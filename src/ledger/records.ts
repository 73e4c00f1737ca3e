import type { ErrorCode } from "../errors/mod.ts";
import type {
  CallProgress,
  CallsReplayedEvent,
  IsolationTier,
  JsonValue,
  SandboxLevel,
} from "../schemas/mod.ts";
import type { ApprovalState } from "./approvals.ts";

/** States of a run. `interrupted` is set by the next host when one died while the run ran. */
export type RunState =
  | "queued"
  | "running"
  | "succeeded"
  | "failed"
  | "cancelled"
  | "timeout"
  | "interrupted";

/** Every state of a run or a task, in the order of their lives. */
export const RUN_STATES: readonly RunState[] = [
  "queued",
  "running",
  "succeeded",
  "failed",
  "cancelled",
  "timeout",
  "interrupted",
];

/** States a run or a task (whose `TaskState` is a `RunState`) never leaves. */
export const TERMINAL_STATES: ReadonlySet<RunState> = new Set([
  "succeeded",
  "failed",
  "cancelled",
  "timeout",
  "interrupted",
]);

/** Whether a run or a task in `state` has ended: it never changes state again. */
export function isTerminal(state: RunState): boolean {
  return TERMINAL_STATES.has(state);
}

/** One line of narration, stamped by the host when it arrived. */
export interface NarrationEntry {
  /** When the host received it (ISO 8601). */
  at: string;
  /**
   * `phase` and `log` come from the script; `output` is stray output; `call` reports a failure:
   * an `agent()` call that failed, or an item of `parallel()`/`pipeline()` that threw; `warning`
   * is something the host accepted but a person should know (an unknown meta field).
   */
  kind: "phase" | "log" | "output" | "call" | "warning";
  /** The line itself, clipped to the narration limit. */
  text: string;
  /** For `output`: which stream of the guest it came from. */
  stream?: "stdout" | "stderr";
}

/** Something the host dropped from the guest, with why. */
export interface SecurityEvent {
  /** When the host dropped it (ISO 8601). */
  at: string;
  /** What was dropped, e.g. `malformed_frame`. */
  kind: string;
  /** Why, in words (clipped). */
  detail: string;
}

/** A condition the run raised, such as `BudgetExceeded`; `data` holds its figures. */
export interface RunCondition {
  /** When it was raised (ISO 8601). */
  at: string;
  /** Which condition: a limit the run hit, or a result that failed its schema. */
  type:
    | "BudgetExceeded"
    | "AgentLimitExceeded"
    | "SchemaValidationFailed"
    | "UnpricedCall"
    | "LedgerLimitExceeded";
  /** What happened, in words. */
  message: string;
  /** The figures behind it, e.g. the budget's cap and spending. */
  data?: Record<string, JsonValue>;
}

/**
 * An item of `parallel()` or `pipeline()` that threw (its result became null): where, the label
 * of the `agent()` call the error came from if it had one, and the error with its position in
 * the script.
 */
export interface ScriptErrorRecord {
  /** When the item threw (ISO 8601). */
  at: string;
  /** The primitive whose item threw. */
  fn: "parallel" | "pipeline";
  /** The item's index in the array, from 0. */
  index: number;
  /** For a pipeline, the stage that threw, from 0; null for parallel(). */
  stage: number | null;
  /** The label of the `agent()` call the error came from, if it had one. */
  label: string | null;
  /** The error's name, e.g. `TypeError`. */
  name: string;
  /** The error's message (clipped). */
  message: string;
  /** The script file where it was thrown. */
  file?: string;
  /** Its line, from 1. */
  line?: number;
  /** Its column, from 1. */
  column?: number;
}

/**
 * Why `agent()` calls returned null: refusals before dispatch (`agent_limit`, `budget`,
 * `unpriced`), results that failed their schema or could not be recorded, calls stopped with
 * the run, and dispatch failures by their error code (`provider_failed`, `provider_timeout`,
 * `invalid_request` for an unknown provider, ...).
 */
export type FailureCause =
  | "agent_limit"
  | "budget"
  | "unpriced"
  | "schema_validation"
  | "ledger_limit"
  | "stopped"
  | ErrorCode;

/** How many calls returned null for each cause; causes with none are absent. */
export type FailureCounts = Partial<Record<FailureCause, number>>;

/** Why a run did not succeed. */
export interface RunError {
  /** A machine code, e.g. `script_error`, `guest_crashed` or an {@linkcode ErrorCode}. */
  code: string;
  /** What went wrong, in words. */
  message: string;
  /** For script errors: the file, line and column where it was thrown. */
  file?: string;
  /** The line, from 1. */
  line?: number;
  /** The column, from 1. */
  column?: number;
  /** The script's stack frames, mapped to its own lines and clipped. */
  stack?: string;
}

/** Counts of the run's `agent()` calls. */
export interface CallCounts {
  /** Calls the script made, replays and refusals included. */
  total: number;
  /** Calls waiting for a permit. */
  queued: number;
  /** Calls being dispatched now. */
  running: number;
  /** Calls that returned a value from a provider. */
  succeeded: number;
  /** Calls that failed and returned null. */
  failed: number;
  /** Calls answered from a resumed run's journal. */
  replayed: number;
  /** Calls refused before dispatch (agent limit, budget, no price). */
  skipped: number;
}

/** Usage of calls. `cost_usd` is null when some call's cost is unknown (unmetered). */
export interface UsageTotals {
  /** Input tokens of every call. */
  input_tokens: number;
  /** Output tokens of every call. */
  output_tokens: number;
  /** Cost in USD; null when some call's cost is unknown. */
  cost_usd: number | null;
}

/** One axis of the budget: its cap (null: none), committed usage and reservations of running calls. */
export interface BudgetAxis {
  /** The cap; null when this axis has none. */
  cap: number | null;
  /** Usage of calls that ended. */
  committed: number;
  /** Estimates held for calls still running. */
  reserved: number;
}

/** The run's budget figures. `total`, `spent` and `remaining` are in `unit`. */
export interface BudgetFigures {
  /** The budget in `unit`; null without one. */
  total: number | null;
  /** The unit of `total`, `spent` and `remaining`: the axis the run was given. */
  unit: "tokens" | "usd";
  /** Spent so far, in `unit`. */
  spent: number;
  /** Left, in `unit`; null without a budget. */
  remaining: number | null;
  /** The token axis. */
  tokens: BudgetAxis;
  /** The USD axis. */
  usd: BudgetAxis;
}

/** Summary of the run's journal. */
export interface JournalSummary {
  /** Calls counted, journaled or not. */
  calls: number;
  /** Calls answered from a resumed run's journal. */
  replayed: number;
  /** Calls dispatched to a provider. */
  live: number;
  /** Calls that failed. */
  failed: number;
  /** Calls refused before dispatch. */
  skipped: number;
  /**
   * Skipped calls counted above but kept as no entry: only the first call refused for each
   * reason (agent limit, budget, no price) is journaled; later ones are counted.
   */
  omitted: number;
  /** Usage and cost of the journaled calls. */
  usage: UsageTotals;
}

/**
 * What a run was started with that its status does not keep: the script, and the request's
 * `args`, `schema_attempts` and `script_dir`. Together with the status it is the whole request,
 * so a run can be started again from the ledger (a resume; a queued run taken by another host).
 * Runs recorded before svc kept it read with the script alone.
 */
export interface RunInput {
  /** The script's source, as given. */
  script: string;
  /** The `args` the script got; absent when it got none (or the run predates their recording). */
  args?: JsonValue;
  /** Attempts of a schema call whose result fails validation; absent for older runs. */
  schema_attempts?: number;
  /** The folder the script came from (set by the command line), for its relative `workflow()` refs. */
  script_dir?: string;
  /**
   * What the host decided when the run was asked for and narrates when it starts (a field
   * ignored, a limit clamped): kept so that a queued run started later says it too.
   */
  notes?: string[];
}

/** What started a run or a task that no caller started directly. */
export type WorkTrigger =
  | { kind: "automation"; automation_id: string; slot: string }
  | { kind: "webhook"; hook: string; delivery_id: string };

/**
 * The surface that asked for a run: the command line, the HTTP API (the page, curl), a tool
 * protocol client, an agent-to-agent client, the daemon (for an automation or a webhook), the
 * review service, or code of this host that did not say.
 */
export type StartSurface = "cli" | "api" | "mcp" | "a2a" | "daemon" | "review" | "host";

/** What started a run: recorded when it is, bounded, holding ids and configured names only. */
export interface StartedBy {
  /** The surface that asked. */
  via: StartSurface;
  /**
   * In words: `the command line`, `resume of run_… via the HTTP API`, `automation nightly`,
   * `webhook github`, `… for card 12`.
   */
  text: string;
}

/** The status object of a run: what `GET /api/workflow/{run_id}` and `--json` return. */
export interface RunStatus {
  /** The run's id (`run_...`). */
  run_id: string;
  /** Where the run is in its life. */
  state: RunState;
  /** Whose run it is: only its owner sees it. */
  owner: string;
  /** The script's `meta.name`, if it has one. */
  name: string | null;
  /** The script's meta: name, description, `whenToUse` and the phase titles. */
  meta: { name?: string; description?: string; whenToUse?: string; phases?: string[] };
  /** The script's file name, as in messages and stack traces. */
  filename: string;
  /** What the run is for, in a line, as its request gave it (`title`). */
  title?: string;
  /** A longer description of the run, as its request gave it (`description`). */
  description?: string;
  /** Where the script is evaluated. */
  isolation: IsolationTier;
  /** The sandbox level of a call that names none. */
  sandbox_default: SandboxLevel;
  /** The ceiling of its calls' sandbox levels (`sandbox_max`, else `sandbox_default`). */
  sandbox_max: SandboxLevel;
  /** The run's working directory, if it was given one. */
  workdir: string | null;
  /** Whether every call gets the fake provider's answer. */
  fake_dispatch: boolean;
  /** Seconds the run may take. */
  timeout: number;
  /** The run this one resumed from, if any. */
  resumed_from: string | null;
  /** What started the run when no caller did directly: an automation's slot or a webhook delivery. */
  trigger?: WorkTrigger;
  /** What started the run (absent on runs recorded before it was kept). */
  started_by?: StartedBy;
  /** The board card the run was started for (its number), when it was. */
  card_id?: string;
  /**
   * A queued run's 1-based place in the queue (owners take turns), as read; never stored.
   */
  queue_position?: number;
  /** When the run was recorded (ISO 8601). */
  created_at: string;
  /** When its script started, once it did. */
  started_at: string | null;
  /** When it ended, once it did. */
  ended_at: string | null;
  /** The script's return value, when it succeeded. */
  result?: JsonValue;
  /** Why it did not succeed. */
  error?: RunError;
  /** The run's narration so far, oldest first (bounded). */
  narration: NarrationEntry[];
  /** How many narration entries were dropped because the run exceeded its narration cap. */
  narration_dropped: number;
  /** Conditions the run raised, such as `BudgetExceeded`. */
  conditions: RunCondition[];
  /** How many conditions were dropped because the status holds a bounded number (and size) of them. */
  conditions_dropped: number;
  /** What the host dropped from the guest, with why (bounded). */
  security_events: SecurityEvent[];
  /** How many more there were than `security_events` keeps. */
  security_events_dropped: number;
  /** Items of `parallel()`/`pipeline()` that threw, first ones first (a bounded number of them). */
  script_errors: ScriptErrorRecord[];
  /** How many more threw than `script_errors` keeps. */
  script_errors_dropped: number;
  /** Calls that returned null (failed or refused), by cause. */
  failures: FailureCounts;
  /**
   * The run was not under fake dispatch, yet the only provider was the fake one (no provider
   * configured): every call got a fake answer.
   */
  fake_provider_only: boolean;
  /** What confined the run's guest, once it started (absent before, and in older records). */
  guest_sandbox?: GuestSandbox;
  /** The run's own limits: `agent()` calls in all, and calls at once. */
  limits: { max_agents: number; concurrency: number };
  /** The budget and what was spent against it. */
  budget: BudgetFigures;
  /** Counts of the run's `agent()` calls. */
  calls: CallCounts;
  /** Summary of the run's journal. */
  journal: JournalSummary;
}

/** What confined a run's guest beyond a permissionless process (the run's `guest_sandbox`). */
export interface GuestSandbox {
  /** The mechanism: `bubblewrap` (Linux), `sandbox-exec` (macOS), `microvm`, or `none`. */
  kind: "bubblewrap" | "sandbox-exec" | "microvm" | "none";
  /** Whether an OS-level sandbox or a virtual machine confined the guest. */
  hardened: boolean;
  /** Why it is not hardened (`SVC_WORKFLOW_SANDBOX=off`, bwrap missing, ...), or null. */
  note: string | null;
  /** The accelerator of a `qemu` micro-VM: `kvm`, or `tcg` (software emulation). */
  accel?: "kvm" | "tcg";
}

/** How a journaled call ended. */
export type CallOutcome = "live" | "replayed" | "failed" | "skipped";

/** One `agent()` call as the journal keeps it. */
export interface JournalEntry {
  /** Position in call-start order, from 1. */
  seq: number;
  /**
   * The call's logical position in its script, which timing cannot change: steps of a branch
   * at even depths, branches of a fan-out at odd ones (docs/SCRIPTS.md, "Resume"). Resume
   * matches calls by it. Absent on entries from before positions, and for calls nested deeper
   * than 32 fan-outs.
   */
  position?: number[];
  /** SHA-256 of the prompt and the canonicalised options: what resume matches on. */
  hash: string;
  /** The call's `label` option. */
  label: string | null;
  /** The call's `phase` option, when it had one. */
  phase?: string;
  /** How the call ended. */
  outcome: CallOutcome;
  /** The call's value (text or object); absent for failed and skipped calls. */
  result?: JsonValue;
  /** The provider that answered; null when none did. */
  provider: string | null;
  /** The model that answered, when known. */
  model: string | null;
  /** Tokens the call used. */
  usage: { input_tokens: number; output_tokens: number };
  /** Cost in USD; null when unknown (unmetered). */
  cost_usd: number | null;
  /** Dispatches this call took (more than one when schema validation retried). */
  attempts: number;
  /** When the call started (ISO 8601). */
  started_at: string;
  /** When it ended (ISO 8601). */
  ended_at: string;
  /** How long it took, in milliseconds. */
  duration_ms: number;
  /** Why the call failed or was skipped. */
  reason?: string;
  /** For replayed calls: the run whose journal supplied the result. */
  replayed_from?: string;
  /** Why the call went to its provider (profile, by name, or the `auto` routing decision). */
  route?: string;
  /** The sandbox level the kernel admitted. */
  sandbox?: "read-only" | "write" | "full";
  /** Why the sandbox level was clamped, when it was. */
  sandbox_clamped?: string;
  /** With `isolation: "worktree"`: the worktree the call ran in, removed (clean) or kept with its diff. */
  worktree?: { path: string; branch: string; kept: boolean; diff?: string };
}

/**
 * One event of a run's feed. Every event carries the host's timestamp; a terminal `state`
 * event is the last of the feed.
 */
export type RunEvent =
  | { type: "state"; run_id: string; at: string; state: RunState }
  | { type: "narration"; run_id: string; at: string; entry: NarrationEntry }
  | {
    type: "calls";
    run_id: string;
    at: string;
    calls: CallCounts;
    /** Usage of the calls journaled so far, for progress displays. */
    usage: UsageTotals;
  }
  | {
    type: "call";
    run_id: string;
    at: string;
    seq: number;
    outcome: CallOutcome;
    label: string | null;
  }
  | CallsReplayedEvent
  | {
    /**
     * A live `agent()` call was dispatched (it took its slot under the run's concurrency cap):
     * what runs now, before its `call` event says how it ended.
     */
    type: "call_started";
    run_id: string;
    at: string;
    /** The call's number in the journal. */
    seq: number;
    label: string | null;
    /** The call's `phase` option, else the phase the script narrated last; null before any. */
    phase: string | null;
    /** The call's logical position in its script (as in the journal); null when it has none. */
    position: number[] | null;
  }
  | { type: "condition"; run_id: string; at: string; condition: RunCondition }
  | {
    type: "approval";
    run_id: string;
    at: string;
    /** The approval (`apr_...`): `pending` when the call starts waiting, then its decision. */
    approval_id: string;
    state: ApprovalState;
    /** The call's number in the journal. */
    seq: number;
    label: string | null;
    /** Once decided: who decided (a person, or `svc` when the call stopped waiting). */
    decided_by?: string;
    /** Once decided: why, in words, as the approval record keeps it (clipped there). */
    reason?: string;
  }
  | { type: "security"; run_id: string; at: string; event: SecurityEvent }
  | {
    type: "progress";
    run_id: string;
    at: string;
    /** The call's number in the journal (its `call` event comes after its last progress). */
    seq: number;
    /** What the call did since its previous progress event, redacted and bounded. */
    items: CallProgress[];
  };

/** States of an asynchronous dispatch (a task): a run's, with the same terminal ones. */
export type TaskState = RunState;

/** The status of a task: what `svc task status` and `GET /api/dispatch/{task_id}` return. */
export interface TaskStatus {
  /** The task's id (`task_...`). */
  task_id: string;
  /** Whose task it is: only its owner sees it. */
  owner: string;
  /** Where the task is in its life. */
  state: TaskState;
  /** The prompt sent. */
  prompt: string;
  /** The call's options as given (`agent()`'s options). */
  options: Record<string, JsonValue>;
  /** The task's `label` option. */
  label: string | null;
  /** Seconds the task may take. */
  timeout: number;
  /** Whether the fake provider answers instead of a real one. */
  fake_dispatch: boolean;
  /** Attempts a schema call may take before it fails. */
  schema_attempts: number;
  /** When the task was recorded (ISO 8601). */
  created_at: string;
  /** When its dispatch started, once it did. */
  started_at: string | null;
  /** When it ended, once it did. */
  ended_at: string | null;
  /** The answer (text or object), when it succeeded. */
  result?: JsonValue;
  /** Why it did not succeed: an error code and a message. */
  error?: { code: string; message: string };
  /** The provider that took the call, once routed. */
  provider: string | null;
  /** The model that answered, when known. */
  model: string | null;
  /** Why the call went to its provider. */
  route: string | null;
  /** The sandbox level the kernel admitted. */
  sandbox: "read-only" | "write" | "full" | null;
  /** Why the sandbox level was clamped, when it was. */
  sandbox_clamped: string | null;
  /** Tokens the call used. */
  usage: { input_tokens: number; output_tokens: number };
  /** Cost in USD; null when unknown (unmetered). */
  cost_usd: number | null;
  /** The svc session the task continued, if any. */
  session_id: string | null;
  /** The worktree the task ran in (`isolation: "worktree"`), and whether it was kept. */
  worktree: { path: string; branch: string; kept: boolean; diff?: string } | null;
  /** Set by `cancel`; a worker in another process polls it. */
  cancel_requested: boolean;
  /** The host (process) running the task, while it runs. */
  host_id: string | null;
  /** What started the task when no caller did directly: an automation's slot or a webhook delivery. */
  trigger?: WorkTrigger;
  /**
   * While the task waits for a person to approve its `full` sandbox: the approval's id
   * (`apr_...`), to decide with `POST /api/tasks/{task_id}/approve` or `deny`.
   */
  waiting_for_approval?: string;
}

/** An event of a task: its state changes, in order. */
export interface TaskEvent {
  /** When the task entered the state (ISO 8601). */
  at: string;
  /** The task. */
  task_id: string;
  /** The state it entered (for an approval event: the state it is in, `running`). */
  state: TaskState;
  /**
   * Present on an event about the task's approval: it started waiting for a person (`pending`)
   * or the approval was decided. The task's state did not change.
   */
  approval?: { approval_id: string; state: ApprovalState; decided_by?: string; reason?: string };
  /**
   * Present on a progress event: what the task's call did since its previous progress event,
   * redacted and bounded (as a run's `progress` event). The task's state did not change.
   */
  progress?: CallProgress[];
}

/** A stream of the event feed: the events of one run or of one task. */
export type EventStream = { kind: "run"; id: string } | { kind: "task"; id: string };

/**
 * One event of a feed with its position: `seq` counts from 0 in its stream, without gaps or
 * repeats, so that a reader that saw up to `seq` resumes with `after: seq`.
 */
export interface FeedItem<E = RunEvent | TaskEvent> {
  /** The event's position in its stream, from 0. */
  seq: number;
  /** The event as it was recorded. */
  event: E;
}

/** Whether an event is the last of its stream: a change to a state that is never left. */
export function endsStream(event: RunEvent | TaskEvent): boolean {
  if ("type" in event) return event.type === "state" && TERMINAL_STATES.has(event.state);
  return TERMINAL_STATES.has(event.state);
}

/**
 * One state change of a run or a task in its owner's activity stream: what a board of the
 * owner's runs and tasks follows. `seq` counts from 0 per owner without gaps; the item commits
 * with the change it describes.
 */
export interface ActivityItem {
  /** Its position in the owner's stream, from 0. */
  seq: number;
  /** When the run or task entered the state (ISO 8601), as its own feed's event says. */
  at: string;
  /**
   * Whether a run or a task changed state, a webhook delivery was handled, or a call or
   * dispatch started waiting for a person's approval.
   */
  kind: "run" | "task" | "webhook" | "approval";
  /** The run's or task's id; for a webhook delivery, the hook's name; for an approval, its id. */
  id: string;
  /**
   * The state the run or task entered; for a webhook delivery, its outcome (`accepted`: what
   * it starts is queued; `failed`: starting it was refused; `duplicate`: a repeated delivery);
   * `pending` for an approval asked for.
   */
  state: RunState | "accepted" | "failed" | "duplicate" | "pending";
  /** The error code of a run or task that ended without success. */
  code?: string;
  /** The budget or limit an ended run or task hit (a run condition's type, or an error code). */
  limit?: string;
  /** A run's `meta.name`, when its script has one. */
  name?: string;
  /** A webhook delivery's id. */
  delivery_id?: string;
  /** The run a webhook delivery started, or whose call waits for approval. */
  run_id?: string;
  /** The task a webhook delivery started, or that waits for approval. */
  task_id?: string;
}

/** A persistent multi-turn conversation with one provider. */
export interface SessionRecord {
  /** The session's id (`ses_...`). */
  session_id: string;
  /** Whose session it is: only its owner sees it. */
  owner: string;
  /** A name the owner gave it, to continue it by name. */
  name: string | null;
  /** The provider it talks to; fixed by its first turn when not given at creation. */
  provider: string | null;
  /** The profile it was created with, if any. */
  profile: string | null;
  /** A harness's own session id, updated after every turn (some tools return a new one). */
  harness_session_id: string | null;
  /** Turns taken so far. */
  turns: number;
  /** When it was created (ISO 8601). */
  created_at: string;
  /** When its last turn ended (ISO 8601). */
  updated_at: string;
}

/** One dispatch of any origin (a run's call or a task), for history, statistics and costs. */
export interface CallRecord {
  /** When the call ended (ISO 8601). */
  at: string;
  /** Whether a run's `agent()` call or a task made it. */
  source: "run" | "task";
  /** The run or task id. */
  id: string;
  /** The call's position in the run's journal (1 for a task). */
  seq: number;
  /** Whose call it was. */
  owner: string;
  /** The provider that answered; null when none did. */
  provider: string | null;
  /** The model that answered, when known. */
  model: string | null;
  /** How it ended: a run call's outcome, or a task's end state. */
  outcome: CallOutcome | "succeeded" | "cancelled" | "timeout";
  /** How long it took, in milliseconds. */
  duration_ms: number;
  /** Tokens it used. */
  usage: { input_tokens: number; output_tokens: number };
  /** Cost in USD; null when unknown (unmetered). */
  cost_usd: number | null;
  /**
   * How many calls the record stands for, from `seq` on: a resume records its replayed calls
   * (which cost nothing and took no time) as one record per packed write, not one each.
   * Absent means 1.
   */
  count?: number;
}

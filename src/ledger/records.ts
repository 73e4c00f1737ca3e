import type { ErrorCode } from "../errors/mod.ts";
import type { IsolationTier, JsonValue, SandboxLevel } from "../schemas/mod.ts";

/** States of a run. `interrupted` is set by the next host when one died while the run ran. */
export type RunState =
  | "queued"
  | "running"
  | "succeeded"
  | "failed"
  | "cancelled"
  | "timeout"
  | "interrupted";

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
  at: string;
  /**
   * `phase` and `log` come from the script; `output` is stray output; `call` reports a failure:
   * an `agent()` call that failed, or an item of `parallel()`/`pipeline()` that threw; `warning`
   * is something the host accepted but a person should know (an unknown meta field).
   */
  kind: "phase" | "log" | "output" | "call" | "warning";
  text: string;
  stream?: "stdout" | "stderr";
}

/** Something the host dropped from the guest, with why. */
export interface SecurityEvent {
  at: string;
  kind: string;
  detail: string;
}

/** A condition the run raised, such as `BudgetExceeded`; `data` holds its figures. */
export interface RunCondition {
  at: string;
  type:
    | "BudgetExceeded"
    | "AgentLimitExceeded"
    | "SchemaValidationFailed"
    | "UnpricedCall"
    | "LedgerLimitExceeded";
  message: string;
  data?: Record<string, JsonValue>;
}

/**
 * An item of `parallel()` or `pipeline()` that threw (its result became null): where, the label
 * of the `agent()` call the error came from if it had one, and the error with its position in
 * the script.
 */
export interface ScriptErrorRecord {
  at: string;
  fn: "parallel" | "pipeline";
  /** The item's index in the array, from 0. */
  index: number;
  /** For a pipeline, the stage that threw, from 0; null for parallel(). */
  stage: number | null;
  label: string | null;
  name: string;
  message: string;
  file?: string;
  line?: number;
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
  code: string;
  message: string;
  /** For script errors: the file, line and column where it was thrown. */
  file?: string;
  line?: number;
  column?: number;
  stack?: string;
}

/** Counts of the run's `agent()` calls. */
export interface CallCounts {
  total: number;
  queued: number;
  running: number;
  succeeded: number;
  failed: number;
  replayed: number;
  skipped: number;
}

/** Usage of calls. `cost_usd` is null when some call's cost is unknown (unmetered). */
export interface UsageTotals {
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
}

/** One axis of the budget: its cap (null: none), committed usage and reservations of running calls. */
export interface BudgetAxis {
  cap: number | null;
  committed: number;
  reserved: number;
}

/** The run's budget figures. `total`, `spent` and `remaining` are in `unit`. */
export interface BudgetFigures {
  total: number | null;
  unit: "tokens" | "usd";
  spent: number;
  remaining: number | null;
  tokens: BudgetAxis;
  usd: BudgetAxis;
}

/** Summary of the run's journal. */
export interface JournalSummary {
  calls: number;
  replayed: number;
  live: number;
  failed: number;
  skipped: number;
  /**
   * Skipped calls counted above but kept as no entry: only the first call refused for each
   * reason (agent limit, budget, no price) is journaled; later ones are counted.
   */
  omitted: number;
  usage: UsageTotals;
}

/** The status object of a run: what `GET /api/workflow/{run_id}` and `--json` return. */
export interface RunStatus {
  run_id: string;
  state: RunState;
  owner: string;
  name: string | null;
  /** The script's meta: name, description, `whenToUse` and the phase titles. */
  meta: { name?: string; description?: string; whenToUse?: string; phases?: string[] };
  filename: string;
  isolation: IsolationTier;
  sandbox_default: SandboxLevel;
  /** The ceiling of its calls' sandbox levels (`sandbox_max`, else `sandbox_default`). */
  sandbox_max: SandboxLevel;
  workdir: string | null;
  fake_dispatch: boolean;
  timeout: number;
  /** The run this one resumed from, if any. */
  resumed_from: string | null;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  result?: JsonValue;
  error?: RunError;
  narration: NarrationEntry[];
  /** How many narration entries were dropped because the run exceeded its narration cap. */
  narration_dropped: number;
  conditions: RunCondition[];
  /** How many conditions were dropped because the status holds a bounded number (and size) of them. */
  conditions_dropped: number;
  security_events: SecurityEvent[];
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
  /** The run's own limits: `agent()` calls in all, and calls at once. */
  limits: { max_agents: number; concurrency: number };
  budget: BudgetFigures;
  calls: CallCounts;
  journal: JournalSummary;
}

/** How a journaled call ended. */
export type CallOutcome = "live" | "replayed" | "failed" | "skipped";

/** One `agent()` call as the journal keeps it. */
export interface JournalEntry {
  /** Position in call-start order, from 1. */
  seq: number;
  /** SHA-256 of the prompt and the canonicalised options: what resume matches on. */
  hash: string;
  label: string | null;
  /** The call's `phase` option, when it had one. */
  phase?: string;
  outcome: CallOutcome;
  /** The call's value (text or object); absent for failed and skipped calls. */
  result?: JsonValue;
  provider: string | null;
  model: string | null;
  usage: { input_tokens: number; output_tokens: number };
  cost_usd: number | null;
  /** Dispatches this call took (more than one when schema validation retried). */
  attempts: number;
  started_at: string;
  ended_at: string;
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
  | { type: "condition"; run_id: string; at: string; condition: RunCondition }
  | { type: "security"; run_id: string; at: string; event: SecurityEvent };

/** States of an asynchronous dispatch (a task): a run's, with the same terminal ones. */
export type TaskState = RunState;

/** The status of a task: what `svc task status` and `GET /api/dispatch/{task_id}` return. */
export interface TaskStatus {
  task_id: string;
  owner: string;
  state: TaskState;
  prompt: string;
  options: Record<string, JsonValue>;
  label: string | null;
  timeout: number;
  fake_dispatch: boolean;
  /** Attempts a schema call may take before it fails. */
  schema_attempts: number;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  result?: JsonValue;
  error?: { code: string; message: string };
  provider: string | null;
  model: string | null;
  /** Why the call went to its provider. */
  route: string | null;
  sandbox: "read-only" | "write" | "full" | null;
  sandbox_clamped: string | null;
  usage: { input_tokens: number; output_tokens: number };
  cost_usd: number | null;
  /** The svc session the task continued, if any. */
  session_id: string | null;
  /** The worktree the task ran in (`isolation: "worktree"`), and whether it was kept. */
  worktree: { path: string; branch: string; kept: boolean; diff?: string } | null;
  /** Set by `cancel`; a worker in another process polls it. */
  cancel_requested: boolean;
  /** The host (process) running the task, while it runs. */
  host_id: string | null;
}

/** An event of a task: its state changes, in order. */
export interface TaskEvent {
  at: string;
  task_id: string;
  state: TaskState;
}

/** A stream of the event feed: the events of one run or of one task. */
export type EventStream = { kind: "run"; id: string } | { kind: "task"; id: string };

/**
 * One event of a feed with its position: `seq` counts from 0 in its stream, without gaps or
 * repeats, so that a reader that saw up to `seq` resumes with `after: seq`.
 */
export interface FeedItem<E = RunEvent | TaskEvent> {
  seq: number;
  event: E;
}

/** Whether an event is the last of its stream: a change to a state that is never left. */
export function endsStream(event: RunEvent | TaskEvent): boolean {
  return "state" in event && TERMINAL_STATES.has(event.state) &&
    (!("type" in event) || event.type === "state");
}

/** A persistent multi-turn conversation with one provider. */
export interface SessionRecord {
  session_id: string;
  owner: string;
  name: string | null;
  /** The provider it talks to; fixed by its first turn when not given at creation. */
  provider: string | null;
  profile: string | null;
  /** A harness's own session id, updated after every turn (some tools return a new one). */
  harness_session_id: string | null;
  turns: number;
  created_at: string;
  updated_at: string;
}

/** One dispatch of any origin (a run's call or a task), for history, statistics and costs. */
export interface CallRecord {
  at: string;
  source: "run" | "task";
  /** The run or task id. */
  id: string;
  seq: number;
  owner: string;
  provider: string | null;
  model: string | null;
  outcome: CallOutcome | "succeeded" | "cancelled" | "timeout";
  duration_ms: number;
  usage: { input_tokens: number; output_tokens: number };
  cost_usd: number | null;
}

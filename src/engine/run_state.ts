import type { IsolationTier, JsonValue, SandboxLevel } from "../schemas/mod.ts";
import type { ScriptMeta } from "./script_check.ts";

/** States of a run. `interrupted` is set by the next host when one died while the run ran. */
export type RunState =
  | "queued"
  | "running"
  | "succeeded"
  | "failed"
  | "cancelled"
  | "timeout"
  | "interrupted";

/** States a run never leaves. */
export const TERMINAL_STATES: ReadonlySet<RunState> = new Set([
  "succeeded",
  "failed",
  "cancelled",
  "timeout",
  "interrupted",
]);

/** One line of narration, stamped by the host when it arrived. */
export interface NarrationEntry {
  at: string;
  /** `phase` and `log` come from the script; `output` is stray output; `call` reports a failed call. */
  kind: "phase" | "log" | "output" | "call";
  text: string;
  stream?: "stdout" | "stderr";
}

/** Something the host dropped from the guest, with why. */
export interface SecurityEvent {
  at: string;
  kind: string;
  detail: string;
}

/** A condition the run raised, such as `AgentLimitExceeded`. */
export interface RunCondition {
  at: string;
  type: string;
  message: string;
}

/** Why a run did not succeed. */
export interface RunError {
  code: string;
  message: string;
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
}

/** Usage of the run's calls. `cost_usd` is null when some call's cost is unknown. */
export interface UsageTotals {
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
}

/** The status object of a run: what `GET /api/workflow/{run_id}` and `--json` return. */
export interface RunStatus {
  run_id: string;
  state: RunState;
  owner: string;
  name: string | null;
  meta: ScriptMeta;
  filename: string;
  isolation: IsolationTier;
  sandbox_default: SandboxLevel;
  workdir: string | null;
  fake_dispatch: boolean;
  timeout: number;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  result?: JsonValue;
  error?: RunError;
  narration: NarrationEntry[];
  /** How many narration entries were dropped because the run exceeded its narration cap. */
  narration_dropped: number;
  conditions: RunCondition[];
  security_events: SecurityEvent[];
  security_events_dropped: number;
  budget: { total: number | null; unit: "tokens"; spent: number; remaining: number | null };
  calls: CallCounts;
  journal: { calls: number; replayed: number; live: number; usage: UsageTotals };
}

/** What a run subscriber hears. Every event carries the host's timestamp. */
export type RunEvent =
  | { type: "state"; run_id: string; at: string; state: RunState }
  | { type: "narration"; run_id: string; at: string; entry: NarrationEntry }
  | { type: "calls"; run_id: string; at: string; calls: CallCounts }
  | { type: "security"; run_id: string; at: string; event: SecurityEvent }
  | { type: "end"; run_id: string; at: string; status: RunStatus };

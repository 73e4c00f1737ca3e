import type { Dispatcher } from "../../dispatch/mod.ts";
import type { CompiledSchema, SchemaRegistry } from "../../structured/mod.ts";
import type { AgentDefinition, AgentTypeRegistry } from "../../agent_types/mod.ts";
import type { SessionStore } from "../../tasks/mod.ts";
import type { ApprovalLedger, FailureCause, JournalEntry } from "../../ledger/mod.ts";
import type { AgentCall, JsonValue } from "../../schemas/mod.ts";
import type { ReplayCandidate } from "../journal.ts";

/** What the call pipeline needs besides the run. */
export interface AgentCallDeps {
  dispatcher: Dispatcher;
  /** Continues `agent(..., {session})` conversations. */
  sessions: SessionStore;
  schemas: SchemaRegistry;
  /** The run's agent types (`agentType`). */
  agentTypes: AgentTypeRegistry;
  /** `agent()` calls one run may make; later ones return null. */
  maxAgents: number;
  /** Where a call that needs a person's approval (`full` under `sandbox.full: "ask"`) waits. */
  approvals: CallApprovalDeps;
}

/** Why a call was refused; the first refused call of each kind is journaled, later ones counted. */
export type Refusal = "agent_limit" | "budget" | "unpriced";

/** A checked call from the guest, with what it runs in: the output of the place stage. */
export interface PlacedCall {
  call: AgentCall;
  /** The call's logical position in its script, when the guest sent a valid one. */
  position: number[] | undefined;
  /** Whether the guest asks the host to replay the call (only with a position). */
  replay: boolean;
  /** The options as the script gave them, when some were ignored: what the hash covers. */
  given?: Record<string, unknown>;
  /** The sub-workflow group the call shows in when it names no phase. */
  group?: string;
  /** The call's working directory, checked against the run's. */
  cwd: string | undefined;
  /** The call's agent type, resolved. */
  agent: AgentDefinition | undefined;
  /** Aborts when the guest went or the run stopped. */
  signal: AbortSignal;
}

/** A call refused at its place in line: it returns null without dispatching. */
export type Refused = {
  kind: "refused";
  refusal: "agent_limit" | "budget";
  seq: number;
  reason: string;
};
/** A call the host replays from an earlier run's journal. */
export type Replay = { kind: "replay"; seq: number; hash: string; candidate: ReplayCandidate };
/** A call that runs live: it dispatches to a provider. */
export type Live = { kind: "live"; seq: number; hash: string; schema: CompiledSchema | undefined };
/** What the ordered step decided for one call. */
export type Decision = Refused | Replay | Live;

/** A call with its place in line: the output of the admit stage, read by every later one. */
export interface CallState<D extends Decision> extends PlacedCall {
  decision: D;
  /**
   * When the call left its place in line (ISO 8601), the same on the monotonic clock, and the
   * phase the script had narrated last then (a call's own `phase` option wins over it).
   */
  started: { at: string; t0: number; phase: string | null };
}

/** A call after the admit stage, of whichever kind it was decided to be. */
export type AdmittedCall = CallState<Refused> | CallState<Replay> | CallState<Live>;
/** A call the host replays. */
export type ReplayCall = CallState<Replay>;
/** A call that runs live. */
export type LiveCall = CallState<Live>;

/** Who answered a call, at what cost: the part of its entry a dispatch fills in. */
export interface CallWork {
  provider: string | null;
  model: string | null;
  usage: { input_tokens: number; output_tokens: number };
  cost_usd: number | null;
  attempts: number;
  /** Where the call went and under which sandbox, when a provider took it. */
  trace?: Pick<JournalEntry, "route" | "sandbox" | "sandbox_clamped" | "worktree">;
}

/** How a call ends: what the record stage counts and journals, and the value the script gets. */
export type Ending =
  | { outcome: "skipped"; refusal: Refusal; reason: string }
  | {
    outcome: "failed";
    cause: FailureCause;
    reason: string;
    /** Whether the failure is narrated (not when the run stopped, which says so itself). */
    narrate: boolean;
    work: CallWork;
  }
  | { outcome: "live"; value: JsonValue; work: CallWork }
  | { outcome: "replayed"; candidate: ReplayCandidate };

/** What a call's wait for approval needs besides the run. */
export interface CallApprovalDeps {
  /** Where the approval is recorded and its decision read. */
  ledger: ApprovalLedger;
  /** How often the ledger is read for the decision, in ms. */
  pollMs: number;
}

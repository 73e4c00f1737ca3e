import {
  type AgentDefinition,
  type AgentTypeRegistry,
  applyAgentType,
} from "../agent_types/mod.ts";
import {
  type DispatchContext,
  type Dispatcher,
  type DispatchOutcome,
  ProviderError,
  stepCost,
  type StepSpent,
  StopReason,
  structuredStep,
  UnpricedCallError,
} from "../dispatch/mod.ts";
import { type CompiledSchema, SchemaError, type SchemaRegistry } from "../structured/mod.ts";
import { type SessionStore } from "../tasks/mod.ts";
import { SvcError } from "../errors/mod.ts";
import type { FailureCause, JournalEntry } from "../ledger/mod.ts";
import { type AgentCall, type JsonValue, parseAgentCall } from "../schemas/mod.ts";
import type { BudgetGate } from "./budget.ts";
import { type AgentReply, ScriptCallError } from "./guest_session.ts";
import { callWorkdir } from "./call_workdir.ts";
import { awaitCallApproval, type CallApprovalDeps } from "./call_approval.ts";
import { denialText } from "../approvals/mod.ts";
import { callHash, parsePosition, positionKey } from "./journal.ts";
import { clip, now, type RunContext } from "./run_context.ts";

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
type Refusal = "agent_limit" | "budget" | "unpriced";

/** What the ordered step decided for one call. */
type Decision =
  | { kind: "refused"; refusal: "agent_limit" | "budget"; seq: number; reason: string }
  | { kind: "replay"; seq: number; hash: string; entry: JournalEntry; from: string }
  | { kind: "live"; seq: number; hash: string; schema: CompiledSchema | undefined };

/** ` (label, phase P)`: how a failure's narration names the call, from its own options. */
function callTags(call: AgentCall): string {
  const { label, phase } = call.options;
  const tags = [label, phase === undefined ? undefined : `phase ${phase}`]
    .filter((tag) => tag !== undefined && tag !== "");
  return tags.length === 0 ? "" : ` (${tags.join(", ")})`;
}

/** The budget figures as plain JSON, for a condition's data. */
function budgetData(budget: BudgetGate): Record<string, JsonValue> {
  return JSON.parse(JSON.stringify(budget.figures()));
}

/** Where the guest placed a call, and whether it found the call among those it may replay. */
interface Placement {
  position: number[] | undefined;
  replay: boolean;
}

/**
 * Why a call ended with its run, for its journal entry: the run's own stop reason (its timeout,
 * a cancel, a limit) when it has one, so that the entry names the cause.
 */
function stoppedText(signal: AbortSignal, when = ""): string {
  const reason = signal.reason;
  const cause = reason instanceof StopReason ? ` (${reason.message})` : "";
  return `the run stopped${when}${cause}`;
}

/**
 * Splits the guest's request into the script's call and the guest's placement of it. A
 * malformed placement is the guest's fault, not the script's: the call runs live, unplaced.
 */
function placementOf(ctx: RunContext, params: unknown): { call: unknown; placement: Placement } {
  if (params === null || typeof params !== "object" || Array.isArray(params)) {
    return { call: params, placement: { position: undefined, replay: false } };
  }
  const { position: raw, replay, ...call } = params as Record<string, unknown>;
  const position = raw === undefined ? undefined : parsePosition(raw);
  if (raw !== undefined && position === undefined) {
    ctx.security("malformed_frame", "agent request with a malformed position");
  }
  return { call, placement: { position, replay: replay === true && position !== undefined } };
}

/**
 * The call's place in line: agent limit, schema, sequence number and replay, decided one call
 * at a time in arrival order, so that sequence numbers are call-start order. The guest has
 * decided whether the call replays (by its logical position); the host replays it only when
 * the candidate at that position has the call's hash. A call refused for the agent limit, or
 * one the budget is certain to refuse, costs nothing: no schema is compiled (nor checked: it
 * returns null like any refused call), no hash taken, no place in the queue.
 */
function decide(
  ctx: RunContext,
  deps: AgentCallDeps,
  call: AgentCall,
  placement: Placement,
): Promise<Decision> {
  return ctx.inOrder(async (): Promise<Decision> => {
    const { options } = call;
    const refuse = (refusal: "agent_limit" | "budget", reason: string): Decision => {
      ctx.status.calls.total++;
      return { kind: "refused", refusal, seq: ctx.nextCallSeq(), reason };
    };
    if (ctx.callCount >= deps.maxAgents) {
      return refuse("agent_limit", `over the limit of ${deps.maxAgents} agent() calls per run`);
    }
    // A call the guest would replay costs nothing, unless its candidate turns out to differ.
    if (!placement.replay) {
      const reason = ctx.budget.certainRefusal(ctx.budget.estimateOf(options));
      if (reason !== undefined) return refuse("budget", reason);
    }
    let schema: CompiledSchema | undefined;
    try {
      if (options.schema !== undefined) schema = deps.schemas.compile(options.schema);
      else if (options.schema_id !== undefined) {
        schema = await deps.schemas.resolve(options.schema_id);
      }
    } catch (error) {
      if (error instanceof SchemaError) throw new ScriptCallError("TypeError", error.message);
      throw error;
    }
    const seq = ctx.nextCallSeq();
    ctx.status.calls.total++;
    const hash = callHash(call.prompt, options);
    const candidate = placement.replay && placement.position
      ? ctx.replay?.take(positionKey(placement.position), hash)
      : undefined;
    return candidate
      ? { kind: "replay", seq, hash, entry: candidate.entry, from: candidate.from }
      : { kind: "live", seq, hash, schema };
  });
}

/**
 * Records the calls the guest answered itself from the values offered at start (a `replayed`
 * notification lists their positions, in the order the script made them): journaled and
 * counted like replays the host answers, without the script waiting for the entries, since
 * the values are durable in the source's journal (a resume after a crash finds them there). A
 * position that was not offered, or was already replayed, is a security event and records
 * nothing; neither do the positions after it in the same frame.
 */
export function recordReplayedCalls(ctx: RunContext, params: unknown): void {
  const raw = params !== null && typeof params === "object"
    ? (params as Record<string, unknown>).positions
    : undefined;
  if (!Array.isArray(raw) || raw.length === 0) {
    ctx.security("malformed_frame", "replayed frame without positions");
    return;
  }
  let recorded = 0;
  for (const item of raw) {
    const position = parsePosition(item);
    const candidate = position ? ctx.replay?.take(positionKey(position)) : undefined;
    if (!position || !candidate) {
      ctx.security("malformed_frame", "replayed frame for a call that was not offered");
      break;
    }
    const { entry } = candidate;
    const at = now();
    const { calls } = ctx.status;
    calls.total++;
    calls.replayed++;
    if (entry.result !== undefined) ctx.countResult(entry.result);
    ctx.journal({
      seq: ctx.nextCallSeq(),
      position,
      hash: entry.hash,
      label: entry.label,
      ...(entry.phase !== undefined ? { phase: entry.phase } : {}),
      started_at: at,
      ended_at: at,
      duration_ms: 0,
      ...replayedFields(entry, candidate.from),
    });
    recorded++;
  }
  if (recorded > 0) ctx.callsChanged();
}

/** What a replayed call's entry takes from the source's: its value and who made it, at no cost. */
function replayedFields(entry: JournalEntry, from: string) {
  return {
    outcome: "replayed" as const,
    result: entry.result,
    provider: entry.provider,
    model: entry.model,
    usage: { input_tokens: 0, output_tokens: 0 },
    cost_usd: 0,
    attempts: 0,
    replayed_from: from,
  };
}

/** The call's agent type; an unknown or unreadable one is a script error that `agent()` throws. */
async function agentType(
  deps: AgentCallDeps,
  name: string | undefined,
): Promise<AgentDefinition | undefined> {
  if (name === undefined) return undefined;
  try {
    return await deps.agentTypes.resolve(name);
  } catch (error) {
    if (error instanceof SvcError) throw new ScriptCallError("Error", error.message);
    throw error;
  }
}

/**
 * One `agent()` call from validation to journal: the agent limit, replay, the run's
 * concurrency cap, the budget gate, dispatch (with schema validation and retries), and a
 * journal entry committed before the reply goes back to the script. Script bugs throw a
 * ScriptCallError; everything else answers, with `null` for a failed or refused call.
 */
export async function handleAgentCall(
  ctx: RunContext,
  deps: AgentCallDeps,
  params: unknown,
  signal: AbortSignal,
): Promise<AgentReply> {
  const { call: raw, placement } = placementOf(ctx, params);
  const parsed = parseAgentCall(raw);
  if (!parsed.ok) throw new ScriptCallError("TypeError", parsed.message);
  const call = parsed.call;
  const cwd = await callWorkdir(ctx.request.workdir, call.options.workdir);
  const agent = await agentType(deps, call.options.agentType);
  const decision = await decide(ctx, deps, call, placement);
  const { calls } = ctx.status;
  const startedAt = now();
  const t0 = performance.now();
  const base = (hash: string) => ({
    seq: decision.seq,
    ...(placement.position ? { position: placement.position } : {}),
    hash,
    label: call.options.label ?? null,
    ...(call.options.phase !== undefined ? { phase: call.options.phase } : {}),
    started_at: startedAt,
  });
  const ended = () => ({ ended_at: now(), duration_ms: Math.round(performance.now() - t0) });
  const skip = async (refusal: Refusal, reason: string): Promise<AgentReply> => {
    calls.skipped++;
    ctx.callsChanged();
    // Awaited so that the run ends only after the refusal's entry, if it gets one, is written.
    await ctx.refuse(refusal, reason, () => ({
      ...base(
        decision.kind === "refused" ? callHash(call.prompt, call.options) : decision.hash,
      ),
      ...ended(),
      outcome: "skipped",
      provider: null,
      model: null,
      usage: { input_tokens: 0, output_tokens: 0 },
      cost_usd: 0,
      attempts: 0,
      reason,
    }));
    return { value: null, spent: ctx.budget.spent() };
  };
  const overBudget = (reason: string): Promise<AgentReply> => {
    ctx.raise({
      type: "BudgetExceeded",
      message: `${reason}; call #${decision.seq} and later calls return null`,
      data: { ...budgetData(ctx.budget), first_refused_call: decision.seq },
    }, { once: true });
    return skip("budget", reason);
  };
  // A result the run's ledger limits cannot take never reaches the script (write-ahead rule).
  const unrecordable = (value: JsonValue): string | undefined => {
    const reason = ctx.admitResult(value);
    if (reason === undefined) return undefined;
    ctx.raise({
      type: "LedgerLimitExceeded",
      message: `${reason}; call #${decision.seq} and later calls with results return null`,
      data: { ...ctx.recordedFigures(), first_refused_call: decision.seq },
    }, { once: true });
    return reason;
  };

  if (decision.kind === "refused") {
    if (decision.refusal === "budget") return overBudget(decision.reason);
    const max = deps.maxAgents;
    ctx.raise({
      type: "AgentLimitExceeded",
      message:
        `the run reached its limit of ${max} agent() calls; call #${decision.seq} and later return null`,
      data: { limit: max, first_refused_call: decision.seq },
    }, { once: true });
    return skip("agent_limit", decision.reason);
  }
  if (decision.kind === "replay") {
    const { entry } = decision;
    const refused = entry.result === undefined ? undefined : unrecordable(entry.result);
    if (refused !== undefined) {
      calls.failed++;
      ctx.countFailure("ledger_limit");
      await ctx.journal({
        ...base(decision.hash),
        ...ended(),
        outcome: "failed",
        provider: entry.provider,
        model: entry.model,
        usage: { input_tokens: 0, output_tokens: 0 },
        cost_usd: 0,
        attempts: 0,
        reason: refused,
      });
      ctx.callsChanged();
      return { value: null, spent: ctx.budget.spent() };
    }
    calls.replayed++;
    await ctx.journal({
      ...base(decision.hash),
      ...ended(),
      ...replayedFields(entry, decision.from),
    });
    ctx.callsChanged();
    // Written ahead of the reply: whatever the script has seen is in the journal.
    return { value: entry.result ?? null, spent: ctx.budget.spent() };
  }

  const options = agent ? applyAgentType(call.options, agent) : call.options;
  const context: DispatchContext = {
    fakeOnly: ctx.request.fake_dispatch,
    sandboxDefault: ctx.request.sandbox_default,
    ...(ctx.request.sandbox_max !== undefined ? { sandboxMax: ctx.request.sandbox_max } : {}),
    requirePrice: ctx.budget.needsPrice,
    ...(ctx.request.isolation === "microvm" ? { microvm: true } : {}),
  };
  // A person approves `full` before the call takes a slot: the wait holds no permit.
  if (deps.dispatcher.admit(options, context).needsApproval) {
    const approval = await awaitCallApproval(ctx, deps.approvals, {
      seq: decision.seq,
      call,
      options,
      signal,
    });
    if (approval.state === "approved") context.fullApproved = true;
    else {
      const stopped = approval.state === "cancelled";
      const reason = stopped
        ? stoppedText(signal, ` while the call waited for approval ${approval.approval_id}`)
        : denialText(approval);
      calls.failed++;
      ctx.countFailure(stopped ? "stopped" : "forbidden");
      if (!stopped) {
        ctx.narrate({
          kind: "call",
          text: `agent call #${decision.seq}${callTags(call)} failed: ${reason}`,
        });
      }
      await ctx.journal({
        ...base(decision.hash),
        ...ended(),
        outcome: "failed",
        provider: null,
        model: null,
        usage: { input_tokens: 0, output_tokens: 0 },
        cost_usd: 0,
        attempts: 0,
        reason,
      });
      ctx.callsChanged();
      return { value: null, spent: ctx.budget.spent() };
    }
  }

  calls.queued++;
  ctx.callsChanged();
  let release: (() => void) | undefined;
  try {
    release = await ctx.semaphore.acquire(signal);
  } catch {
    calls.queued--;
    calls.failed++;
    ctx.countFailure("stopped");
    ctx.journal({
      ...base(decision.hash),
      ...ended(),
      outcome: "failed",
      provider: null,
      model: null,
      usage: { input_tokens: 0, output_tokens: 0 },
      cost_usd: 0,
      attempts: 0,
      reason: stoppedText(signal, " before the call started"),
    });
    return { value: null, spent: ctx.budget.spent() };
  }
  calls.queued--;
  try {
    const admission = ctx.budget.admit(ctx.budget.estimateOf(call.options));
    if (!admission.ok) return overBudget(admission.reason);
    calls.running++;
    ctx.callsChanged();
    // What is known of the call's use; a part not known counts its estimate against the budget.
    let spent: StepSpent | undefined;
    let last: DispatchOutcome | undefined;
    let failedAt: { provider: string; reason: string } | undefined;
    let unpriced: UnpricedCallError | undefined;
    let attempts = 0;
    let failure: string | undefined;
    let cause: FailureCause | undefined;
    let value: JsonValue | undefined;
    try {
      const step = await structuredStep(decision.schema, {
        attempts: ctx.request.schema_attempts,
        options,
        once(options) {
          const input = {
            prompt: call.prompt,
            options,
            ...(agent?.system !== undefined ? { system: agent.system } : {}),
            signal,
            ...(cwd !== undefined ? { cwd } : {}),
          };
          return call.options.session === undefined
            ? deps.dispatcher.dispatch(input, context)
            : deps.sessions.dispatch(deps.dispatcher, input, {
              ...context,
              owner: ctx.status.owner,
              ref: call.options.session,
            });
        },
      });
      ({ attempts, spent } = step);
      last = step.ok ? step.outcome : step.last;
      if (step.ok) value = step.value;
      else if (step.reason === "invalid") {
        const problems = step.problems.join("; ");
        ctx.raise({
          type: "SchemaValidationFailed",
          message: `call #${decision.seq}${
            call.options.label ? ` (${call.options.label})` : ""
          } returned no valid result in ${attempts} attempts: ${problems}`,
          data: { call: decision.seq, attempts, errors: clip(problems) },
        }, { once: false });
        failure = `no result valid against the schema in ${attempts} attempts`;
        cause = "schema_validation";
      } else {
        const { error } = step;
        if (error instanceof ProviderError) failedAt = error.route;
        if (error instanceof UnpricedCallError) unpriced = error;
        failure = signal.aborted
          ? stoppedText(signal)
          : error instanceof SvcError
          ? error.message
          : "the provider failed";
        cause = signal.aborted
          ? "stopped"
          : error instanceof SvcError
          ? error.code
          : "provider_failed";
      }
    } finally {
      ctx.budget.settle(admission.reservation, {
        tokens: spent ? spent.usage.input_tokens + spent.usage.output_tokens : 0,
        usd: spent?.cost_usd ?? 0,
        unknown: { tokens: spent?.usageUnknown ?? false, usd: spent?.costUnknown ?? false },
      });
      calls.running--;
    }
    if (unpriced && attempts === 1) {
      ctx.raise({
        type: "UnpricedCall",
        message:
          `${unpriced.message}; under a currency budget every call must be priced, call #${decision.seq} returns null`,
        data: { provider: unpriced.provider, first_refused_call: decision.seq },
      }, { once: true });
      return skip("unpriced", unpriced.message);
    }
    if (value !== undefined) {
      const refused = unrecordable(value);
      if (refused !== undefined) {
        value = undefined;
        failure = refused;
        cause = "ledger_limit";
      }
    }
    const outcome = value === undefined ? "failed" : "live";
    if (outcome === "live") calls.succeeded++;
    else {
      calls.failed++;
      ctx.countFailure(cause ?? "provider_failed");
      if (!signal.aborted) {
        ctx.narrate({
          kind: "call",
          text: `agent call #${decision.seq}${callTags(call)} failed: ${failure}`,
        });
      }
    }
    await ctx.journal({
      ...base(decision.hash),
      ...ended(),
      outcome,
      ...(value !== undefined ? { result: value } : {}),
      provider: last?.provider ?? failedAt?.provider ?? null,
      model: last?.model ?? null,
      usage: { ...(spent?.usage ?? { input_tokens: 0, output_tokens: 0 }) },
      cost_usd: spent ? stepCost(spent) : 0,
      attempts,
      ...(failure !== undefined && value === undefined ? { reason: failure } : {}),
      ...(last
        ? { route: last.route.reason, sandbox: last.sandbox }
        : failedAt
        ? { route: failedAt.reason }
        : {}),
      ...(last?.sandbox_clamped ? { sandbox_clamped: last.sandbox_clamped } : {}),
      ...(last?.worktree ? { worktree: last.worktree } : {}),
    });
    ctx.callsChanged();
    return { value: value ?? null, spent: ctx.budget.spent() };
  } finally {
    release();
  }
}

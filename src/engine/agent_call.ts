import {
  type AgentDefinition,
  type AgentTypeRegistry,
  applyAgentType,
  type CompiledSchema,
  type DispatchContext,
  type Dispatcher,
  type DispatchOutcome,
  ProviderError,
  SchemaError,
  type SchemaRegistry,
  type SessionStore,
  stepCost,
  type StepSpent,
  structuredStep,
  UnpricedCallError,
} from "../dispatch/mod.ts";
import { SvcError } from "../errors/mod.ts";
import type { FailureCause, JournalEntry } from "../ledger/mod.ts";
import { type AgentCall, type JsonValue, parseAgentCall } from "../schemas/mod.ts";
import type { BudgetGate } from "./budget.ts";
import { type AgentReply, ScriptCallError } from "./guest_session.ts";
import { callWorkdir } from "./call_workdir.ts";
import { awaitCallApproval, type CallApprovalDeps } from "./call_approval.ts";
import { denialText } from "../approvals/mod.ts";
import { callHash } from "./journal.ts";
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
  | { kind: "replay"; seq: number; hash: string; entry: JournalEntry }
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

/**
 * The call's place in line: agent limit, schema, sequence number and replay, decided one call
 * at a time in arrival order, so that sequence numbers are call-start order and replay matching
 * sees the calls as the script made them. A call refused for the agent limit, or one the
 * budget is certain to refuse, costs nothing: no schema is compiled (nor checked: it returns
 * null like any refused call), no hash taken, no place in the queue.
 */
function decide(ctx: RunContext, deps: AgentCallDeps, call: AgentCall): Promise<Decision> {
  return ctx.inOrder(async (): Promise<Decision> => {
    const { options } = call;
    const refuse = (refusal: "agent_limit" | "budget", reason: string): Decision => {
      ctx.status.calls.total++;
      return { kind: "refused", refusal, seq: ctx.nextCallSeq(), reason };
    };
    if (ctx.callCount >= deps.maxAgents) {
      return refuse("agent_limit", `over the limit of ${deps.maxAgents} agent() calls per run`);
    }
    // While calls still replay, the next one may replay too: replayed calls cost nothing.
    if (!ctx.replay?.active) {
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
    const hash = await callHash(call.prompt, options);
    const entry = ctx.replay?.match(seq, hash);
    return entry ? { kind: "replay", seq, hash, entry } : { kind: "live", seq, hash, schema };
  });
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
  const parsed = parseAgentCall(params);
  if (!parsed.ok) throw new ScriptCallError("TypeError", parsed.message);
  const call = parsed.call;
  const cwd = await callWorkdir(ctx.request.workdir, call.options.workdir);
  const agent = await agentType(deps, call.options.agentType);
  const decision = await decide(ctx, deps, call);
  const { calls } = ctx.status;
  const startedAt = now();
  const t0 = performance.now();
  const base = (hash: string) => ({
    seq: decision.seq,
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
    await ctx.refuse(refusal, reason, async () => ({
      ...base(
        decision.kind === "refused" ? await callHash(call.prompt, call.options) : decision.hash,
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
      outcome: "replayed",
      result: entry.result,
      provider: entry.provider,
      model: entry.model,
      usage: { input_tokens: 0, output_tokens: 0 },
      cost_usd: 0,
      attempts: 0,
      replayed_from: entry.replayed_from ?? ctx.replay?.runId,
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
        ? `the run stopped while the call waited for approval ${approval.approval_id}`
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
      reason: "the run stopped before the call started",
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
          ? "the run stopped"
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

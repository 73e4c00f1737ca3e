import { type CompiledSchema, SchemaError } from "../../structured/mod.ts";
import { ScriptCallError } from "../guest_session.ts";
import { callHash, positionKey } from "../journal.ts";
import { now, type RunContext } from "../run_context.ts";
import type { AdmittedCall, AgentCallDeps, Decision, PlacedCall } from "./types.ts";

/**
 * The admit stage: the call's place in line (agent limit, schema, sequence number and replay),
 * decided one call at a time in arrival order, so that sequence numbers are call-start order.
 * The guest has decided whether the call replays (by its logical position); the host replays
 * it only when the candidate at that position has the call's hash. A call refused for the
 * agent limit, or one the budget is certain to refuse, costs nothing: no schema is compiled
 * (nor checked: it returns null like any refused call), no hash taken, no place in the queue.
 */
export async function admit(
  ctx: RunContext,
  deps: AgentCallDeps,
  placed: PlacedCall,
): Promise<AdmittedCall> {
  const decision = await ctx.inOrder(() => decide(ctx, deps, placed));
  const started = { at: now(), t0: performance.now(), phase: ctx.narratedPhase };
  switch (decision.kind) {
    case "refused":
      return { ...placed, decision, started };
    case "replay":
      return { ...placed, decision, started };
    case "live":
      return { ...placed, decision, started };
  }
}

async function decide(
  ctx: RunContext,
  deps: AgentCallDeps,
  placed: PlacedCall,
): Promise<Decision> {
  const { call, position, replay } = placed;
  const { options } = call;
  const refuse = (refusal: "agent_limit" | "budget", reason: string): Decision => ({
    kind: "refused",
    refusal,
    seq: ctx.callPlaced(),
    reason,
  });
  if (ctx.callCount >= deps.maxAgents) {
    return refuse("agent_limit", `over the limit of ${deps.maxAgents} agent() calls per run`);
  }
  // A call the guest would replay costs nothing, unless its candidate turns out to differ.
  if (!replay) {
    const reason = ctx.budget.certainRefusal(ctx.budget.estimateOf(options));
    if (reason !== undefined) return refuse("budget", reason);
  }
  let schema: CompiledSchema | undefined;
  try {
    if (options.schema !== undefined) schema = await deps.schemas.compile(options.schema);
    else if (options.schema_id !== undefined) {
      schema = await deps.schemas.resolve(options.schema_id);
    }
  } catch (error) {
    if (error instanceof SchemaError) throw new ScriptCallError("TypeError", error.message);
    throw error;
  }
  const seq = ctx.callPlaced();
  const hash = callHash(call.prompt, placed.given ?? options);
  const candidate = replay && position ? ctx.replay?.take(positionKey(position), hash) : undefined;
  return candidate ? { kind: "replay", seq, hash, candidate } : { kind: "live", seq, hash, schema };
}

import { type AgentDefinition, agentTypeNarrowingProblem } from "../../agent_types/mod.ts";
import { SvcError } from "../../errors/mod.ts";
import type { AgentRequest } from "../guest_protocol.ts";
import { ScriptCallError } from "../guest_session.ts";
import type { RunContext } from "../run_context.ts";
import type { AgentCallDeps, PlacedCall } from "./types.ts";
import { callWorkdir } from "./workdir.ts";

/**
 * The place stage: the guest's request, checked at the boundary (`guest_params.ts`), resolved
 * into what the call runs with, its working directory and agent type. A call that cannot run
 * there is a script error that `agent()` throws; nothing is counted or journaled for it.
 */
export async function place(
  ctx: RunContext,
  deps: AgentCallDeps,
  request: AgentRequest,
  signal: AbortSignal,
): Promise<PlacedCall> {
  const { call, position, replay, given, group } = request;
  const cwd = await callWorkdir(ctx.request.workdir, call.options.workdir, ctx.workdirRoot);
  const agent = await agentType(deps, call.options.agentType);
  const problem = agent ? agentTypeNarrowingProblem(call.options, agent) : undefined;
  if (problem !== undefined) throw new ScriptCallError("Error", problem);
  return {
    call,
    position,
    replay,
    ...(given ? { given } : {}),
    ...(group !== undefined ? { group } : {}),
    cwd,
    agent,
    signal,
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

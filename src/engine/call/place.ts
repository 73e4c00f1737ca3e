import type { AgentDefinition } from "../../agent_types/mod.ts";
import { SvcError } from "../../errors/mod.ts";
import { parseAgentCall } from "../../schemas/mod.ts";
import { ScriptCallError } from "../guest_session.ts";
import { parsePosition } from "../journal.ts";
import type { RunContext } from "../run_context.ts";
import type { AgentCallDeps, PlacedCall } from "./types.ts";
import { callWorkdir } from "./workdir.ts";

/**
 * The place stage: the guest's request checked and resolved into what the call runs with, its
 * position, working directory and agent type. A malformed call is a script error that
 * `agent()` throws; nothing is counted or journaled for it.
 */
export async function place(
  ctx: RunContext,
  deps: AgentCallDeps,
  params: unknown,
  signal: AbortSignal,
): Promise<PlacedCall> {
  const { call: raw, position, replay } = placementOf(ctx, params);
  const parsed = parseAgentCall(raw);
  if (!parsed.ok) throw new ScriptCallError("TypeError", parsed.message);
  const call = parsed.call;
  const cwd = await callWorkdir(ctx.request.workdir, call.options.workdir);
  const agent = await agentType(deps, call.options.agentType);
  return { call, position, replay, cwd, agent, signal };
}

/**
 * Splits the guest's request into the script's call and the guest's placement of it. A
 * malformed placement is the guest's fault, not the script's: the call runs live, unplaced.
 */
function placementOf(
  ctx: RunContext,
  params: unknown,
): { call: unknown; position: number[] | undefined; replay: boolean } {
  if (params === null || typeof params !== "object" || Array.isArray(params)) {
    return { call: params, position: undefined, replay: false };
  }
  const { position: raw, replay, ...call } = params as Record<string, unknown>;
  const position = raw === undefined ? undefined : parsePosition(raw);
  if (raw !== undefined && position === undefined) {
    ctx.security("malformed_frame", "agent request with a malformed position");
  }
  return { call, position, replay: replay === true && position !== undefined };
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

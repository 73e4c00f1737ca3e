import type { AgentReply, AgentRequest } from "../guest_protocol.ts";
import type { RunContext } from "../run_context.ts";
import { admit } from "./admit.ts";
import { approve } from "./approve.ts";
import { agentLimitExceeded, budgetExceeded } from "./conditions.ts";
import { dispatch } from "./dispatch.ts";
import { noWork } from "./entry.ts";
import { takePermit } from "./permit.ts";
import { place } from "./place.ts";
import { record } from "./record.ts";
import { replayEnding } from "./replay.ts";
import { stoppedText } from "./stopped.ts";
import type { AdmittedCall, AgentCallDeps, Ending, LiveCall, ReplayCall } from "./types.ts";
import { validate } from "./validate.ts";

/**
 * One `agent()` call, as a sequence of stages: place (parse, workdir, agent type), admit (its
 * place in line: agent limit, budget, schema, replay), replay or approve, dispatch under the
 * run's concurrency cap and budget, validate, record (the journal entry, queued), reply.
 * Script bugs throw a ScriptCallError; everything else answers, with `null` for a failed or
 * refused call. The answer goes back while the entry commits: the run's end waits for that
 * commit (`RunContext.writes`), and whatever the guest sends after the answer waits for it too
 * (`RunContext.framesGate()`), so that the script's use of a value never precedes its entry.
 */
export async function handleAgentCall(
  ctx: RunContext,
  deps: AgentCallDeps,
  request: AgentRequest,
  signal: AbortSignal,
): Promise<AgentReply> {
  const placed = await place(ctx, deps, request, signal);
  const call = await admit(ctx, deps, placed);
  if (!isLive(call)) return record(ctx, call, settled(ctx, deps, call));
  const approval = await approve(ctx, deps, call);
  if (!approval.approved) return record(ctx, call, approval.ending);
  const release = await takePermit(ctx, signal);
  if (release === undefined) {
    // The run has stopped: the script gets null (a resume runs the call again rather than
    // replaying it), and the run's end waits for every queued write before its final status.
    return record(ctx, call, stoppedInLine(call));
  }
  try {
    const dispatched = await dispatch(ctx, deps, call, approval);
    const ending = "step" in dispatched ? validate(ctx, call, dispatched.step) : dispatched.ending;
    return record(ctx, call, ending);
  } finally {
    release();
  }
}

function isLive(call: AdmittedCall): call is LiveCall {
  return call.decision.kind === "live";
}

function isReplay(call: AdmittedCall): call is ReplayCall {
  return call.decision.kind === "replay";
}

/** How a call that never dispatches ends: refused at its place in line, or replayed. */
function settled(
  ctx: RunContext,
  deps: AgentCallDeps,
  call: Exclude<AdmittedCall, LiveCall>,
): Ending {
  if (isReplay(call)) return replayEnding(ctx, call);
  const { decision } = call;
  if (decision.refusal === "budget") budgetExceeded(ctx, decision.seq, decision.reason);
  else agentLimitExceeded(ctx, decision.seq, deps.maxAgents);
  return { outcome: "skipped", refusal: decision.refusal, reason: decision.reason };
}

/** A live call whose run stopped while it waited for a slot. */
function stoppedInLine(call: LiveCall): Ending {
  return {
    outcome: "failed",
    cause: "stopped",
    reason: stoppedText(call.signal, " before the call started"),
    narrate: false,
    work: noWork(),
  };
}

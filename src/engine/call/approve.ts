import {
  type ApprovalRequest,
  denialText,
  requestApproval,
  waitForDecision,
} from "../../approvals/mod.ts";
import { type DispatchContext } from "../../dispatch/mod.ts";
import { applyAgentType } from "../../agent_types/mod.ts";
import type { ApprovalRecord } from "../../ledger/mod.ts";
import type { AgentCall, AgentOptions } from "../../schemas/mod.ts";
import type { RunContext } from "../run_context.ts";
import { noWork } from "./entry.ts";
import { stoppedText } from "./stopped.ts";
import type { AgentCallDeps, CallApprovalDeps, Ending, LiveCall } from "./types.ts";
import { callLabel } from "./label.ts";

/** A live call cleared to dispatch: its options (agent type applied) and its dispatch context. */
export interface Approved {
  approved: true;
  options: AgentOptions;
  context: DispatchContext;
}

/**
 * The approve stage: the call's options and dispatch context, and, when the call asks for
 * `full` under `sandbox.full: "ask"`, a person's decision. A person approves `full` before the
 * call takes a slot: the wait holds no permit. A denied call, or one whose run stopped while it
 * waited, ends failed.
 */
export async function approve(
  ctx: RunContext,
  deps: AgentCallDeps,
  call: LiveCall,
): Promise<Approved | { approved: false; ending: Ending }> {
  const options = call.agent ? applyAgentType(call.call.options, call.agent) : call.call.options;
  const context: DispatchContext = {
    fakeOnly: ctx.request.fake_dispatch,
    sandboxDefault: ctx.request.sandbox_default,
    ...(ctx.request.sandbox_max !== undefined ? { sandboxMax: ctx.request.sandbox_max } : {}),
    requirePrice: ctx.budget.needsPrice,
    ...(ctx.request.isolation === "microvm" ? { microvm: true } : {}),
  };
  if (!deps.dispatcher.admit(options, context).needsApproval) {
    return { approved: true, options, context };
  }
  const { signal } = call;
  const approval = await awaitCallApproval(ctx, deps.approvals, {
    seq: call.decision.seq,
    call: call.call,
    options,
    signal,
  });
  if (approval.state === "approved") {
    return { approved: true, options, context: { ...context, fullApproved: true } };
  }
  const stopped = approval.state === "cancelled";
  const reason = stopped
    ? stoppedText(signal, ` while the call waited for approval ${approval.approval_id}`)
    : denialText(approval);
  return {
    approved: false,
    ending: {
      outcome: "failed",
      cause: stopped ? "stopped" : "forbidden",
      reason,
      narrate: !stopped,
      work: noWork(),
    },
  };
}

/**
 * A run's `agent()` call that asked for `full` under `sandbox.full: "ask"`: records the approval,
 * puts it into the run's feed, and waits for a person (in any process) to decide it, or for
 * the run to stop (the approval is then `cancelled`). Runs after the call's place in line was
 * decided and before it takes a concurrency slot, so a waiting call holds neither the run's
 * slot nor its provider's permit. A replayed call never gets here: it never asks again.
 */
export async function awaitCallApproval(
  ctx: RunContext,
  deps: CallApprovalDeps,
  call: { seq: number; call: AgentCall; options: AgentOptions; signal: AbortSignal },
): Promise<ApprovalRecord> {
  const label = callLabel(call.call);
  const request: ApprovalRequest = {
    owner: ctx.status.owner,
    kind: "call",
    run_id: ctx.runId,
    call_seq: call.seq,
    prompt: call.call.prompt,
    ...(label !== null ? { label } : {}),
    ...(call.options.provider !== undefined ? { provider: call.options.provider } : {}),
  };
  const asked = await requestApproval(deps.ledger, request);
  ctx.approvalChanged(asked, { seq: call.seq, label });
  const decided = await waitForDecision(deps.ledger, asked.approval_id, {
    signal: call.signal,
    pollMs: deps.pollMs,
    // The call's own signal says only that the guest went; the run's says why (cancel, timeout).
    stopReason: () =>
      ctx.controller.signal.aborted ? ctx.controller.signal.reason : call.signal.reason,
  });
  ctx.approvalChanged(decided, { seq: call.seq, label });
  return decided;
}

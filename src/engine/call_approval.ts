import { type ApprovalRequest, requestApproval, waitForDecision } from "../approvals/mod.ts";
import type { ApprovalRecord, Ledger } from "../ledger/mod.ts";
import type { AgentCall, AgentOptions } from "../schemas/mod.ts";
import type { RunContext } from "./run_context.ts";

/** What a call's wait for approval needs besides the run. */
export interface CallApprovalDeps {
  /** Where the approval is recorded and its decision read. */
  ledger: Ledger;
  /** How often the ledger is read for the decision, in ms. */
  pollMs: number;
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
  const label = call.call.options.label ?? null;
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

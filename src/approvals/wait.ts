import { abortableSleep } from "../concurrency/mod.ts";
import { SvcError } from "../errors/mod.ts";
import { type ApprovalLedger, type ApprovalRecord, newId } from "../ledger/mod.ts";

/**
 * What a call or dispatch that needs a person's approval says about itself: the record's fields
 * that name it, and its whole prompt (the ledger keeps only its start).
 */
export type ApprovalRequest =
  & Pick<
    ApprovalRecord,
    "owner" | "kind" | "run_id" | "call_seq" | "task_id" | "label" | "provider"
  >
  & { prompt: string };

/** Records a pending approval for a `full` call and returns it (the ledger bounds its texts). */
export async function requestApproval(
  ledger: ApprovalLedger,
  request: ApprovalRequest,
): Promise<ApprovalRecord> {
  const { prompt, ...rest } = request;
  const record: ApprovalRecord = {
    approval_id: newId("apr"),
    ...rest,
    state: "pending",
    prompt_preview: prompt,
    sandbox: "full",
    asked_at: new Date().toISOString(),
  };
  await ledger.createApproval(record);
  return (await ledger.getApproval(record.approval_id)) ?? record;
}

/** Options of {@linkcode waitForDecision}. */
export interface WaitForDecisionOptions {
  /** The call's stop (its run's or task's cancel and timeout): the approval becomes `cancelled`. */
  signal: AbortSignal;
  /** How often the ledger is read for a decision made by any process, in ms. Default 250. */
  pollMs?: number;
  /** Why the wait stopped, for the record, read once it has; default: the signal's reason. */
  stopReason?: () => unknown;
}

/**
 * Waits until a person decides the approval, in this process or another: the ledger is read
 * every `pollMs` (as a run's host looks for cancels). When `signal` aborts first, the approval
 * is decided `cancelled` (unless a person's decision got there first) and returned as stored.
 * The wait holds nothing: no concurrency slot, no provider permit.
 */
export async function waitForDecision(
  ledger: ApprovalLedger,
  approvalId: string,
  options: WaitForDecisionOptions,
): Promise<ApprovalRecord> {
  const { signal } = options;
  const pollMs = options.pollMs ?? 250;
  while (!signal.aborted) {
    const record = await ledger.getApproval(approvalId);
    if (!record) {
      throw new SvcError("internal", `Cannot wait for approval ${approvalId}: it is not recorded`);
    }
    if (record.state !== "pending") return record;
    await abortableSleep(pollMs, signal).catch(() => {});
  }
  const why = options.stopReason ? options.stopReason() : signal.reason;
  const reason = why instanceof Error ? why.message : "the call was stopped";
  const outcome = await ledger.decideApproval(approvalId, {
    state: "cancelled",
    by: "svc",
    reason: `the call stopped waiting: ${reason}`,
  });
  if (!outcome) {
    throw new SvcError("internal", `Cannot cancel approval ${approvalId}: it is not recorded`);
  }
  return outcome.approval;
}

/** How a denial reads in a journal entry, a narration line and an error message. */
export function denialText(approval: ApprovalRecord): string {
  const by = approval.decided_by ?? "someone";
  const why = approval.reason ? `: ${approval.reason}` : "";
  return `the full sandbox was denied by ${by} (approval ${approval.approval_id})${why}`;
}

/**
 * Approvals: a run's `agent()` call or a dispatch that asked for the `full` sandbox while the
 * configuration says `sandbox.full: "ask"` waits for a person. The waiting side
 * (`requestApproval`, `waitForDecision`) and the deciding side (`ApprovalQueue`) meet only in
 * the ledger, so they may be different processes.
 * @module
 */
export {
  APPROVAL_LIST_LIMIT,
  type ApprovalAction,
  type ApprovalDecideOptions,
  type ApprovalListOptions,
  ApprovalQueue,
} from "./queue.ts";
export {
  type ApprovalRequest,
  denialText,
  requestApproval,
  waitForDecision,
  type WaitForDecisionOptions,
} from "./wait.ts";

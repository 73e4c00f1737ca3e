import { SvcError } from "../errors/mod.ts";
import {
  type ApprovalLedger,
  type ApprovalRecord,
  type ApprovalState,
  type Caller,
  isId,
  isTerminal,
  mayAccess,
  ownerScope,
  type RunLedger,
  shownId,
  type TaskLedger,
} from "../ledger/mod.ts";

/** What a person answers an approval: the call proceeds with `full`, or it is refused. */
export type ApprovalAction = "approve" | "deny";

/** Options of {@linkcode ApprovalQueue.list}. */
export interface ApprovalListOptions {
  /** Only approvals in this state; without it, pending ones first, then the decided ones. */
  state?: ApprovalState;
  /** Most approvals returned, 1 to 500. Default 100. */
  limit?: number;
  /** The last approval id of the previous page: the listing continues after it. */
  cursor?: string;
}

/** Options of {@linkcode ApprovalQueue.decide}. */
export interface ApprovalDecideOptions {
  /** Who decides, as recorded and shown; the caller's owner when absent. */
  by?: string;
  /** Why, in words (clipped to 1000 characters). */
  reason?: string;
}

const STATES: ReadonlySet<string> = new Set(["pending", "approved", "denied", "cancelled"]);
/** The most approvals one listing returns. */
export const APPROVAL_LIST_LIMIT = 500;

/**
 * The approvals service: the calls and dispatches waiting for a person to grant them the `full`
 * sandbox (`sandbox.full: "ask"`), for every surface. A reference is an approval id
 * (`apr_...`) or the id of a dispatch task that asked for one (`task_...`). The owner rule
 * holds: another owner's approval is not found, exactly like an unknown one. Approvals live in
 * the ledger, so that whoever decides (a dashboard, a command line) needs no contact with the
 * process whose call waits.
 */
export class ApprovalQueue {
  readonly #ledger: ApprovalLedger & RunLedger & TaskLedger;

  /** The queue over the ledger where approvals are kept. */
  constructor(options: { ledger: ApprovalLedger & RunLedger & TaskLedger }) {
    this.#ledger = options.ledger;
  }

  /** The caller's approvals (everyone's for an administrator): pending first, newest first. */
  async list(caller: Caller, options: ApprovalListOptions = {}): Promise<ApprovalRecord[]> {
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > APPROVAL_LIST_LIMIT) {
      throw new SvcError(
        "invalid_argument",
        `Cannot list approvals: 'limit' must be an integer from 1 to ${APPROVAL_LIST_LIMIT}`,
      );
    }
    if (options.state !== undefined && !STATES.has(options.state)) {
      throw new SvcError(
        "invalid_argument",
        "Cannot list approvals: 'state' must be pending, approved, denied or cancelled",
      );
    }
    if (options.cursor !== undefined && !isId("apr", options.cursor)) {
      throw new SvcError(
        "invalid_argument",
        `Cannot list approvals: the cursor '${shownId(options.cursor)}' is not an approval id`,
      );
    }
    const owner = ownerScope(caller);
    const found = await this.#ledger.listApprovals({
      ...(owner !== undefined ? { owner } : {}),
      ...(options.state !== undefined ? { state: options.state } : {}),
      ...(options.cursor !== undefined ? { before: options.cursor } : {}),
      limit,
    });
    return await Promise.all(found.map((approval) => this.#settleOrphan(approval)));
  }

  /** An approval by its id or its task's id; undefined alike for an unknown one and another owner's. */
  async get(ref: string, caller: Caller): Promise<ApprovalRecord | undefined> {
    const approval = isId("apr", ref)
      ? await this.#ledger.getApproval(ref)
      : isId("task", ref)
      ? await this.#ledger.approvalOfTask(ref)
      : undefined;
    if (!approval || !mayAccess(caller, approval.owner)) return undefined;
    return await this.#settleOrphan(approval);
  }

  /**
   * Approves or denies a pending approval. Deciding again the way it was decided answers the
   * stored decision (idempotent); the opposite decision, or deciding one whose call stopped
   * waiting (`cancelled`), is a `conflict`. Unknown and other owners' references: `not_found`.
   */
  async decide(
    ref: string,
    caller: Caller,
    action: ApprovalAction,
    options: ApprovalDecideOptions = {},
  ): Promise<ApprovalRecord> {
    if (action !== "approve" && action !== "deny") {
      throw new SvcError(
        "invalid_argument",
        `Cannot decide '${shownId(ref)}': the action must be approve or deny`,
      );
    }
    const approval = await this.get(ref, caller);
    if (!approval) {
      throw new SvcError("not_found", `Cannot ${action} '${shownId(ref)}': no such approval`);
    }
    const wanted = action === "approve" ? "approved" : "denied";
    const outcome = await this.#ledger.decideApproval(approval.approval_id, {
      state: wanted,
      by: options.by ?? caller.owner,
      ...(options.reason !== undefined ? { reason: options.reason } : {}),
    });
    if (!outcome) {
      throw new SvcError("not_found", `Cannot ${action} '${shownId(ref)}': no such approval`);
    }
    const stored = outcome.approval;
    if (outcome.decided || stored.state === wanted) return stored;
    const by = stored.decided_by ? ` by ${stored.decided_by}` : "";
    throw new SvcError(
      "conflict",
      stored.state === "cancelled"
        ? `Cannot ${action} approval ${stored.approval_id}: its call stopped waiting (${
          stored.reason ?? "cancelled"
        })`
        : `Cannot ${action} approval ${stored.approval_id}: it was ${stored.state} already${by}`,
    );
  }

  /**
   * A pending approval whose run or task has ended (its host died while it waited) can never be
   * acted on: it is cancelled here, the first time anyone looks at it.
   */
  async #settleOrphan(approval: ApprovalRecord): Promise<ApprovalRecord> {
    if (approval.state !== "pending") return approval;
    const subject = approval.run_id !== undefined
      ? await this.#ledger.getRun(approval.run_id)
      : approval.task_id !== undefined
      ? await this.#ledger.getTask(approval.task_id)
      : undefined;
    if (subject === undefined || !isTerminal(subject.state)) return approval;
    const outcome = await this.#ledger.decideApproval(approval.approval_id, {
      state: "cancelled",
      by: "svc",
      reason: `the ${
        approval.kind === "call" ? "run" : "task"
      } ended (${subject.state}) while it waited`,
    });
    return outcome?.approval ?? approval;
  }
}

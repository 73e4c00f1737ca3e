import type { KvStore } from "../platform/mod.ts";
import { fitRecord } from "./fit.ts";
import type { ActivityDraft, LedgerContext } from "./context.ts";
import * as a2aTasks from "./a2a_tasks.ts";
import * as approvals from "./approvals.ts";
import * as collaborations from "./collaborations.ts";
import * as daemon from "./daemon.ts";
import * as reviews from "./reviews.ts";
import * as notes from "./notifications.ts";
import * as outbox from "./notification_outbox.ts";
import type {
  A2aTaskLedger,
  ApprovalLedger,
  CollaborationLedger,
  DaemonLedger,
  NotificationLedger,
  ReviewLedger,
} from "./interface.ts";

/** Review records over a store (src/ledger/reviews.ts). */
export function reviewLedger(kv: KvStore): ReviewLedger {
  return {
    saveReview: (record) => reviews.saveReview(kv, record),
    getReview: (runId) => reviews.getReview(kv, runId),
    listReviews: (options) => reviews.listReviews(kv, options),
  };
}

/** Collaborations over a store (src/ledger/collaborations.ts). */
export function collaborationLedger(kv: KvStore): CollaborationLedger {
  return {
    saveCollaboration: (record, options) => collaborations.saveCollaboration(kv, record, options),
    getCollaboration: (id) => collaborations.getCollaboration(kv, id),
    listCollaborations: (options) => collaborations.listCollaborations(kv, options),
  };
}

/** Approvals over a ledger's context (src/ledger/approvals.ts); a new one enters its owner's activity. */
export function approvalLedger(ctx: LedgerContext): ApprovalLedger {
  const kv = ctx.kv;
  return {
    createApproval: (record) =>
      approvals.createApproval(
        record,
        (build, item) => ctx.commit(build, { owner: record.owner, items: [item] }),
      ),
    getApproval: (approvalId) => approvals.getApproval(kv, approvalId),
    approvalOfTask: (taskId) => approvals.approvalOfTask(kv, taskId),
    listApprovals: (options) => approvals.listApprovals(kv, options),
    decideApproval: (approvalId, decision) => approvals.decideApproval(kv, approvalId, decision),
  };
}

/** A2A tasks over a store (src/ledger/a2a_tasks.ts). */
export function a2aTaskLedger(kv: KvStore): A2aTaskLedger {
  return {
    saveA2aTask: (record) => a2aTasks.saveA2aTask(kv, record),
    getA2aTask: (owner, taskId) => a2aTasks.getA2aTask(kv, owner, taskId),
    listA2aTasks: (owner, options) => a2aTasks.listA2aTasks(kv, owner, options),
  };
}

/**
 * Saves what a webhook delivery started (with `duplicate`, only notes the repeat) and adds it
 * to the hook owner's activity stream, in one commit.
 */
async function saveDelivery(
  ctx: LedgerContext,
  delivery: daemon.WebhookDelivery,
  options: { duplicate?: boolean } = {},
): Promise<void> {
  const item: ActivityDraft = {
    at: new Date().toISOString(),
    kind: "webhook",
    id: delivery.hook,
    state: options.duplicate ? "duplicate" : delivery.outcome === "failed" ? "failed" : "accepted",
    delivery_id: delivery.delivery_id,
    ...(delivery.run_id ? { run_id: delivery.run_id } : {}),
    ...(delivery.task_id ? { task_id: delivery.task_id } : {}),
  };
  await ctx.commit((atomic) => {
    if (!options.duplicate) atomic.set(daemon.deliveryKey(delivery), fitRecord(delivery).bytes);
  }, { owner: delivery.owner, items: [item] });
}

/** The daemon's automations, slots and webhook deliveries (src/ledger/daemon.ts). */
export function daemonLedger(ctx: LedgerContext): DaemonLedger {
  const kv = ctx.kv;
  return {
    saveAutomation: (record, quota) => daemon.saveAutomation(kv, record, quota),
    listAutomations: () => daemon.listAutomations(kv),
    deleteAutomation: (automationId) => daemon.deleteAutomation(kv, automationId),
    lastSlot: (automationId) => daemon.lastSlot(kv, automationId),
    claimSlot: (automationId, slot) => daemon.claimSlot(kv, automationId, slot),
    saveSlot: (automationId, fired) => daemon.saveSlot(kv, automationId, fired),
    claimDelivery: (delivery, options) => daemon.claimDelivery(kv, delivery, options),
    saveDelivery: (delivery, options) => saveDelivery(ctx, delivery, options),
  };
}

/** Owners' notifications, their read state and their outbound deliveries (src/ledger/notifications.ts). */
export function notificationLedger(kv: KvStore): NotificationLedger {
  return {
    listNotifications: (owner, options) => notes.listNotifications(kv, owner, options),
    unreadNotifications: (owner) => notes.unreadCount(kv, owner),
    markNotificationsRead: (owner, what) => notes.markRead(kv, owner, what),
    getNotification: (owner, seq) => notes.getNotification(kv, owner, seq),
    listNotificationOutbox: (limit) => outbox.listOutbox(kv, limit),
    leaveNotificationOutbox: (owner, seq) => outbox.leaveOutbox(kv, owner, seq),
    listNotificationDeliveries: (owner, seq) => outbox.listDeliveries(kv, owner, seq),
    saveNotificationDelivery: (delivery) => outbox.saveDelivery(kv, delivery),
  };
}

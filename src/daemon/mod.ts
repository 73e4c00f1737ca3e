/**
 * The daemon: the resident process of a host. Its queue worker claims queued runs and tasks from
 * the ledger, its scheduler fires automations (one leader per ledger), and it receives webhooks.
 * The HTTP side (`/health`, `/webhooks/{name}`) is `src/http/daemon_app.ts`.
 * @module
 */
export { type Daemon, type DaemonOptions, type HealthSnapshot, startDaemon } from "./daemon.ts";
export { QueueWorker, type QueueWorkerOptions, type WorkerState } from "./queue_worker.ts";
export {
  Scheduler,
  SCHEDULER_LEASE,
  type SchedulerOptions,
  type SchedulerState,
} from "./scheduler.ts";
export { type DeliveryResult, type WebhookCounts, WebhookReceiver } from "./webhooks.ts";
export {
  DELIVERY_ID_LIMIT,
  signStandard,
  verifyGithub,
  verifyStandard,
} from "./webhook_signature.ts";
export {
  type DelivererState,
  type DeliverySettings,
  NOTIFICATION_LEASE,
  NotificationDeliverer,
  type NotificationDelivererOptions,
} from "./notification_delivery.ts";
export { FIELD_LIMIT, renderPrompt } from "./prompt_template.ts";
export { type StartedWork, startWork, type WorkAction } from "./start_work.ts";

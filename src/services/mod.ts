/**
 * The composition root: every surface opens the services of a data directory here, as one
 * disposable object, and calls them with a caller (an owner, or an administrator).
 * @module
 */
export {
  openServices,
  type RunSettings,
  type Services,
  type ServicesOptions,
} from "./open_services.ts";
export { EventFeed, type FeedFollowOptions } from "./event_feed.ts";
export { Admission, type AdmissionSnapshot } from "./admission.ts";
export { type AdmittedStream, admittedStream } from "./admitted_stream.ts";
export { noSuch } from "./not_found.ts";
export {
  type FeedOpening,
  type FeedOpenOptions,
  type GeneralItem,
  type GeneralOptions,
  type StreamPositions,
  Streams,
  type StreamsOptions,
} from "./streams.ts";
export { type NotificationListOptions, Notifications } from "./notifications.ts";
export { daemonAlive } from "./daemon_alive.ts";
export { submitRun, submitTask } from "./submit.ts";
export type { SpawnWorker, SubmitOptions } from "./submit.ts";
export {
  type CostReport,
  Insights,
  type InsightsOptions,
  type ServiceStatus,
  type StateCounts,
  STATUS_COUNTS_TTL_MS,
  STATUS_HOSTS_TTL_MS,
} from "./insights.ts";
export { RunGraph } from "./run_graph.ts";
export {
  COST_DAYS,
  COST_HOURS,
  COST_TOP_HOUR_RUNS,
  COST_TOP_RUNS,
  type CostBreakdown,
  type DayRuns,
  type HourSpend,
  type RunSpend,
} from "./cost_breakdown.ts";
export * from "./records.ts";
export {
  PULSE_TTL_MS,
  PULSE_WINDOW,
  type PulseLedger,
  type PulseOptions,
  PulseService,
  type PulseSources,
} from "./pulse.ts";
export { type CardRun, cardRuns } from "./card_runs.ts";
export {
  ConfigReload,
  type ConfigReloadOptions,
  type ConfigReloadOutcome,
  isOperator,
  type ReloadTrigger,
  RESTART_KEYS,
} from "./config_reload.ts";

import type { HostInfo } from "../ledger/mod.ts";
import type { Services } from "../services/mod.ts";
import { VERSION } from "../version.ts";
import { QueueWorker, type WorkerState } from "./queue_worker.ts";
import { Scheduler, type SchedulerState } from "./scheduler.ts";
import { type WebhookCounts, WebhookReceiver } from "./webhooks.ts";
import { type DelivererState, NotificationDeliverer } from "./notification_delivery.ts";

/** A worker or scheduler that has not looked at the ledger for this long is stalled. */
const STALL_MS = 15_000;
/** A ledger write slower than this makes the daemon unhealthy. */
const SLOW_WRITE_MS = 5_000;

/** Options of {@linkcode startDaemon}. */
export interface DaemonOptions {
  /** Queued items run at once. Default: the configuration's `daemon.concurrency`. */
  concurrency?: number;
  /** Whether to run the scheduler. Default: the configuration's `daemon.scheduler`. */
  scheduler?: boolean;
  /** How often the worker looks at the queue, in ms. Default 100. */
  pollMs?: number;
  /** How often the scheduler ticks, in ms. Default 1000. */
  tickMs?: number;
  /** How long the scheduler's lease lasts without renewal, in ms. Default 10000. */
  leaseMs?: number;
  /** Where webhook and notification secrets are read from. Default: the environment. */
  env?: (name: string) => string | undefined;
  /** How often the notification deliverer looks at its outbox, in ms. Default 500. */
  deliveryTickMs?: number;
}

/** The daemon's health snapshot: what `GET /health` answers (nothing secret in it). */
export interface HealthSnapshot {
  /** `ok`, or `unhealthy` (then `problems` says why). */
  status: "ok" | "unhealthy";
  /** What is wrong, one line each; empty when healthy. */
  problems: string[];
  /** svc's version. */
  version: string;
  /** Seconds since the daemon started. */
  uptime_s: number;
  /** This daemon's host id and process. */
  host: { id: string; pid: number };
  /** The admission policy in force. */
  kernel: {
    /** The highest sandbox level any call can get. */
    sandbox_ceiling: "write" | "full";
    /** What a `full` request gets: `deny` (clamped to write), `allow`, or `ask` (a person approves). */
    full: "deny" | "allow" | "ask";
  };
  /** The scheduler: its mode, automations, next slot. */
  scheduler: SchedulerState;
  /** This daemon's queue worker. */
  worker: WorkerState & { concurrency: number };
  /** Work waiting in the ledger's queue for any worker. */
  queue: { runs: number; tasks: number };
  /** Work running on this daemon. */
  running: { runs: number; tasks: number };
  /**
   * The ledger: whether a write went through, how long it took, and where it is (`kv`: this
   * machine's files; `postgres`: a database shared by several hosts).
   */
  ledger: { ok: boolean; write_ms: number | null; error?: string; backend: "kv" | "postgres" };
  /**
   * The hosts sharing the ledger (processes; on a shared ledger, of every machine): counts,
   * and each live one (id, role, machine, providers).
   */
  hosts: {
    alive: number;
    daemons: number;
    list: Array<Pick<HostInfo, "host_id" | "role" | "pid" | "hostname" | "heartbeat_at">>;
  };
  /** Webhook deliveries since the daemon started. */
  webhooks: WebhookCounts;
  /** The notification deliverer: whether it leads, attempts in flight and made. */
  notifications: DelivererState;
}

/** A running daemon: queue worker, scheduler and webhook receiver over one set of services. */
export interface Daemon {
  /** The services it runs on. */
  readonly services: Services;
  /** The webhook receiver. */
  readonly webhooks: WebhookReceiver;
  /** The queue worker. */
  readonly worker: QueueWorker;
  /** The scheduler. */
  readonly scheduler: Scheduler;
  /** The outbound deliverer of notifications (one leader per ledger). */
  readonly notifications: NotificationDeliverer;
  /** The health snapshot now (it writes to the ledger to prove it can). */
  health(): Promise<HealthSnapshot>;
  /** Stops claiming and scheduling, and lets the scheduler's lease go. The services stay open. */
  stop(): Promise<void>;
}

/**
 * Starts the daemon's work over `services` (opened with `role: "daemon"`): holds the host
 * lease for the daemon's whole life, so others see a live daemon and leave queued work to it,
 * and starts the queue worker and the scheduler.
 */
export async function startDaemon(
  services: Services,
  options: DaemonOptions = {},
): Promise<Daemon> {
  const startedAt = Date.now();
  const release = await services.host.hold();
  const concurrency = options.concurrency ?? services.config.daemon.concurrency;
  const worker = new QueueWorker(services, {
    concurrency,
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
  });
  const scheduler = new Scheduler(services, {
    holder: services.host.ref.id,
    ...(options.scheduler !== undefined ? { enabled: options.scheduler } : {}),
    ...(options.tickMs !== undefined ? { tickMs: options.tickMs } : {}),
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
  });
  const webhooks = new WebhookReceiver(services, options.env ? { env: options.env } : {});
  const notifications = new NotificationDeliverer(services.ledger, {
    holder: services.host.ref.id,
    settings: services.config.notifications,
    ...(options.env ? { env: options.env } : {}),
    ...(options.deliveryTickMs !== undefined ? { tickMs: options.deliveryTickMs } : {}),
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
  });
  worker.start();
  scheduler.start();
  notifications.start();
  // A reloaded configuration's endpoints; its hooks and automations are read where they are used.
  const unsubscribe = services.configuration.subscribe(({ outcome }) => {
    if (outcome === "reloaded") {
      notifications.configure(services.config.notifications).catch(() => {});
    }
  });
  let stopping: Promise<void> | undefined;
  return {
    services,
    webhooks,
    worker,
    scheduler,
    notifications,
    health: () =>
      healthOf({ services, worker, scheduler, webhooks, notifications, startedAt, concurrency }),
    stop: () =>
      stopping ??= (async () => {
        unsubscribe();
        await Promise.all([worker.stop(), scheduler.stop(), notifications.stop()]);
        release();
      })(),
  };
}

async function healthOf(parts: {
  services: Services;
  worker: QueueWorker;
  scheduler: Scheduler;
  webhooks: WebhookReceiver;
  notifications: NotificationDeliverer;
  startedAt: number;
  concurrency: number;
}): Promise<HealthSnapshot> {
  const { services, worker, scheduler, webhooks } = parts;
  const problems: string[] = [];
  const ledger: HealthSnapshot["ledger"] = {
    ok: true,
    write_ms: null,
    backend: services.ledger.shared ? "postgres" : "kv",
  };
  const begun = performance.now();
  try {
    await services.host.beat();
    ledger.write_ms = Math.round((performance.now() - begun) * 10) / 10;
    if (ledger.write_ms > SLOW_WRITE_MS) problems.push(`a ledger write took ${ledger.write_ms} ms`);
  } catch (error) {
    ledger.ok = false;
    ledger.error = error instanceof Error ? error.name : "write failed";
    problems.push("the ledger cannot be written");
  }
  let queue = { runs: 0, tasks: 0 };
  let hosts: HostInfo[] = [];
  if (ledger.ok) {
    try {
      const items = await services.ledger.listQueue({ limit: 1000 });
      queue = {
        runs: items.filter((item) => item.kind === "run").length,
        tasks: items.filter((item) => item.kind === "task").length,
      };
      hosts = await services.ledger.listHosts();
    } catch {
      ledger.ok = false;
      problems.push("the ledger cannot be read");
    }
  }
  const workerState = worker.state();
  const schedulerState = scheduler.state();
  const now = Date.now();
  const stalled = (at: string | null) =>
    at === null ? now - parts.startedAt > STALL_MS : now - Date.parse(at) > STALL_MS;
  if (stalled(workerState.last_poll_at)) problems.push("the queue worker is stalled");
  if (workerState.error) problems.push(`the queue worker cannot read the queue`);
  if (schedulerState.mode !== "off" && stalled(schedulerState.last_tick_at)) {
    problems.push("the scheduler is stalled");
  }
  const full = services.config.sandbox.full;
  return {
    status: problems.length === 0 ? "ok" : "unhealthy",
    problems,
    version: VERSION,
    uptime_s: Math.round((now - parts.startedAt) / 1000),
    host: { id: services.host.ref.id, pid: services.host.ref.pid },
    kernel: { sandbox_ceiling: full === "deny" ? "write" : "full", full },
    scheduler: schedulerState,
    worker: { ...workerState, concurrency: parts.concurrency },
    queue,
    running: workerState.running,
    ledger,
    hosts: {
      alive: hosts.filter((host) => host.alive).length,
      daemons: hosts.filter((host) => host.alive && host.role === "daemon").length,
      list: hosts.filter((host) => host.alive).slice(0, 100).map((host) => ({
        host_id: host.host_id,
        role: host.role,
        pid: host.pid,
        heartbeat_at: host.heartbeat_at,
        ...(host.hostname ? { hostname: host.hostname } : {}),
      })),
    },
    webhooks: webhooks.counts(),
    notifications: parts.notifications.state(),
  };
}

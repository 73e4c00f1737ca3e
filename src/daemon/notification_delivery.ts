import type { NotificationEndpointConfig } from "../config/mod.ts";
import type { Ledger, NotificationDelivery, NotificationRecord } from "../ledger/mod.ts";
import { platform } from "../platform/mod.ts";
import { signStandard } from "./webhook_signature.ts";

/** The lease that decides which daemon delivers notifications: one per ledger. */
export const NOTIFICATION_LEASE = "notifications";
/** Longest wait between two attempts, in ms: retries double up to it. */
const MAX_BACKOFF_MS = 600_000;
/** Outbox entries one tick looks at. */
const OUTBOX_BATCH = 100;

/** The configuration's `notifications` section, as the deliverer uses it. */
export interface DeliverySettings {
  /** Endpoints by name. */
  endpoints: Record<string, NotificationEndpointConfig>;
  /** Attempts before a delivery is given up. */
  max_attempts: number;
  /** Seconds before the first retry; doubled for each next one. */
  first_retry_s: number;
  /** Seconds one attempt may take. */
  timeout_s: number;
  /** Seconds after which a notification is no longer delivered. */
  max_age_s: number;
}

/** Options of {@linkcode NotificationDeliverer}. */
export interface NotificationDelivererOptions {
  /** Who asks for the lease: the daemon's host id. */
  holder: string;
  /** The configuration's `notifications` section. */
  settings: DeliverySettings;
  /** Reads a secret's variable. @default the process environment */
  env?: (name: string) => string | undefined;
  /** How often the outbox is looked at and the lease renewed, in ms. @default 500 */
  tickMs?: number;
  /** How long the lease lasts without renewal, in ms. @default 10000 */
  leaseMs?: number;
  /** Deliveries in flight at once. @default 4 */
  concurrency?: number;
}

/** What the deliverer has done, for the daemon's health snapshot. */
export interface DelivererState {
  /** `leader`: it delivers; `standby`: another daemon does; `off`: no endpoint is configured. */
  mode: "leader" | "standby" | "off";
  /** Deliveries in flight now. */
  in_flight: number;
  /** Attempts since it started, and how many were answered 2xx. */
  attempts: number;
  /** Attempts answered 2xx. */
  delivered: number;
}

/**
 * The daemon's outbound deliverer of notifications. Notifications enter an outbox in the commit
 * that makes them; the deliverer holding the {@linkcode NOTIFICATION_LEASE} (one daemon per
 * ledger) POSTs each to every configured endpoint that wants it, signed as Standard Webhooks
 * with the notification's id as `webhook-id`, and records every attempt in the ledger. A failed
 * attempt is retried after a doubling wait until `max_attempts` or `max_age_s`; a notification
 * leaves the outbox once every delivery of it has ended. Delivery is at least once: a daemon
 * that dies mid-attempt leaves the delivery pending, and the next leader repeats it with the
 * same id. It runs beside the runs, never in their path: a slow or dead endpoint holds only
 * its own attempt (bounded by `timeout_s`).
 */
export class NotificationDeliverer {
  readonly #ledger: Ledger;
  #options: NotificationDelivererOptions;
  readonly #inFlight = new Set<string>();
  #state: DelivererState = { mode: "off", in_flight: 0, attempts: 0, delivered: 0 };
  #timer: ReturnType<typeof setInterval> | undefined;
  #ticking = false;

  /** A deliverer over a ledger; it does nothing until {@linkcode start}. */
  constructor(ledger: Ledger, options: NotificationDelivererOptions) {
    this.#ledger = ledger;
    this.#options = options;
  }

  /** Starts looking at the outbox (when an endpoint is configured). */
  start(): void {
    if (Object.keys(this.#options.settings.endpoints).length === 0 || this.#timer) return;
    this.#timer = setInterval(() => void this.tick(), this.#options.tickMs ?? 500);
    void this.tick();
  }

  /**
   * Takes reloaded settings: later attempts use them; with endpoints it starts (when it had
   * none), without any it stops. Deliveries in flight end as they began.
   */
  async configure(settings: DeliverySettings): Promise<void> {
    this.#options = { ...this.#options, settings };
    if (Object.keys(settings.endpoints).length > 0) return this.start();
    await this.stop();
    this.#state = { ...this.#state, mode: "off" };
  }

  /** Stops, and gives the lease up so another daemon leads at once. */
  async stop(): Promise<void> {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#release();
  }

  async #release(): Promise<void> {
    await this.#ledger.releaseLease(NOTIFICATION_LEASE, this.#options.holder).catch(() => {});
  }

  /** What it has done. */
  state(): DelivererState {
    return { ...this.#state, in_flight: this.#inFlight.size };
  }

  /** One look at the outbox: starts the due deliveries, without waiting for them. */
  async tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      const lease = await this.#ledger.acquireLease(NOTIFICATION_LEASE, {
        holder: this.#options.holder,
        ttlMs: this.#options.leaseMs ?? 10_000,
      });
      // Stopped while the lease was asked for (a reload took every endpoint away): the stop's
      // release came first, so give up what this tick took, and leave the mode the stop set.
      if (this.#timer === undefined) {
        if (lease.held) await this.#release();
        return;
      }
      this.#state.mode = lease.held ? "leader" : "standby";
      if (!lease.held) return;
      const limit = this.#options.concurrency ?? 4;
      for (const { owner, seq } of await this.#ledger.listNotificationOutbox(OUTBOX_BATCH)) {
        if (this.#inFlight.size >= limit) break;
        const key = `${owner}\u0000${seq}`;
        if (this.#inFlight.has(key)) continue;
        this.#inFlight.add(key);
        void this.#deliver(owner, seq).catch(() => {}).finally(() => this.#inFlight.delete(key));
      }
    } catch {
      // The ledger is unreachable for now: the next tick tries again.
    } finally {
      this.#ticking = false;
    }
  }

  /** Makes every due attempt of one notification; takes it out of the outbox once all ended. */
  async #deliver(owner: string, seq: number): Promise<void> {
    const note = await this.#ledger.getNotification(owner, seq);
    if (!note) return await this.#ledger.leaveNotificationOutbox(owner, seq);
    const done = await this.#ledger.listNotificationDeliveries(owner, seq);
    const byEndpoint = new Map(done.map((d) => [d.endpoint, d]));
    let open = 0;
    for (const [name, endpoint] of Object.entries(this.#options.settings.endpoints)) {
      if (!wants(endpoint, note)) continue;
      const delivery = byEndpoint.get(name) ?? fresh(note, name);
      if (delivery.status !== "pending") continue;
      if (delivery.next_at === undefined || Date.parse(delivery.next_at) <= Date.now()) {
        const after = await this.#attempt(note, endpoint, delivery);
        await this.#ledger.saveNotificationDelivery(after);
        if (after.status === "pending") open++;
      } else open++;
    }
    if (open === 0) await this.#ledger.leaveNotificationOutbox(owner, seq);
  }

  /** One POST to one endpoint, and the delivery as it stands after it. */
  async #attempt(
    note: NotificationRecord,
    endpoint: NotificationEndpointConfig,
    delivery: NotificationDelivery,
  ): Promise<NotificationDelivery> {
    const settings = this.#options.settings;
    const now = Date.now();
    const attempts = delivery.attempts + 1;
    const tried = { ...delivery, attempts, last_at: new Date(now).toISOString() };
    if (now - Date.parse(note.at) > settings.max_age_s * 1000) {
      return { ...delivery, status: "failed", last_error: "too old to deliver (max_age_s)" };
    }
    this.#state.attempts++;
    const outcome = await post(note, endpoint, {
      timeoutMs: settings.timeout_s * 1000,
      secret: (this.#options.env ?? ((name) => platform().env(name)))(endpoint.secret_env),
    });
    if (outcome.ok) {
      this.#state.delivered++;
      const { next_at: _, ...rest } = tried;
      return { ...rest, status: "delivered", ...statusOf(outcome) };
    }
    const failed = { ...tried, last_error: outcome.error, ...statusOf(outcome) };
    if (attempts >= settings.max_attempts) {
      const { next_at: _, ...rest } = failed;
      return { ...rest, status: "failed" };
    }
    const wait = Math.min(settings.first_retry_s * 1000 * 2 ** (attempts - 1), MAX_BACKOFF_MS);
    return { ...failed, status: "pending", next_at: new Date(now + wait).toISOString() };
  }
}

function statusOf(outcome: PostOutcome): { last_status?: number } {
  return outcome.status !== undefined ? { last_status: outcome.status } : {};
}

/** Whether an endpoint wants a notification: its kinds and owners, when it names them. */
function wants(endpoint: NotificationEndpointConfig, note: NotificationRecord): boolean {
  return (endpoint.kinds === undefined || endpoint.kinds.includes(note.kind)) &&
    (endpoint.owners === undefined || endpoint.owners.includes(note.owner));
}

function fresh(note: NotificationRecord, endpoint: string): NotificationDelivery {
  return {
    notification_id: note.id,
    owner: note.owner,
    seq: note.seq,
    endpoint,
    status: "pending",
    attempts: 0,
    first_at: new Date().toISOString(),
  };
}

/** What one POST came to. */
type PostOutcome = { ok: true; status: number } | { ok: false; status?: number; error: string };

/**
 * POSTs a notification as `{type, timestamp, data}`, signed. Redirects are not followed: the
 * operator named this URL, not whatever it points on to.
 */
async function post(
  note: NotificationRecord,
  endpoint: NotificationEndpointConfig,
  options: { timeoutMs: number; secret: string | undefined },
): Promise<PostOutcome> {
  if (!options.secret) {
    return {
      ok: false,
      error: `the variable ${endpoint.secret_env} holding the secret is not set`,
    };
  }
  const timestamp = Math.floor(Date.now() / 1000);
  const body = new TextEncoder().encode(JSON.stringify({
    type: `notification.${note.kind}`,
    timestamp: new Date(timestamp * 1000).toISOString(),
    data: note,
  }));
  try {
    const signature = await signStandard(options.secret, { id: note.id, timestamp, body });
    const response = await fetch(endpoint.url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(options.timeoutMs),
      headers: {
        "content-type": "application/json",
        "user-agent": "svc-notifications",
        "webhook-id": note.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signature,
      },
      body,
    });
    await response.body?.cancel();
    if (response.status >= 200 && response.status < 300) {
      return { ok: true, status: response.status };
    }
    return { ok: false, status: response.status, error: `answered HTTP ${response.status}` };
  } catch (error) {
    const name = error instanceof Error ? error.name : "Error";
    const message = name === "TimeoutError"
      ? `no answer within ${options.timeoutMs} ms`
      : error instanceof Error
      ? error.message
      : String(error);
    return { ok: false, error: message };
  }
}

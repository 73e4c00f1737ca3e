/**
 * What the service reports about itself and about a caller's work: the overall status (with
 * a short-lived cache of the active counts), the dispatch history, statistics, providers,
 * capabilities, costs and the usage summary. The caller's figures are its own (the call log
 * filtered by owner); providers, hosts and the kernel are the host's. Surfaces answer with
 * these values as they are.
 * @module
 */
import {
  dispatchHistory,
  type ProviderStatus,
  remoteCapabilityReport,
  remoteProviderStatus,
  type UsageSummary,
} from "../dispatch/mod.ts";
import {
  callCursor,
  type Caller,
  type CallRecord,
  type HostInfo,
  type HostLease,
  type LeaseState,
  type RunState,
} from "../ledger/mod.ts";
import type { IsolationReport } from "../isolation/mod.ts";
import type { CapabilityReport, ConfigState } from "../schemas/mod.ts";
import { isOperator } from "./config_reload.ts";
import { VERSION } from "../version.ts";
import type { AdmissionSnapshot } from "./admission.ts";
import { type CostBreakdown, costBreakdown } from "./cost_breakdown.ts";
import type { Services } from "./open_services.ts";

/**
 * How long {@linkcode Insights.status} reuses an owner's counts of active runs and tasks, in
 * ms. The status is the overview a page polls; counting means two ledger listings, which would
 * make it the dearest route. The runs and tasks listings are always exact.
 */
export const STATUS_COUNTS_TTL_MS = 500;
/**
 * How long {@linkcode Insights.status} reuses the ledger's hosts and the scheduler's lease, in
 * ms. They change at other hosts' heartbeats (every 2 s), and a host is judged dead only after
 * 10 s without one, so a view this old tells nothing less; reading them is two thirds of a
 * status's cost. This host is always listed as it is now.
 */
export const STATUS_HOSTS_TTL_MS = 1000;
/** Most owners whose counts are kept at once. */
const STATUS_CACHE_OWNERS = 1000;
/** How many of the newest calls a summary sums up when the caller does not say. */
const SUMMARY_CALLS = 1000;

/** How many runs or tasks are in each state. */
export type StateCounts = Partial<Record<RunState, number>>;

/** The overall status of the service as one caller sees it. */
export interface ServiceStatus {
  /** Always `svc`. */
  service: "svc";
  /** The version of svc. */
  version: string;
  /** Seconds since the surface started. */
  uptime_s: number;
  /** This process. */
  host: { id: string; pid: number };
  /** Whom the status is about. */
  caller: { owner: string };
  /** Whether requests need a token. */
  auth: { required: boolean };
  /** The sandbox levels and what a `full` request gets. */
  kernel: { sandbox_levels: string[]; full: string };
  /** Whether a daemon leads the scheduler, and which. */
  scheduler: { mode: "leader" | "standby" | "off"; leader: string | null };
  /** Whether a live daemon claims queued work. */
  daemon: { running: boolean; count: number };
  /** The processes sharing the ledger: this one (answering, so alive) first. */
  hosts: HostInfo[];
  /** The configuration in effect, for the operator; null for other owners. */
  config: ConfigState | null;
  /** The caller's active runs by state. */
  runs: { active: StateCounts };
  /** The caller's active tasks by state. */
  tasks: { active: StateCounts };
  /** The caps and how full they are. */
  admission: AdmissionSnapshot;
  /** How many providers are configured and available. */
  providers: { total: number; available: number };
  /** The ledger's backend. */
  ledger: { ok: boolean; backend: "kv" | "postgres" };
  /** The isolation tiers: the `microvm` tier's backend, its accelerator, whether it can run now. */
  isolation: { microvm: IsolationReport | null };
}

/** Options of {@linkcode Insights}. */
export interface InsightsOptions {
  /** When the surface started (ms since the epoch), for its uptime. */
  startedAt: number;
  /** Whether the surface requires a token (reported in the status). */
  authRequired: boolean;
  /** The name of the lease the leading daemon's scheduler holds. */
  schedulerLease: string;
}

function countStates(items: ReadonlyArray<{ state: RunState }>): StateCounts {
  const counts: StateCounts = {};
  for (const item of items) counts[item.state] = (counts[item.state] ?? 0) + 1;
  return counts;
}

/** Counts by state with the states that have none left out, as {@linkcode countStates} gives. */
function presentCounts(counts: { queued: number; running: number }): StateCounts {
  const out: StateCounts = {};
  if (counts.queued > 0) out.queued = counts.queued;
  if (counts.running > 0) out.running = counts.running;
  return out;
}

/**
 * The hosts of the ledger with the one answering marked alive and listed first: it is
 * answering, whether or not it holds its heartbeat now (a dashboard beats only while it has
 * work). Absent from the ledger, it is added as it is.
 */
function withSelf(hosts: readonly HostInfo[], self: HostLease): HostInfo[] {
  const own = hosts.find((host) => host.host_id === self.ref.id);
  const me: HostInfo = {
    ...(own ?? {
      host_id: self.ref.id,
      pid: self.ref.pid,
      role: self.ref.role ?? "host",
      started_at: self.startedAt,
      heartbeat_at: new Date().toISOString(),
    }),
    alive: true,
    ...(self.ref.providers ? { providers: [...self.ref.providers] } : {}),
  };
  return [me, ...hosts.filter((host) => host.host_id !== self.ref.id)];
}

/** The reports of one surface over open services; each method is one answer of that surface. */
export class Insights {
  readonly #services: Services;
  readonly #options: InsightsOptions;
  readonly #counted = new Map<string, { at: number; counts: Promise<ActiveCounts> }>();
  #hosts: { at: number; view: Promise<HostsView> } | undefined;

  /** Reports over `services`, for a surface described by `options`. */
  constructor(services: Services, options: InsightsOptions) {
    this.#services = services;
    this.#options = options;
  }

  /** The overall status: version, kernel policy, scheduler, hosts, the caller's active work. */
  async status(caller: Caller): Promise<ServiceStatus> {
    const services = this.#services;
    const [active, providers, { hosts, lease }, admission, isolation] = await Promise.all([
      this.#activeCounts(caller),
      services.dispatcher.status(),
      this.#hostsView(),
      services.admission.snapshot(caller),
      services.runs.isolationReport(),
    ]);
    const listed = withSelf(hosts, services.host);
    const daemons = listed.filter((host) => host.alive && host.role === "daemon");
    const leader = daemons.find((host) => host.host_id === lease.holder)?.host_id ?? null;
    return {
      service: "svc",
      version: VERSION,
      uptime_s: Math.round((Date.now() - this.#options.startedAt) / 1000),
      host: { id: services.host.ref.id, pid: services.host.ref.pid },
      caller: { owner: caller.owner },
      auth: { required: this.#options.authRequired },
      kernel: {
        sandbox_levels: ["read-only", "write", "full"],
        full: services.config.sandbox.full,
      },
      scheduler: { mode: leader ? "leader" : daemons.length > 0 ? "standby" : "off", leader },
      daemon: { running: daemons.length > 0, count: daemons.length },
      hosts: listed,
      config: isOperator(caller) ? services.configuration.state() : null,
      runs: { active: active.runs },
      tasks: { active: active.tasks },
      admission,
      providers: {
        total: providers.length,
        available: providers.filter((p) => p.available).length,
      },
      ledger: { ok: true, backend: services.ledger.shared ? "postgres" : "kv" },
      isolation,
    };
  }

  /** A page of the caller's calls, newest first, and the cursor of the next page (or null). */
  async history(
    caller: Caller,
    page: { limit: number; before?: string },
  ): Promise<{ calls: CallRecord[]; next_cursor: string | null }> {
    const { calls } = await dispatchHistory(this.#services.ledger, caller, page);
    const last = calls.at(-1);
    return {
      calls,
      next_cursor: calls.length >= page.limit && last !== undefined ? callCursor(last) : null,
    };
  }

  /** The summary of the caller's newest `calls` calls, and its runs and tasks by state. */
  async stats(
    caller: Caller,
    calls?: number,
  ): Promise<{ calls: UsageSummary; runs: StateCounts; tasks: StateCounts }> {
    const [summary, runs, tasks] = await Promise.all([
      this.usage(caller, calls),
      this.#services.runs.list(caller, { limit: 1000 }),
      this.#services.tasks.list(caller, { limit: 1000 }),
    ]);
    return { calls: summary, runs: countStates(runs), tasks: countStates(tasks) };
  }

  /**
   * The caller's spending over its newest `calls` calls, by provider and by day, and which runs
   * (and tasks) spent it, by day and by hour (see {@linkcode costBreakdown}).
   */
  async costs(caller: Caller, calls?: number): Promise<CostReport> {
    const history = await dispatchHistory(this.#services.ledger, caller, {
      limit: calls ?? SUMMARY_CALLS,
    });
    const totals = history.summary;
    return {
      cost_usd: totals.cost_usd,
      unmetered_calls: totals.unmetered_calls,
      by_provider: totals.by_provider.map((p) => ({
        provider: p.provider,
        calls: p.calls,
        cost_usd: p.cost_usd,
        unmetered_calls: p.unmetered_calls,
      })),
      by_day: totals.by_day,
      ...costBreakdown(history.calls, Date.now()),
    };
  }

  /** Tokens, calls and costs of the caller's newest `calls` calls (default 1000). */
  async usage(caller: Caller, calls?: number): Promise<UsageSummary> {
    const history = await dispatchHistory(this.#services.ledger, caller, {
      limit: calls ?? SUMMARY_CALLS,
    });
    return history.summary;
  }

  /** The providers with availability, load and price, without paths of the host. */
  async providers(): Promise<ProviderStatus[]> {
    return remoteProviderStatus(await this.#services.dispatcher.status());
  }

  /** What each configured provider can do here, without paths of the host. */
  async capabilities(): Promise<CapabilityReport> {
    return remoteCapabilityReport(await this.#services.capabilities.report());
  }

  /** The ledger's hosts and the scheduler's lease, read at most once per {@linkcode STATUS_HOSTS_TTL_MS}. */
  #hostsView(): Promise<HostsView> {
    const now = Date.now();
    if (this.#hosts && now - this.#hosts.at < STATUS_HOSTS_TTL_MS) return this.#hosts.view;
    const ledger = this.#services.ledger;
    const view = Promise.all([
      ledger.listHosts(),
      ledger.readLease(this.#options.schedulerLease),
    ]).then(([hosts, lease]) => ({ hosts, lease }));
    const kept = { at: now, view };
    this.#hosts = kept;
    view.catch(() => {
      if (this.#hosts === kept) this.#hosts = undefined;
    });
    return view;
  }

  #activeCounts(caller: Caller): Promise<ActiveCounts> {
    const key = `${caller.admin ? "admin" : "owner"}:${caller.owner}`;
    const now = Date.now();
    const cached = this.#counted.get(key);
    if (cached && now - cached.at < STATUS_COUNTS_TTL_MS) return cached.counts;
    const counts = Promise.all([
      this.#services.runs.activeCounts(caller),
      this.#services.tasks.list(caller, { limit: 500 }),
    ]).then(([runs, tasks]) => ({
      runs: presentCounts(runs),
      tasks: countStates(tasks.filter((t) => t.state === "queued" || t.state === "running")),
    }));
    if (this.#counted.size >= STATUS_CACHE_OWNERS) this.#counted.clear();
    this.#counted.set(key, { at: now, counts });
    counts.catch(() => this.#counted.delete(key));
    return counts;
  }
}

/** The caller's spending: totals, by provider and by day, and by run per day and by hour. */
export interface CostReport extends CostBreakdown {
  /** What the metered calls cost, in US dollars. */
  cost_usd: number;
  /** Calls whose cost is not known. */
  unmetered_calls: number;
  /** The same by provider. */
  by_provider: Array<{
    provider: string;
    calls: number;
    cost_usd: number;
    unmetered_calls: number;
  }>;
  /** The same by day. */
  by_day: UsageSummary["by_day"];
}

type ActiveCounts = { runs: StateCounts; tasks: StateCounts };

/** What the ledger says of the hosts: their records, and who holds the scheduler's lease. */
type HostsView = {
  hosts: HostInfo[];
  lease: LeaseState;
};

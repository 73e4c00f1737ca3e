/**
 * What the dashboard reports about the service and the caller's work: the overall status, the
 * dispatch history, statistics, providers, costs and the usage summary. All of it is the
 * caller's own (the call log filtered by owner); providers and the kernel are the host's.
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import { dispatchHistory, remoteCapabilityReport, remoteProviderStatus } from "../dispatch/mod.ts";
import { callCursor, type RunState } from "../ledger/mod.ts";
import { SCHEDULER_LEASE } from "../daemon/mod.ts";
import { CapabilityReportSchema } from "../schemas/mod.ts";
import { VERSION } from "../version.ts";
import type { DashboardHono, RouteContext } from "./app.ts";
import { errors, jsonContent, nextCursor } from "./route_parts.ts";
import {
  CallRecordSchema,
  DayStatsSchema,
  pageOf,
  PageQuerySchema,
  ProviderStatusSchema,
  RunStateSchema,
  UsageSummarySchema,
} from "./schemas.ts";

/** Most calls the statistics, costs and usage routes sum up. */
export const SUMMARY_CALL_LIMIT = 10_000;

const SummaryQuerySchema = z.object({
  calls: z.coerce.number().int("must be a whole number").min(1).max(SUMMARY_CALL_LIMIT).optional()
    .meta({ description: `how many of the newest calls to sum up (default 1000)` }),
});

const CountsSchema = z.partialRecord(RunStateSchema, z.number()).meta({
  description: "how many are in each state",
});

/** One cap and how much of it is taken. */
const GaugeSchema = z.object({ used: z.number().int(), cap: z.number().int() });

/** Admission control's caps and how full they are (docs/SECURITY.md, "Capacity"). */
const AdmissionSchema = z.object({
  host_live: GaugeSchema.meta({ description: "runs executing in this host process" }),
  host_queued: GaugeSchema.meta({ description: "runs in the queue, every owner's" }),
  owner_live: GaugeSchema.meta({ description: "the caller's owner's live runs here" }),
  owner_queued: GaugeSchema.meta({ description: "the caller's owner's queued runs" }),
  owner_tasks: GaugeSchema.meta({ description: "the caller's owner's live tasks here" }),
  owner_streams: GaugeSchema.meta({ description: "the caller's owner's open event streams" }),
  max_remote_timeout_s: z.number().int().meta({
    description: "the longest run timeout a remote caller may ask for",
  }),
}).meta({
  description: "the caps (per-owner ones bind remote callers) and how full they are",
});

const StatusSchema = z.object({
  service: z.literal("svc"),
  version: z.string(),
  uptime_s: z.number(),
  host: z.object({ id: z.string(), pid: z.number() }),
  caller: z.object({ owner: z.string() }),
  auth: z.object({ required: z.boolean() }),
  kernel: z.object({
    sandbox_levels: z.array(z.string()),
    full: z.string().meta({
      description: "what a `full` sandbox request gets: deny, allow or ask",
    }),
  }),
  scheduler: z.object({
    mode: z.enum(["leader", "standby", "off"]).meta({
      description: "`leader`: a live daemon fires automations; `standby`: daemons run but " +
        "none leads yet; `off`: no daemon runs",
    }),
    leader: z.string().nullable().meta({ description: "the host id of the leading daemon" }),
  }),
  daemon: z.object({
    running: z.boolean().meta({ description: "a live daemon claims queued work" }),
    count: z.number(),
  }),
  hosts: z.array(z.object({
    host_id: z.string(),
    pid: z.number(),
    role: z.enum(["daemon", "host"]),
    started_at: z.string(),
    heartbeat_at: z.string(),
    alive: z.boolean(),
    hostname: z.string().optional().meta({ description: "the machine it runs on" }),
    providers: z.array(z.string()).optional().meta({
      description: "the providers configured on it: queued work naming one goes to such a host",
    }),
  })).meta({
    description: "the processes sharing the ledger (on a shared ledger, of every machine)",
  }),
  runs: z.object({ active: CountsSchema }),
  tasks: z.object({ active: CountsSchema }),
  admission: AdmissionSchema,
  providers: z.object({ total: z.number(), available: z.number() }),
  ledger: z.object({
    ok: z.boolean(),
    backend: z.enum(["kv", "postgres"]).meta({
      description: "kv: this machine's files under SVC_HOME; postgres: shared (SVC_LEDGER_URL)",
    }),
  }),
}).meta({ id: "Status" });

const statusRoute = createRoute({
  method: "get",
  path: "/api/status",
  summary: "Overall status: version, kernel policy, scheduler, the caller's active work",
  responses: {
    200: { description: "the status", content: jsonContent(StatusSchema) },
    ...errors(),
  },
});

const historyRoute = createRoute({
  method: "get",
  path: "/api/history",
  summary: "Dispatch history: the caller's calls, newest first",
  request: { query: PageQuerySchema },
  responses: {
    200: {
      description: "a page of calls",
      content: jsonContent(pageOf("calls", CallRecordSchema)),
    },
    ...errors(400),
  },
});

const statsRoute = createRoute({
  method: "get",
  path: "/api/stats",
  summary: "Aggregate statistics: calls, failures, latency per provider, runs and tasks by state",
  request: { query: SummaryQuerySchema },
  responses: {
    200: {
      description: "the statistics",
      content: jsonContent(z.object({
        calls: UsageSummarySchema,
        runs: CountsSchema,
        tasks: CountsSchema,
      })),
    },
    ...errors(400),
  },
});

const providersRoute = createRoute({
  method: "get",
  path: "/api/providers",
  summary: "Providers with their availability, load and price",
  responses: {
    200: {
      description: "the providers",
      content: jsonContent(z.object({ providers: z.array(ProviderStatusSchema) })),
    },
    ...errors(),
  },
});

const capabilitiesRoute = createRoute({
  method: "get",
  path: "/api/capabilities",
  summary:
    "What each configured provider can do on this host: its tool and version (and whether svc is tested with it), whether its credentials or endpoint answer, its sandbox levels",
  description:
    "The same for every caller, and never a path on the host (a tool is named by its name; `path` is null). Bounded in time: the report comes within its deadline_ms (10 s); probes still running then are reported as such. Key variables are named, never shown.",
  responses: {
    200: { description: "the report", content: jsonContent(CapabilityReportSchema) },
    ...errors(),
  },
});

const costsRoute = createRoute({
  method: "get",
  path: "/api/costs",
  summary: "Cost accounting: the caller's spending by provider and by day",
  request: { query: SummaryQuerySchema },
  responses: {
    200: {
      description: "the costs",
      content: jsonContent(z.object({
        cost_usd: z.number(),
        unmetered_calls: z.number(),
        by_provider: z.array(z.object({
          provider: z.string(),
          calls: z.number(),
          cost_usd: z.number(),
          unmetered_calls: z.number(),
        })),
        by_day: z.array(DayStatsSchema),
      })),
    },
    ...errors(400),
  },
});

const usageRoute = createRoute({
  method: "get",
  path: "/api/usage/summary",
  summary: "Usage summary: tokens, calls and costs of the caller's newest calls",
  request: { query: SummaryQuerySchema },
  responses: {
    200: { description: "the summary", content: jsonContent(UsageSummarySchema) },
    ...errors(400),
  },
});

function countStates(items: ReadonlyArray<{ state: RunState }>): Partial<Record<RunState, number>> {
  const counts: Partial<Record<RunState, number>> = {};
  for (const item of items) counts[item.state] = (counts[item.state] ?? 0) + 1;
  return counts;
}

/**
 * How long `/api/status` reuses an owner's counts of active runs and tasks, in ms. The status is
 * the overview a page polls; counting means two ledger listings, which would make it the
 * dearest route. The runs and tasks routes are always exact.
 */
export const STATUS_COUNTS_TTL_MS = 500;
/** Most owners whose counts are kept at once. */
const STATUS_CACHE_OWNERS = 1000;

type ActiveCounts = {
  runs: Partial<Record<RunState, number>>;
  tasks: Partial<Record<RunState, number>>;
};

/** Adds the status, history, statistics, providers, costs and usage routes. */
export function addInsightRoutes(app: DashboardHono, context: RouteContext): void {
  const { services } = context;
  const counted = new Map<string, { at: number; counts: Promise<ActiveCounts> }>();
  const activeCounts = (caller: Parameters<typeof dispatchHistory>[1]): Promise<ActiveCounts> => {
    const key = `${caller.admin ? "admin" : "owner"}:${caller.owner}`;
    const now = Date.now();
    const cached = counted.get(key);
    if (cached && now - cached.at < STATUS_COUNTS_TTL_MS) return cached.counts;
    const counts = Promise.all([
      services.runs.list(caller, { states: ["queued", "running"], limit: 500 }),
      services.tasks.list(caller, { limit: 500 }),
    ]).then(([runs, tasks]) => ({
      runs: countStates(runs),
      tasks: countStates(tasks.filter((t) => t.state === "queued" || t.state === "running")),
    }));
    if (counted.size >= STATUS_CACHE_OWNERS) counted.clear();
    counted.set(key, { at: now, counts });
    counts.catch(() => counted.delete(key));
    return counts;
  };
  const summary = (caller: Parameters<typeof dispatchHistory>[1], calls?: number) =>
    dispatchHistory(services.ledger, caller, { limit: calls ?? 1000 });

  app.openapi(statusRoute, async (c) => {
    const caller = c.get("caller");
    const [active, providers, hosts, lease, admission] = await Promise.all([
      activeCounts(caller),
      services.dispatcher.status(),
      services.ledger.listHosts(),
      services.ledger.readLease(SCHEDULER_LEASE),
      services.admission.snapshot(caller),
    ]);
    const daemons = hosts.filter((host) => host.alive && host.role === "daemon");
    const leader = daemons.find((host) => host.host_id === lease.holder)?.host_id ?? null;
    return c.json({
      service: "svc" as const,
      version: VERSION,
      uptime_s: Math.round((Date.now() - context.startedAt) / 1000),
      host: { id: services.host.ref.id, pid: services.host.ref.pid },
      caller: { owner: caller.owner },
      auth: { required: context.authRequired },
      kernel: {
        sandbox_levels: ["read-only", "write", "full"],
        full: services.config.sandbox.full,
      },
      scheduler: {
        mode: leader ? "leader" as const : daemons.length > 0 ? "standby" as const : "off" as const,
        leader,
      },
      daemon: { running: daemons.length > 0, count: daemons.length },
      hosts,
      runs: { active: active.runs },
      tasks: { active: active.tasks },
      admission,
      providers: {
        total: providers.length,
        available: providers.filter((p) => p.available).length,
      },
      ledger: { ok: true, backend: services.ledger.shared ? "postgres" as const : "kv" as const },
    }, 200);
  });

  app.openapi(historyRoute, async (c) => {
    const query = c.req.valid("query");
    const limit = query.limit ?? 100;
    const { calls } = await dispatchHistory(services.ledger, c.get("caller"), {
      limit,
      ...(query.cursor ? { before: query.cursor } : {}),
    });
    return c.json({
      calls,
      next_cursor: nextCursor(calls, limit, callCursor),
    }, 200);
  });

  app.openapi(statsRoute, async (c) => {
    const caller = c.get("caller");
    const { calls } = c.req.valid("query");
    const [history, runs, tasks] = await Promise.all([
      summary(caller, calls),
      services.runs.list(caller, { limit: 1000 }),
      services.tasks.list(caller, { limit: 1000 }),
    ]);
    return c.json({
      calls: history.summary,
      runs: countStates(runs),
      tasks: countStates(tasks),
    }, 200);
  });

  app.openapi(providersRoute, async (c) => {
    return c.json({ providers: remoteProviderStatus(await services.dispatcher.status()) }, 200);
  });

  app.openapi(capabilitiesRoute, async (c) => {
    return c.json(remoteCapabilityReport(await services.capabilities.report()), 200);
  });

  app.openapi(costsRoute, async (c) => {
    const { summary: totals } = await summary(c.get("caller"), c.req.valid("query").calls);
    return c.json({
      cost_usd: totals.cost_usd,
      unmetered_calls: totals.unmetered_calls,
      by_provider: totals.by_provider.map((p) => ({
        provider: p.provider,
        calls: p.calls,
        cost_usd: p.cost_usd,
        unmetered_calls: p.unmetered_calls,
      })),
      by_day: totals.by_day,
    }, 200);
  });

  app.openapi(usageRoute, async (c) => {
    const { summary: totals } = await summary(c.get("caller"), c.req.valid("query").calls);
    return c.json(totals, 200);
  });
}

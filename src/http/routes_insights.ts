/**
 * What the dashboard reports about the service and the caller's work: the overall status, the
 * dispatch history, statistics, providers, costs and the usage summary, each one call of the
 * {@linkcode Insights} service, which holds what they count and how.
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { SCHEDULER_LEASE } from "../daemon/mod.ts";
import { CapabilityReportSchema, ConfigStateSchema } from "../schemas/mod.ts";
import {
  COST_DAYS,
  COST_HOURS,
  COST_TOP_HOUR_RUNS,
  COST_TOP_RUNS,
  Insights,
} from "../services/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { errors, jsonContent } from "./route_parts.ts";
import {
  CallRecordSchema,
  DayRunsSchema,
  DayStatsSchema,
  HourSpendSchema,
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
    description: "the processes sharing the ledger (on a shared ledger, of every machine): " +
      "the one answering is alive; one dead for more than 10 minutes has left the list",
  }),
  config: ConfigStateSchema.nullable().meta({
    description: "the configuration in effect and the last reload's error, for the operator " +
      "(a token bound to no owner); null for other owners",
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
  isolation: z.object({
    microvm: z.object({
      backend: z.string().nullable().meta({
        description: "SVC_WORKFLOW_MICROVM_BACKEND: backend_a (Lima), backend_b (krunvm), qemu; " +
          "null when it is set wrong",
      }),
      accel: z.enum(["kvm", "tcg"]).nullable().meta({
        description: "how its VMs run: kvm, or tcg (software emulation); null where not known",
      }),
      ready: z.boolean().nullable().meta({
        description: "whether a microvm run could start now; null when not checked",
      }),
      note: z.string(),
    }).nullable(),
  }).meta({ description: "the isolation tiers (the microvm tier's backend)" }),
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
  summary:
    "Cost accounting: the caller's spending by provider and by day, and which runs spent it by day and by hour",
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
        by_run: z.array(DayRunsSchema).meta({
          description: `per day (UTC, the newest ${COST_DAYS} first): its ${COST_TOP_RUNS} ` +
            "dearest runs and tasks, the rest summed in `others`",
        }),
        by_hour: z.array(HourSpendSchema).meta({
          description: `per hour (UTC) of the last ${COST_HOURS} hours with calls, newest ` +
            `first, with its ${COST_TOP_HOUR_RUNS} dearest runs and tasks`,
        }),
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

/** The sub-app of the status, history, statistics, providers, costs and usage routes. */
export function insightRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  const insights = new Insights(context.services, {
    startedAt: context.startedAt,
    authRequired: context.authRequired,
    schedulerLease: SCHEDULER_LEASE,
  });

  app.openapi(statusRoute, async (c) => c.json(await insights.status(c.get("caller")), 200));

  app.openapi(historyRoute, async (c) => {
    const query = c.req.valid("query");
    return c.json(
      await insights.history(c.get("caller"), {
        limit: query.limit ?? 100,
        ...(query.cursor ? { before: query.cursor } : {}),
      }),
      200,
    );
  });

  app.openapi(statsRoute, async (c) => {
    return c.json(await insights.stats(c.get("caller"), c.req.valid("query").calls), 200);
  });

  app.openapi(providersRoute, async (c) => c.json({ providers: await insights.providers() }, 200));

  app.openapi(capabilitiesRoute, async (c) => c.json(await insights.capabilities(), 200));

  app.openapi(costsRoute, async (c) => {
    return c.json(await insights.costs(c.get("caller"), c.req.valid("query").calls), 200);
  });

  app.openapi(usageRoute, async (c) => {
    return c.json(await insights.usage(c.get("caller"), c.req.valid("query").calls), 200);
  });

  return app;
}

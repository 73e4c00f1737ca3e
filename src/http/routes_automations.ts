/**
 * Automations over HTTP: list the caller's, create one, delete one. The daemon's scheduler
 * fires them; the configuration file's are listed too, and cannot be deleted here.
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { AutomationRequestSchema } from "../schemas/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { errors, jsonContent } from "./route_parts.ts";

const AutomationSchema = z.object({
  automation_id: z.string(),
  name: z.string(),
  owner: z.string(),
  cron: z.string(),
  timezone: z.string().optional(),
  action: z.union([
    z.object({
      workflow: z.string(),
      args: z.unknown().optional(),
      fake_dispatch: z.boolean().optional(),
    }),
    z.object({ dispatch: z.record(z.string(), z.unknown()) }),
  ]),
  source: z.enum(["config", "api"]),
  remote: z.boolean().optional().meta({
    description: "made by a remote caller: each firing is checked as that caller's request",
  }),
  created_at: z.string(),
  last_fired: z.object({
    slot: z.string(),
    at: z.string(),
    item: z.record(z.string(), z.string()),
  }).nullable(),
}).meta({ id: "Automation" });

const IdParamSchema = z.object({
  automation_id: z.string().min(1).max(128).meta({
    description: "`aut_...`, or `config.<name>` for one of the configuration file",
  }),
});

const listRoute = createRoute({
  method: "get",
  path: "/api/automations",
  summary: "The caller's automations: saved workflows and dispatches on cron schedules",
  responses: {
    200: {
      description: "the automations",
      content: jsonContent(z.object({ automations: z.array(AutomationSchema) })),
    },
    ...errors(),
  },
});

const createAutomationRoute = createRoute({
  method: "post",
  path: "/api/automations",
  summary: "Create an automation (the daemon's scheduler fires it)",
  description: "An owner has at most `daemon.automations_per_owner` (default 50; 429 beyond), " +
    "and a schedule fires at most once every `daemon.automation_min_interval_s` (default 60 s; " +
    "400 when it would fire more often).",
  request: { body: { required: true, content: jsonContent(AutomationRequestSchema) } },
  responses: {
    201: { description: "the new automation", content: jsonContent(AutomationSchema) },
    ...errors(400, 409, 429),
  },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/api/automations/{automation_id}",
  summary: "Delete one of the caller's automations",
  request: { params: IdParamSchema },
  responses: {
    200: {
      description: "deleted",
      content: jsonContent(z.object({ automation_id: z.string(), deleted: z.literal(true) })),
    },
    ...errors(404, 409),
  },
});

/** The sub-app of the automation routes. */
export function automationRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  const { automations } = context.services;

  app.openapi(listRoute, async (c) => {
    return c.json({ automations: await automations.list(c.get("caller")) }, 200);
  });

  app.openapi(createAutomationRoute, async (c) => {
    return c.json(await automations.create(c.req.valid("json"), c.get("caller")), 201);
  });

  app.openapi(deleteRoute, async (c) => {
    const { automation_id } = c.req.valid("param");
    await automations.delete(automation_id, c.get("caller"));
    return c.json({ automation_id, deleted: true as const }, 200);
  });

  return app;
}

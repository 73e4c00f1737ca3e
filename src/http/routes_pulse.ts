/**
 * The pulse over HTTP: `GET /api/pulse`, one cheap answer for status bars and the page's header
 * strip, one call of the pulse service (which bounds its reads and reuses its answer briefly).
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import { PulseSchema } from "../schemas/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { errors, jsonContent } from "./route_parts.ts";

const pulseRoute = createRoute({
  method: "get",
  path: "/api/pulse",
  summary: "The pulse: the caller's running, queued and waiting work, spend, providers, failures",
  description:
    "The caller's owner only (an administrator's covers every owner). Cheap: a fixed number of " +
    "bounded ledger reads (the newest records of each kind, named in `window`), and an answer " +
    "is reused for `fresh_ms` per owner. Provider reasons name tools, never host paths.",
  responses: {
    200: { description: "the pulse", content: jsonContent(PulseSchema) },
    ...errors(),
  },
});

/** The sub-app of the pulse route. */
export function pulseRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  app.openapi(
    pulseRoute,
    async (c) => c.json(await context.services.pulse.pulse(c.get("caller")), 200),
  );
  return app;
}

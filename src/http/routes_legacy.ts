/**
 * `POST /api/workflow/legacy`: runs a deprecated version-1 chain as its equivalent version-2
 * script, an ordinary run (journal, resume, budget, limits, events, status). Answers as
 * `POST /api/workflow/run` does, with the deprecation notice, the script, and `Deprecation`
 * and `Link: rel="successor-version"` headers.
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { legacyRunRequest, LegacyWorkflowBodySchema } from "../legacy/mod.ts";
import { submitRun } from "../services/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { errors, jsonContent } from "./route_parts.ts";
import { RunStateSchema } from "./schemas.ts";

/** What `POST /api/workflow/legacy` answers: the run's handle, the notice and the script. */
const LegacyRunStartedSchema = z.object({
  run_id: z.string(),
  state: RunStateSchema,
  status_url: z.string(),
  events_url: z.string(),
  deprecation: z.string().meta({ description: "version 1 is retiring: what to use instead" }),
  script: z.string().meta({
    description: "the equivalent version-2 script the run runs (POST /api/workflow/run runs it)",
  }),
}).meta({ id: "LegacyRunStarted" });

/** The successor of this route, as the `Link` header names it. */
const SUCCESSOR = '</api/workflow/run>; rel="successor-version"';

const legacyRoute = createRoute({
  method: "post",
  path: "/api/workflow/legacy",
  summary: "Run a version-1 chain (deprecated)",
  description: "Validates the chain (YAML or JSON text, or the parsed value), translates it " +
    "into the equivalent version-2 script and starts that as an ordinary run; answers 202 at " +
    "once. A bad chain answers 400 naming the step and the field. Version 1 is retiring: " +
    "use POST /api/workflow/run with the returned `script`.",
  deprecated: true,
  request: { body: { required: true, content: jsonContent(LegacyWorkflowBodySchema) } },
  responses: {
    202: {
      description: "the run was recorded and starts",
      headers: z.object({
        Deprecation: z.string().meta({ description: "always `true`" }),
        Link: z.string().meta({ description: `the successor: ${SUCCESSOR}` }),
      }),
      content: jsonContent(LegacyRunStartedSchema),
    },
    ...errors(400, 404, 409, 503),
  },
});

/** The sub-app of the route of version-1 chains. */
export function legacyRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  app.openapi(legacyRoute, async (c) => {
    const legacy = legacyRunRequest(c.req.valid("json"));
    const status = await submitRun(context.services, legacy.request, c.get("caller"), {
      via: "api",
    });
    return c.json(
      {
        run_id: status.run_id,
        state: status.state,
        status_url: `/api/workflow/${status.run_id}`,
        events_url: `/api/workflow/${status.run_id}/events`,
        deprecation: legacy.notice,
        script: legacy.script,
      },
      202,
      { Deprecation: "true", Link: SUCCESSOR },
    );
  });

  return app;
}

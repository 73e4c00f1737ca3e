/**
 * The configuration over HTTP, for the operator (a token bound to no owner): `GET /api/config`
 * reads what is in effect and why the last reload was refused; `POST /api/config/reload` reads
 * the file again now. Each is one call of the configuration service, which holds the rule.
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { ConfigStateSchema } from "../schemas/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { errors, jsonContent } from "./route_parts.ts";

const OPERATOR_NOTE = "The operator's only: a token bound to an owner gets 403 `forbidden`, " +
  "since the configuration (its file, providers, endpoints) spans every owner.";

const configRoute = createRoute({
  method: "get",
  path: "/api/config",
  summary: "The configuration in effect: when and where it was read, the last reload's error",
  description: OPERATOR_NOTE,
  responses: {
    200: { description: "the configuration's state", content: jsonContent(ConfigStateSchema) },
    ...errors(),
  },
});

const ReloadSchema = z.object({
  outcome: z.enum(["reloaded", "unchanged", "refused"]).meta({
    description: "`reloaded`: the file was taken; `unchanged`: it says what runs already; " +
      "`refused`: it is invalid, and the configuration in effect stays (see `config.error`)",
  }),
  config: ConfigStateSchema,
}).meta({ id: "ConfigReload" });

const reloadRoute = createRoute({
  method: "post",
  path: "/api/config/reload",
  summary: "Reads the configuration file again; takes it when it is valid",
  description: "Validated in full before it takes effect; an invalid file leaves the " +
    "configuration in effect as it is and answers 200 with `outcome: refused` and the error. " +
    "Runs in flight keep the settings they started with. " + OPERATOR_NOTE,
  responses: {
    200: { description: "what the reload did", content: jsonContent(ReloadSchema) },
    ...errors(),
  },
});

/** The sub-app of the configuration routes. */
export function configRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  const { configuration } = context.services;
  app.openapi(configRoute, (c) => c.json(configuration.stateFor(c.get("caller")), 200));
  app.openapi(reloadRoute, async (c) => {
    const { outcome, state } = await configuration.reloadFor(c.get("caller"));
    return c.json({ outcome, config: state }, 200);
  });
  return app;
}

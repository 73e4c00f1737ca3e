/**
 * What every route module shares: the context the dashboard builds once, the type of the
 * OpenAPI sub-app each module returns, and the factory of such a sub-app. The dashboard
 * (`app.ts`) composes the sub-apps with `route()`; the route modules import only this, so
 * no import leads from a route module back to the app.
 * @module
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { SchemaIssue } from "../schemas/mod.ts";
import type { Services } from "../services/mod.ts";
import type { DashboardEnv } from "./env.ts";
import { validationError } from "./errors.ts";

/** What the route modules share. */
export interface RouteContext {
  /** The services the routes call. */
  services: Services;
  /** Event stream settings. */
  sse: { keepAliveMs?: number; retryMs?: number };
  /** When the server started (ms since the epoch). */
  startedAt: number;
  /** Whether requests without a token are accepted (as the local owner). */
  authRequired: boolean;
  /** Aborts when the server closes: open streams end. */
  signal: AbortSignal;
}

/** The OpenAPI app type of the dashboard and of every route module's sub-app. */
export type DashboardHono = OpenAPIHono<DashboardEnv>;

/**
 * A new OpenAPI app whose failed validations answer 400 naming the field, in the API's error
 * shape. Errors thrown by handlers reach the one error handler of the app it is mounted on.
 */
export function routeApp(): DashboardHono {
  return new OpenAPIHono<DashboardEnv>({
    defaultHook: (result) =>
      result.success
        ? undefined
        : validationError(result.target, result.error.issues as SchemaIssue[]),
  });
}

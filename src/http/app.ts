/**
 * The dashboard's Hono application: the security layer over `/api/*` and `/mcp`, the body
 * reader, the route modules' sub-apps, the tool protocol's Streamable HTTP endpoint, the OpenAPI document generated from the routes' schemas, and the one error handler.
 * It is a `fetch` handler: tests call it in process, `serveDashboard()` puts it on a port.
 * @module
 */
import type { Services } from "../services/mod.ts";
import { SvcError } from "../errors/mod.ts";
import { VERSION } from "../version.ts";
import type { MiddlewareHandler } from "hono";
import type { McpHttpHandler } from "../mcp/mod.ts";
import { dashboardAuth } from "./auth.ts";
import type { AuthSettings } from "./auth_settings.ts";
import type { DashboardEnv } from "./env.ts";
import { errorResponse, renderError } from "./errors.ts";
import { hostCheck } from "./host_check.ts";
import { jsonBody } from "./json_body.ts";
import { automationRoutes } from "./routes_automations.ts";
import { boardRoutes } from "./routes_board.ts";
import { callEventRoutes } from "./routes_call_events.ts";
import { configRoutes } from "./routes_config.ts";
import { dispatchRoutes } from "./routes_dispatch.ts";
import { eventRoutes } from "./routes_events.ts";
import { memoryRoutes } from "./routes_memory.ts";
import { notificationRoutes } from "./routes_notifications.ts";
import { insightRoutes } from "./routes_insights.ts";
import { legacyRoutes } from "./routes_legacy.ts";
import { runRoutes } from "./routes_runs.ts";
import { pulseRoutes } from "./routes_pulse.ts";
import { sessionRoutes } from "./routes_sessions.ts";
import { pageServer } from "./page.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";

/** Options of {@linkcode dashboardApp}. */
export interface DashboardAppOptions {
  /** Tokens, owners and allowed origins. */
  auth: AuthSettings;
  /** The server's own origins, always allowed (its page calls the API from there). */
  ownOrigins?: readonly string[];
  /** Count each request's own origin as the server's (a server bound to every interface). */
  sameOrigin?: boolean;
  /** Largest request body in bytes. Default 2 MiB. */
  maxBodyBytes?: number;
  /** Milliseconds between keep-alive comments on quiet event streams. Default 15000. */
  keepAliveMs?: number;
  /** The reconnection delay event streams ask of clients, in ms. Default 2000. */
  retryMs?: number;
  /** When the server started (ms since the epoch), for its uptime. Default: now. */
  startedAt?: number;
  /**
   * The host names requests may carry in `Host` (DNS-rebinding protection); absent, any. A
   * server on a loopback address passes {@linkcode LOOPBACK_HOSTS}.
   */
  allowedHosts?: readonly string[];
  /** Where internal errors of the tool-protocol endpoint are reported. Default: dropped. */
  logError?: (message: string) => void;
  /** Aborting it ends every open event stream (the server is closing). */
  signal?: AbortSignal;
  /** The folder of the board page's files. Default: `page/` of this installation. */
  pageDir?: string;
}

/** The dashboard as a fetch handler, and its OpenAPI document. */
export interface DashboardApp {
  /** Answers one request. */
  fetch(request: Request): Promise<Response>;
  /** The OpenAPI 3.1 document of every `/api/*` route, as `GET /api/openapi.json` serves it. */
  openapi(): Record<string, unknown>;
  /** Every `/api/*` route the app answers: method and path, `{param}` style as in the document. */
  routes(): Array<{ method: string; path: string }>;
}

/** Builds the dashboard over open services. Options are checked here, once. */
export function dashboardApp(services: Services, options: DashboardAppOptions): DashboardApp {
  const app: DashboardHono = routeApp();
  app.onError((error) => renderError(error));
  app.notFound((c) =>
    c.req.path.startsWith("/api/")
      ? errorResponse(
        new SvcError("not_found", `Cannot ${c.req.method} ${clip(c.req.path)}: no such route`),
      )
      : new Response("Not found\n", { status: 404, headers: { "content-type": "text/plain" } })
  );
  if (options.allowedHosts) app.use("*", hostCheck(options.allowedHosts));
  const authenticate = dashboardAuth({
    settings: options.auth,
    ownOrigins: options.ownOrigins ?? [],
    sameOrigin: options.sameOrigin ?? false,
  });
  app.use("/api/*", authenticate);
  mountMcp(app, services, options, authenticate);
  app.use("/api/*", jsonBody({ maxBytes: options.maxBodyBytes }));
  const context: RouteContext = {
    services,
    sse: { keepAliveMs: options.keepAliveMs, retryMs: options.retryMs },
    startedAt: options.startedAt ?? Date.now(),
    authRequired: options.auth.required,
    signal: options.signal ?? new AbortController().signal,
  };
  // Each route module is a sub-app; mounted after the security layer and the body reader, so
  // that those run first, and answered by this app's one error handler.
  for (
    const routes of [
      runRoutes,
      dispatchRoutes,
      sessionRoutes,
      insightRoutes,
      boardRoutes,
      eventRoutes,
      memoryRoutes,
      automationRoutes,
      legacyRoutes,
      pulseRoutes,
      callEventRoutes,
      notificationRoutes,
      configRoutes,
    ]
  ) app.route("/", routes(context));
  const openapi = openapiDocument(app);
  app.get("/api/openapi.json", (c) => c.json(openapi()));
  // The board page: every other GET outside /api/ is one of its files, or 404.
  const page = pageServer(options.pageDir !== undefined ? { dir: options.pageDir } : {});
  app.on(["GET", "HEAD"], "/*", async (c) => {
    if (c.req.path.startsWith("/api/")) return c.notFound();
    return await page.respond(c.req.path, c.req.raw) ?? c.notFound();
  });
  const routes = () => apiRoutes(app);
  return { fetch: async (request) => await app.fetch(request), openapi, routes };
}

/**
 * The tool protocol over Streamable HTTP at `/mcp`: the same tokens, the token's owner is the
 * caller. Loaded at its first request: the SDK adds about 60 ms to every start of the command
 * line.
 */
function mountMcp(
  app: DashboardHono,
  services: Services,
  options: DashboardAppOptions,
  authenticate: MiddlewareHandler<DashboardEnv>,
): void {
  let mcp: Promise<McpHttpHandler> | undefined;
  const mcpHandler = () =>
    mcp ??= import("../mcp/mod.ts").then((module) =>
      module.mcpHttpHandler(services, {
        ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
        ...(options.logError ? { logError: options.logError } : {}),
      })
    );
  options.signal?.addEventListener("abort", () => void mcp?.then((h) => h.close()), {
    once: true,
  });
  app.use("/mcp", authenticate);
  app.all("/mcp", async (c) => await (await mcpHandler()).fetch(c.req.raw, c.get("caller")));
}

/** The OpenAPI document of `app`'s routes, built at its first reading. */
function openapiDocument(app: DashboardHono): () => Record<string, unknown> {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
  });
  let cached: Record<string, unknown> | undefined;
  return () =>
    cached ??= app.getOpenAPI31Document({
      openapi: "3.1.0",
      info: {
        title: "svc dashboard API",
        version: VERSION,
        description:
          "Runs, dispatches, tasks, sessions, the board and the accounting of svc. Every /api/* " +
          "route needs 'Authorization: Bearer <token>'; errors are {error: {status, code, message}}.",
      },
      security: [{ bearer: [] }],
    }) as unknown as Record<string, unknown>;
}

/** Every `/api/*` route `app` answers, once each, `{param}` style. */
function apiRoutes(app: DashboardHono): Array<{ method: string; path: string }> {
  const seen = new Map<string, { method: string; path: string }>();
  for (const route of app.routes) {
    if (route.method === "ALL" || !route.path.startsWith("/api/")) continue;
    const path = route.path.replace(/:([A-Za-z_]+)/g, "{$1}");
    seen.set(`${route.method} ${path}`, { method: route.method, path });
  }
  return [...seen.values()];
}

function clip(text: string): string {
  const shown = JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}...` : text);
  return shown.slice(1, -1);
}

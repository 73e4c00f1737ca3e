/**
 * The daemon's HTTP side: `GET /health` (open, so it says liveness only: `{status}`, 503 when
 * unhealthy), `GET /health/detail` (the whole snapshot: hosts, pids, webhook names, queue; for
 * the operator's token only, as it spans every owner) and `POST /webhooks/{name}` (each hook
 * authenticated by its own signature, not by a bearer token). Errors are the API's error object,
 * rendered in one place.
 * @module
 */
import { Hono } from "hono";
import { SvcError } from "../errors/mod.ts";
import type { Daemon } from "../daemon/mod.ts";
import { dashboardAuth } from "./auth.ts";
import type { AuthSettings } from "./auth_settings.ts";
import type { DashboardEnv } from "./env.ts";
import { errorResponse, renderError } from "./errors.ts";

/** The daemon as a fetch handler. */
export interface DaemonApp {
  /** Answers one request. */
  fetch(request: Request): Promise<Response>;
}

/** Options of {@linkcode daemonApp}. */
export interface DaemonAppOptions {
  /** The tokens `GET /health/detail` accepts (the dashboard's settings); only owner-less ones. */
  auth: AuthSettings;
}

const NO_STORE = { "cache-control": "no-store" };

/** The daemon's app over a started daemon. */
export function daemonApp(daemon: Daemon, options: DaemonAppOptions): DaemonApp {
  const app = new Hono<DashboardEnv>();
  app.onError((error) => renderError(error));
  app.notFound((c) =>
    errorResponse(
      new SvcError(
        "not_found",
        `Cannot ${c.req.method} ${c.req.path.slice(0, 200)}: no such route`,
      ),
    )
  );
  app.get("/health", async (c) => {
    // Anyone who can reach the port may ask: liveness, nothing of the host, its owners or hooks.
    const { status } = await daemon.health();
    return c.json({ status }, status === "ok" ? 200 : 503, NO_STORE);
  });
  app.use("/health/detail", dashboardAuth({ settings: options.auth }));
  app.get("/health/detail", async (c) => {
    const caller = c.get("caller");
    if (caller.operator !== true) {
      throw new SvcError(
        "forbidden",
        "Cannot show the daemon's health detail: it spans every owner, so it needs a token bound to no owner",
      );
    }
    const health = await daemon.health();
    return c.json(health, health.status === "ok" ? 200 : 503, NO_STORE);
  });
  app.post("/webhooks/:name", async (c) => {
    const result = await daemon.webhooks.receive(c.req.param("name"), {
      headers: c.req.raw.headers,
      body: c.req.raw.body,
    });
    return c.json(result, result.duplicate ? 200 : 202);
  });
  return { fetch: (request) => Promise.resolve(app.fetch(request)) };
}

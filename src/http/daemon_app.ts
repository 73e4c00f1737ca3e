/**
 * The daemon's HTTP side: `GET /health` (open, so it says only what is no one's secret: status,
 * kernel policy and scheduler mode; 503 when unhealthy), `GET /health/detail` (the whole snapshot: hosts, pids, webhook names, queue; for
 * the operator's token only, as it spans every owner) and `POST /webhooks/{name}` (each hook
 * authenticated by its own signature, not by a bearer token). Errors are the API's error object,
 * rendered in one place.
 * @module
 */
import { Hono } from "hono";
import { SvcError } from "../errors/mod.ts";
import type { Daemon, HealthSnapshot } from "../daemon/mod.ts";
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

/** What the open `GET /health` answers: the specification's snapshot of kernel and scheduler. */
export interface OpenHealth {
  /** `ok`, or `unhealthy` (the detail says why). */
  status: HealthSnapshot["status"];
  /** The admission policy in force: the highest sandbox level and what `full` gets. */
  kernel: HealthSnapshot["kernel"];
  /** Whether this daemon's scheduler leads, stands by or is off. */
  scheduler: { mode: HealthSnapshot["scheduler"]["mode"] };
}

/**
 * The part of a health snapshot anyone who reaches the port may read: fixed words only, picked
 * field by field, so that no path, token, owner, host, hook or error text can ever be in it.
 */
export function openHealth(health: HealthSnapshot): OpenHealth {
  return {
    status: health.status,
    kernel: { sandbox_ceiling: health.kernel.sandbox_ceiling, full: health.kernel.full },
    scheduler: { mode: health.scheduler.mode },
  };
}

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
    const health = openHealth(await daemon.health());
    return c.json(health, health.status === "ok" ? 200 : 503, NO_STORE);
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

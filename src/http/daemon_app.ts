/**
 * The daemon's HTTP side: `GET /health` (open: nothing secret in it; 503 with the same body when
 * unhealthy) and `POST /webhooks/{name}` (each hook authenticated by its own signature, not by a
 * bearer token). Errors are the API's error object, rendered in one place.
 * @module
 */
import { Hono } from "hono";
import { SvcError } from "../errors/mod.ts";
import type { Daemon } from "../daemon/mod.ts";
import { errorResponse, renderError } from "./errors.ts";

/** The daemon as a fetch handler. */
export interface DaemonApp {
  /** Answers one request. */
  fetch(request: Request): Promise<Response>;
}

/** The daemon's app over a started daemon. */
export function daemonApp(daemon: Daemon): DaemonApp {
  const app = new Hono();
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
    const health = await daemon.health();
    return c.json(health, health.status === "ok" ? 200 : 503, { "cache-control": "no-store" });
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

/**
 * The dashboard on a port: the app over the platform's HTTP server (`Deno.serve`, or Node's
 * `http` in the npm package), with the listening address as its own origin.
 * @module
 */
import { platform } from "../platform/mod.ts";
import type { Services } from "../services/mod.ts";
import { type DashboardApp, dashboardApp, type DashboardAppOptions } from "./app.ts";
import { LOOPBACK_HOSTS } from "./host_check.ts";

/** The dashboard's default port (the specification's). */
export const DASHBOARD_PORT = 41521;
/** The dashboard's default address: this machine only. */
export const DASHBOARD_HOST = "127.0.0.1";

/** Options of {@linkcode serveDashboard}. */
export interface ServeDashboardOptions
  extends Omit<DashboardAppOptions, "ownOrigins" | "sameOrigin" | "allowedHosts"> {
  /** Address to listen on. Default 127.0.0.1. */
  hostname?: string;
  /** Port to listen on; 0 picks a free one. Default 41521. */
  port?: number;
  /** Aborting it closes the server. */
  signal?: AbortSignal;
}

/** A listening dashboard. */
export interface DashboardServer extends AsyncDisposable {
  /** Its base URL, e.g. `http://127.0.0.1:41521`. */
  readonly url: string;
  /** The app it serves. */
  readonly app: DashboardApp;
  /** Stops accepting connections and closes open streams. */
  close(): Promise<void>;
}

function isWildcard(hostname: string): boolean {
  return hostname === "0.0.0.0" || hostname === "::" || hostname === "[::]";
}

/** Whether the server listens on this machine's loopback only. */
function isLoopback(hostname: string): boolean {
  return hostname === "127.0.0.1" || hostname === "::1" || hostname === "[::1]" ||
    hostname === "localhost";
}

/** The origins a page served by this server has. */
function ownOrigins(hostname: string, port: number): string[] {
  const host = hostname.includes(":") && !hostname.startsWith("[") ? `[${hostname}]` : hostname;
  const origins = [`http://${host}:${port}`];
  if (isLoopback(hostname)) {
    origins.push(`http://localhost:${port}`, `http://127.0.0.1:${port}`, `http://[::1]:${port}`);
  }
  return [...new Set(origins)];
}

/** Serves the dashboard over `services` until closed. Resolves once it listens. */
export async function serveDashboard(
  services: Services,
  options: ServeDashboardOptions,
): Promise<DashboardServer> {
  const hostname = options.hostname ?? DASHBOARD_HOST;
  const closing = new AbortController();
  // The app needs the port the server got, so it is made once the server listens.
  const serving: { app?: DashboardApp } = {};
  const server = await platform().serve(
    (request) =>
      serving.app
        ? serving.app.fetch(request)
        : Promise.resolve(new Response(null, { status: 503 })),
    { hostname, port: options.port ?? DASHBOARD_PORT, signal: options.signal },
  );
  const app = serving.app = dashboardApp(services, {
    ...options,
    ownOrigins: ownOrigins(hostname, server.port),
    sameOrigin: isWildcard(hostname),
    // On a loopback address only this machine's names reach it: a rebound name is refused.
    ...(isLoopback(hostname) ? { allowedHosts: LOOPBACK_HOSTS } : {}),
    signal: closing.signal,
  });
  const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
  const close = async () => {
    closing.abort();
    await server.close();
  };
  return {
    url: `http://${shown}:${server.port}`,
    app,
    close,
    [Symbol.asyncDispose]: close,
  };
}

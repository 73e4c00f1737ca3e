/**
 * The daemon's server on a port: its app over the platform's HTTP server.
 * @module
 */
import type { Daemon } from "../daemon/mod.ts";
import { platform } from "../platform/mod.ts";
import type { AuthSettings } from "./auth_settings.ts";
import { daemonApp } from "./daemon_app.ts";

/** The daemon's default port (the dashboard's is 41521, the agent-to-agent server's 41523). */
export const DAEMON_PORT = 41522;

/** A listening daemon server. */
export interface DaemonServer extends AsyncDisposable {
  /** Its base URL, e.g. `http://127.0.0.1:41522`. */
  readonly url: string;
  /** Stops accepting connections. */
  close(): Promise<void>;
}

/** Options of {@linkcode serveDaemon}. */
export interface ServeDaemonOptions {
  /** The tokens `/health/detail` accepts (the dashboard's settings). */
  auth: AuthSettings;
  /** The address to listen on; `127.0.0.1` by default. */
  hostname?: string;
  /** The port; {@linkcode DAEMON_PORT} by default, 0 for a free one. */
  port?: number;
}

/**
 * Serves a started daemon's `/health`, `/health/detail` and webhooks until closed. Resolves once
 * it listens.
 */
export async function serveDaemon(
  daemon: Daemon,
  options: ServeDaemonOptions,
): Promise<DaemonServer> {
  const hostname = options.hostname ?? "127.0.0.1";
  const app = daemonApp(daemon, { auth: options.auth });
  const server = await platform().serve((request) => app.fetch(request), {
    hostname,
    port: options.port ?? DAEMON_PORT,
  });
  const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
  const close = () => server.close();
  return { url: `http://${shown}:${server.port}`, close, [Symbol.asyncDispose]: close };
}

import assert from "node:assert/strict";
import { type Config, ConfigSchema } from "../src/config/mod.ts";
import { type Daemon, startDaemon } from "../src/daemon/mod.ts";
import { createDispatcher, type Provider } from "../src/dispatch/mod.ts";
import { type AuthSettings, type DaemonServer, serveDaemon } from "../src/http/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { type HostProcess, startHostProcess } from "./host_process.ts";

/** A `svc daemon` process started as `deno task svc daemon` does. */
export interface DaemonProcess extends HostProcess {
  /** Its health snapshot. */
  health(): Promise<Record<string, unknown>>;
}

/**
 * Starts the host of `svc daemon --port 0` on `home` (SVC_HOME) with the launcher's kind of
 * grants, as its own process (not under the launcher, so that a signal reaches the daemon
 * itself); resolves once it listens.
 */
export async function startDaemonProcess(
  home: string,
  options: { env?: Record<string, string> } = {},
): Promise<DaemonProcess> {
  const host = await startHostProcess(home, "daemon", options);
  return {
    ...host,
    async health() {
      // The snapshot is for the operator's token: the one the daemon made in SVC_HOME.
      const token = (await Deno.readTextFile(`${home}/dashboard.token`)).trim();
      const response = await fetch(`${host.url}/health/detail`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return await response.json();
    },
  };
}

/** The operator's token of a test daemon (bound to no owner), and one bound to an owner. */
export const DAEMON_TOKENS = {
  operator: "operator-token-0123456789abcdef",
  alice: "alice-daemon-token-0123456789",
};

/** What a test daemon's `/health/detail` accepts: {@linkcode DAEMON_TOKENS}. */
export const DAEMON_AUTH: AuthSettings = {
  required: true,
  requireOwner: false,
  tokens: [{ token: DAEMON_TOKENS.operator }, { token: DAEMON_TOKENS.alice, owner: "alice" }],
  allowedOrigins: [],
};

/** A daemon in this process, over its own services, on a free port. */
export interface TestDaemon extends AsyncDisposable {
  /** Its base URL. */
  url: string;
  /** Its services. */
  services: Services;
  /** The daemon. */
  daemon: Daemon;
  /** Its server. */
  server: DaemonServer;
}

/** A configuration from the shape of a configuration file. */
export function configOf(file: unknown): Config {
  return ConfigSchema.parse(file);
}

/** Starts a daemon in this process on `home`. */
export async function startTestDaemon(
  home: string,
  options: {
    config?: Config;
    env?: Record<string, string>;
    fakeLatencyMs?: number;
    /** Providers beside the fake one (a scripted stand-in, say). */
    providers?: Provider[];
    tickMs?: number;
    leaseMs?: number;
    pollMs?: number;
    /** The tokens `/health/detail` accepts; {@linkcode DAEMON_AUTH} by default. */
    auth?: AuthSettings;
  } = {},
): Promise<TestDaemon> {
  const config = options.config ?? configOf({});
  const services = await openServices({
    home,
    config,
    role: "daemon",
    dispatcher: createDispatcher({
      config,
      fakeLatencyMs: options.fakeLatencyMs ?? 0,
      ...(options.providers ? { providers: options.providers } : {}),
    }),
  });
  const env = options.env ?? {};
  const daemon = await startDaemon(services, {
    env: (name) => env[name],
    pollMs: options.pollMs ?? 50,
    ...(options.tickMs !== undefined ? { tickMs: options.tickMs } : {}),
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
  });
  const server = await serveDaemon(daemon, {
    hostname: "127.0.0.1",
    port: 0,
    auth: options.auth ?? DAEMON_AUTH,
  });
  let closed: Promise<void> | undefined;
  return {
    url: server.url,
    services,
    daemon,
    server,
    [Symbol.asyncDispose]: () =>
      closed ??= (async () => {
        await daemon.stop();
        await server.close();
        await services.close();
      })(),
  };
}

/** Polls `check` every 50 ms until it returns a value, for at most `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  options: { timeoutMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  while (Date.now() < deadline) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out waiting for ${options.what ?? "a condition"}`);
}

import assert from "node:assert/strict";
import { type Config, ConfigSchema } from "../src/config/mod.ts";
import { type Daemon, startDaemon } from "../src/daemon/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { type DaemonServer, serveDaemon } from "../src/http/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { ROOT } from "./helpers.ts";

/** A `svc daemon` process started as `deno task svc daemon` does. */
export interface DaemonProcess extends AsyncDisposable {
  /** Its base URL. */
  url: string;
  /** Its process id. */
  pid: number;
  /** What it printed on standard error so far. */
  lines: string[];
  /** Its health snapshot. */
  health(): Promise<Record<string, unknown>>;
  /** Ends it with `signal` and waits; resolves to its exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
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
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--allow-read",
      `--allow-write=${home}`,
      "--allow-run",
      "--allow-env",
      "--allow-net=127.0.0.1",
      "--config",
      `${ROOT}/deno.json`,
      `${ROOT}/cli/main.ts`,
      "daemon",
      "--port",
      "0",
    ],
    env: {
      HOME: home,
      SVC_HOME: home,
      NO_COLOR: "1",
      PATH: Deno.env.get("PATH") ?? "",
      ...options.env,
    },
    clearEnv: true,
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let url: string | undefined;
  while (url === undefined) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += value;
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    lines.push(...parts);
    url = lines.map((l) => /daemon on (http:\/\/\S+) /.exec(l)?.[1]).find(Boolean);
  }
  if (url === undefined) {
    await child.status;
    assert.fail(`the daemon did not start:\n${lines.join("\n")}${buffer}`);
  }
  const rest = (async () => {
    while (true) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: "" }));
      if (done) return;
      buffer += value;
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      lines.push(...parts);
    }
  })();
  let ended: Promise<number> | undefined;
  const stop = (signal: Deno.Signal = "SIGTERM") =>
    ended ??= (async () => {
      try {
        child.kill(signal);
      } catch {
        // It ended already.
      }
      const status = await child.status;
      await rest;
      return status.code;
    })();
  return {
    url,
    pid: child.pid,
    lines,
    async health() {
      const response = await fetch(`${url}/health`);
      return await response.json();
    },
    stop,
    [Symbol.asyncDispose]: async () => {
      await stop();
    },
  };
}

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
    tickMs?: number;
    leaseMs?: number;
    pollMs?: number;
  } = {},
): Promise<TestDaemon> {
  const config = options.config ?? configOf({});
  const services = await openServices({
    home,
    config,
    role: "daemon",
    dispatcher: createDispatcher({ config, fakeLatencyMs: options.fakeLatencyMs ?? 0 }),
  });
  const env = options.env ?? {};
  const daemon = await startDaemon(services, {
    env: (name) => env[name],
    pollMs: options.pollMs ?? 50,
    ...(options.tickMs !== undefined ? { tickMs: options.tickMs } : {}),
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
  });
  const server = await serveDaemon(daemon, { hostname: "127.0.0.1", port: 0 });
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

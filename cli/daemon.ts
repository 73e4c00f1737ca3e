/**
 * `svc daemon` (the resident process: queue worker, scheduler, webhooks, `/health`) and
 * `svc health` (reads a daemon's health, prints it, exits non-zero when it is unhealthy). The
 * open `/health` says status, kernel policy and scheduler mode only; the snapshot is
 * `/health/detail`, for a token bound to no owner: `svc health` sends the one of
 * `--token-file`, by default `$SVC_HOME/dashboard.token`.
 * @module
 */
import type { Command } from "commander";
import { SvcError } from "../src/errors/mod.ts";
import { startDaemon } from "../src/daemon/mod.ts";
import { DAEMON_PORT, serveDaemon } from "../src/http/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { svcHome } from "../src/config/mod.ts";
import { joinPath, platform } from "../src/platform/mod.ts";
import { printJson, printLine, printOut } from "./terminal.ts";
import { EXIT } from "./exit_status.ts";
import {
  type DashboardFlags,
  generatedTokenPath,
  parsePort,
  serverAuth,
  untilStopped,
  withTokenOptions,
} from "./dashboard.ts";
import { UsageError } from "./workflow_input.ts";
import { reportReloads } from "./config_reload_lines.ts";

/** The URL `svc health` reads by default. */
export const DEFAULT_HEALTH_URL = `http://127.0.0.1:${DAEMON_PORT}/health`;

/** How long `svc health` waits for an answer, in ms. */
const HEALTH_TIMEOUT_MS = 5_000;

/** Runs the daemon until Ctrl-C or SIGTERM; resolves to the exit status. */
async function daemon(flags: DashboardFlags): Promise<number> {
  const port = parsePort(flags.port);
  const home = svcHome();
  const { settings, generated } = await serverAuth(flags, home);
  const services = await openServices({ home, role: "daemon", runs: { prestartGuest: true } });
  const running = await startDaemon(services);
  let server;
  try {
    server = await serveDaemon(running, { hostname: flags.host, port, auth: settings });
  } catch (error) {
    await running.stop();
    await services.close();
    throw new SvcError(
      "unavailable",
      `Cannot listen on ${flags.host}:${port}: ${
        error instanceof Error ? error.message : "failed"
      }`,
    );
  }
  // The banner says what /health says: the scheduler's mode once its election has settled.
  await running.scheduler.settled();
  const health = await running.health();
  // Watching before the banner: an edit made as soon as it is printed is seen.
  const stopReporting = reportReloads(services);
  printLine(`svc: daemon on ${server.url} (health: ${server.url}/health; Ctrl-C stops it)`);
  if (generated) {
    printLine(`svc: /health/detail takes the API token in ${generated.path} (svc health sends it)`);
  }
  printLine(
    `svc: working on up to ${health.worker.concurrency} queued items; scheduler ${health.scheduler.mode}; ${health.webhooks.hooks.length} webhook(s)`,
  );
  if (services.recovered.runs.length + services.recovered.tasks.length > 0) {
    printLine(
      `svc: marked interrupted: ${services.recovered.runs.length} run(s), ${services.recovered.tasks.length} task(s) of hosts that died`,
    );
  }
  const stopModes = running.scheduler.onModeChange((mode) =>
    printLine(
      `svc: scheduler ${mode} (${
        mode === "leader" ? "it fires automations now" : "another daemon leads"
      })`,
    )
  );
  await untilStopped();
  stopModes();
  stopReporting();
  printLine("svc: stopping the daemon (running work is cancelled)");
  await running.stop();
  await server.close();
  await services.close();
  return EXIT.ok;
}

function healthUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`Cannot read --url '${text.slice(0, 200)}': it is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`Cannot read --url '${text.slice(0, 200)}': it must be http or https`);
  }
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/health";
  return url;
}

/** Lines of a health snapshot for people. */
function healthLines(url: URL, health: Record<string, unknown>): string[] {
  const get = (path: string): unknown =>
    path.split(".").reduce<unknown>(
      (at, key) =>
        at !== null && typeof at === "object" ? (at as Record<string, unknown>)[key] : undefined,
      health,
    );
  const lines = [
    `${url.href}: ${String(get("status"))} (svc ${String(get("version"))}, up ${
      String(get("uptime_s"))
    } s)`,
    `  kernel     sandbox ceiling ${String(get("kernel.sandbox_ceiling"))}, full: ${
      String(get("kernel.full"))
    }`,
    `  scheduler  ${String(get("scheduler.mode"))}, ${
      String(get("scheduler.automations"))
    } automation(s), next ${String(get("scheduler.next_slot_at") ?? "-")}`,
    `  queue      ${String(get("queue.runs"))} run(s), ${
      String(get("queue.tasks"))
    } task(s) waiting`,
    `  running    ${String(get("running.runs"))} run(s), ${
      String(get("running.tasks"))
    } task(s) of at most ${String(get("worker.concurrency"))}`,
    `  ledger     ${get("ledger.ok") === true ? "ok" : "FAILING"} (${
      get("ledger.backend") === "postgres" ? "shared, postgres" : "this machine's kv files"
    })${
      get("ledger.write_ms") !== null && get("ledger.write_ms") !== undefined
        ? `, a write takes ${String(get("ledger.write_ms"))} ms`
        : ""
    }`,
    `  hosts      ${String(get("hosts.alive"))} alive, ${String(get("hosts.daemons"))} daemon(s)`,
  ];
  const hosts = get("hosts.list");
  if (Array.isArray(hosts)) {
    for (const host of hosts as Array<Record<string, unknown>>) {
      // Values from the ledger, written by other hosts: printed as plain bounded text.
      const text = (value: unknown) =>
        String(value ?? "-").replace(/[^\x20-\x7e]/g, "?").slice(0, 80);
      lines.push(
        `    ${text(host.host_id)}  ${text(host.role)}  pid ${text(host.pid)} on ${
          text(host.hostname)
        }, beat ${text(host.heartbeat_at)}`,
      );
    }
  }
  const problems = get("problems");
  if (Array.isArray(problems)) {
    for (const problem of problems) lines.push(`  ! ${String(problem)}`);
  }
  return lines;
}

/** Lines of the open `/health` answer: status, kernel and scheduler mode, as plain text. */
function openHealthLines(url: URL, body: Record<string, unknown>): string[] {
  const field = (value: unknown, key: string): string => {
    const at = value !== null && typeof value === "object"
      ? (value as Record<string, unknown>)[key]
      : undefined;
    // From whatever answers at the URL: bounded printable text.
    return String(at ?? "-").replace(/[^\x20-\x7e]/g, "?").slice(0, 40);
  };
  const lines = [
    `${url.href}: ${field(body, "status")} (the detail needs the operator's token: --token-file)`,
  ];
  if (body.kernel !== undefined) {
    lines.push(
      `  kernel     sandbox ceiling ${field(body.kernel, "sandbox_ceiling")}, full: ${
        field(body.kernel, "full")
      }`,
    );
  }
  if (body.scheduler !== undefined) lines.push(`  scheduler  ${field(body.scheduler, "mode")}`);
  return lines;
}

/** The token `svc health` sends for the detail: `--token-file`'s, else the generated one. */
async function healthToken(flags: { tokenFile?: string }): Promise<string | undefined> {
  const path = flags.tokenFile ?? generatedTokenPath(svcHome());
  const text = await platform().readTextFile(path).catch(() => undefined);
  if (text === undefined && flags.tokenFile !== undefined) {
    throw new UsageError(
      `Cannot read the token file '${path}': it does not exist or is not readable`,
    );
  }
  return text?.split("\n").map((line) => line.trim()).find((line) => line !== "");
}

/** The snapshot's URL: `/health/detail` beside the health URL. */
function detailUrl(url: URL): URL {
  const detail = new URL(url);
  detail.pathname = joinPath(url.pathname.replace(/\/+$/, ""), "detail");
  return detail;
}

/**
 * Reads a daemon's health; exit 0 when healthy, 1 when unhealthy, 5 when unreachable. With a
 * token it reads the whole snapshot; without one, or when the token is refused, the liveness.
 */
async function health(
  flags: { url: string; json?: boolean; tokenFile?: string },
): Promise<number> {
  const url = healthUrl(flags.url);
  const token = await healthToken(flags);
  if (token !== undefined) {
    const detail = await readHealth(detailUrl(url), token);
    if (detail.response.status !== 401 && detail.response.status !== 403) {
      return await printHealth(url, detail, flags);
    }
  }
  return await printHealth(url, await readHealth(url), flags);
}

/** Prints a health answer; resolves to the exit status. */
async function printHealth(
  url: URL,
  answer: { response: Response; body: Record<string, unknown> },
  flags: { json?: boolean },
): Promise<number> {
  const { response, body } = answer;
  if (flags.json) await printJson(body, 2);
  else if (body.version === undefined) await printOut(openHealthLines(url, body));
  else await printOut(healthLines(url, body));
  return response.status === 200 && body.status === "ok" ? EXIT.ok : EXIT.failed;
}

/** GETs a health URL (with `token` as the bearer when given); its answer as JSON. */
async function readHealth(
  url: URL,
  token?: string,
): Promise<{ response: Response; body: Record<string, unknown> }> {
  let response: Response;
  try {
    response = await fetch(url, {
      signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS),
      redirect: "error",
      ...(token !== undefined ? { headers: { authorization: `Bearer ${token}` } } : {}),
    });
  } catch (error) {
    const why = error instanceof Error && error.name === "TimeoutError"
      ? `no answer within ${HEALTH_TIMEOUT_MS / 1000} s`
      : "nothing answers there";
    throw new SvcError("unavailable", `Cannot read the health of ${url.href}: ${why}`);
  }
  const text = await response.text();
  let body: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error();
    body = parsed as Record<string, unknown>;
  } catch {
    throw new SvcError(
      "unavailable",
      `Cannot read the health of ${url.href}: the answer (HTTP ${response.status}) is not a health snapshot`,
    );
  }
  return { response, body };
}

/** Adds `daemon` and `health` to the program; `run` sets the exit status. */
export function addDaemonCommands(
  program: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  const daemonCommand = program
    .command("daemon")
    .description(
      "Run the daemon: claim queued runs and dispatches, fire automations, receive webhooks, serve /health",
    )
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "port to listen on (0 picks a free one)", String(DAEMON_PORT));
  withTokenOptions(daemonCommand).action((flags: DashboardFlags) => run(() => daemon(flags)));
  program
    .command("health")
    .description("Read a daemon's /health; exit 0 when healthy, 1 when not, 5 when unreachable")
    .option("--url <url>", "the daemon's health URL", DEFAULT_HEALTH_URL)
    .option("--json", "print the snapshot as JSON")
    .option(
      "--token-file <path>",
      "send the token of this file for the whole snapshot (default: $SVC_HOME/dashboard.token)",
    )
    .action((flags: { url: string; json?: boolean; tokenFile?: string }) =>
      run(() => health(flags))
    );
}

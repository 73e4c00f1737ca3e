/**
 * `svc a2a-server`: serves this host's dispatches and named workflows to other agents over the
 * A2A protocol until Ctrl-C or SIGTERM. It takes the dashboard's tokens (the `SVC_DASHBOARD_*`
 * variables, `--token`/`--owner-token` flags, token files, else the generated
 * `$SVC_HOME/dashboard.token`): a token's owner owns the tasks its calls start.
 * @module
 */
import type { Command } from "commander";
import { A2A_HOST, A2A_PORT, serveA2a } from "../src/a2a/mod.ts";
import { svcHome } from "../src/config/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { LOCAL_OWNER } from "../src/http/mod.ts";
import { openServices } from "../src/services/mod.ts";
import {
  type DashboardFlags,
  parsePort,
  serverAuth,
  untilStopped,
  withTokenOptions,
} from "./dashboard.ts";
import { EXIT } from "./exit_status.ts";
import { printLine } from "./terminal.ts";

/** Flags of `svc a2a-server`. */
interface A2aServerFlags extends DashboardFlags {
  publicUrl?: string;
}

/** Runs the A2A server until asked to stop; resolves to the exit status. */
export async function a2aServer(flags: A2aServerFlags): Promise<number> {
  const port = parsePort(flags.port);
  const home = svcHome();
  const { settings, generated } = await serverAuth(flags, home);
  const services = await openServices({
    home,
    runs: { prestartGuest: true },
    adoptQueuedRuns: true,
  });
  let server;
  try {
    server = await serveA2a(services, {
      hostname: flags.host,
      port,
      auth: settings,
      ...(flags.publicUrl !== undefined ? { publicUrl: flags.publicUrl } : {}),
    });
  } catch (error) {
    await services.close();
    if (error instanceof SvcError) throw error;
    throw new SvcError(
      "unavailable",
      `Cannot listen on ${flags.host}:${port}: ${
        error instanceof Error ? error.message : "failed"
      }`,
    );
  }
  printLine(`svc: A2A server on ${server.url} (Ctrl-C stops it)`);
  printLine(`svc: agent card: ${server.url}/.well-known/agent-card.json`);
  if (!settings.required) {
    printLine(
      `svc: authentication is off (SVC_DASHBOARD_AUTH_REQUIRED=false): every call without a valid token acts as owner '${LOCAL_OWNER}'`,
    );
  } else if (generated?.fresh) {
    printLine(`svc: no token was configured, so one was made and saved in ${generated.path}:`);
    printLine(`svc:   ${generated.token}`);
  } else if (generated) {
    printLine(`svc: the token is in ${generated.path}`);
  }
  await untilStopped();
  printLine("svc: stopping the A2A server");
  await server.close();
  await services.close();
  return EXIT.ok;
}

/** Adds `a2a-server` to the program; `run` sets the exit status. */
export function addA2aServerCommand(
  program: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  const command = program
    .command("a2a-server")
    .description(
      "Serve dispatches and named workflows to other agents over the A2A protocol (JSON-RPC, 1.0 and 0.3)",
    )
    .option("--host <host>", "address to listen on", A2A_HOST)
    .option("--port <port>", "port to listen on (0 picks a free one)", String(A2A_PORT))
    .option("--public-url <url>", "the base URL the agent card names (behind a proxy)");
  withTokenOptions(command).action((flags: A2aServerFlags) => run(() => a2aServer(flags)));
}

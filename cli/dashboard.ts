/**
 * `svc dashboard`: serves the dashboard over this host's services until Ctrl-C or SIGTERM.
 * Tokens come from the `SVC_DASHBOARD_*` variables, `--token`/`--owner-token` flags and token
 * files; when a token is required and none is configured, one is generated once and saved in
 * `$SVC_HOME/dashboard.token` (mode 0600), and every start prints a ready-to-open URL with it.
 * @module
 */
import type { Command } from "commander";
import { SvcError } from "../src/errors/mod.ts";
import {
  type AuthSettings,
  authSettingsFromEnv,
  checkToken,
  DASHBOARD_HOST,
  DASHBOARD_PORT,
  generateToken,
  LOCAL_OWNER,
  parseOwnerToken,
  parseTokenFile,
  serveDashboard,
  type TokenBinding,
  withTokens,
} from "../src/http/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { joinPath, platform } from "../src/platform/mod.ts";
import { svcHome } from "../src/config/mod.ts";
import { printLine } from "./terminal.ts";
import { EXIT } from "./exit_status.ts";
import { UsageError } from "./workflow_input.ts";
import { reportReloads } from "./config_reload_lines.ts";

/** Token flags of `svc dashboard` (and `svc a2a-server`, which takes the same tokens). */
export interface DashboardFlags {
  host: string;
  port: string;
  token?: string;
  tokenOwner?: string;
  ownerToken?: string[];
  tokenFile?: string[];
}

/** The file a generated token is kept in, so that the page keeps working across restarts. */
export function generatedTokenPath(home: string): string {
  return joinPath(home, "dashboard.token");
}

async function readTokenFile(path: string): Promise<TokenBinding[]> {
  let text: string;
  try {
    text = await platform().readTextFile(path);
  } catch {
    throw new UsageError(
      `Cannot read the token file '${path}': it does not exist or is not readable`,
    );
  }
  return parseTokenFile(text, path);
}

/** The settings of this start: variables, then files, then flags. */
export async function settingsOf(flags: DashboardFlags): Promise<AuthSettings> {
  let settings = authSettingsFromEnv((name) => platform().env(name));
  for (const file of flags.tokenFile ?? []) {
    settings = withTokens(settings, await readTokenFile(file));
  }
  const more: TokenBinding[] = [];
  if (flags.token !== undefined) {
    more.push({
      token: checkToken(flags.token, "--token"),
      ...(flags.tokenOwner
        ? { owner: parseOwnerToken(`${flags.tokenOwner}:${flags.token}`, "--token-owner").owner }
        : {}),
    });
  } else if (flags.tokenOwner !== undefined) {
    throw new UsageError(
      "Cannot use --token-owner: it names the owner of --token, which is missing",
    );
  }
  for (const pair of flags.ownerToken ?? []) more.push(parseOwnerToken(pair, "--owner-token"));
  return withTokens(settings, more);
}

/**
 * With authentication required and no token configured: the saved generated token, or a new
 * one saved now. Returns the token and whether it is new (then it is printed, once).
 */
export async function generatedToken(
  home: string,
): Promise<{ token: string; fresh: boolean; path: string }> {
  const p = platform();
  const path = generatedTokenPath(home);
  const saved = await p.readTextFile(path).then((text) => text.trim(), () => undefined);
  if (saved) return { token: checkToken(saved, path), fresh: false, path };
  await p.mkdir(home);
  const token = generateToken();
  await p.writeTextFile(path, `${token}\n`, { mode: 0o600 });
  return { token, fresh: true, path };
}

/** A `--port` value: 0 to 65535. */
export function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d{1,5}$/.test(text) || port > 65535) {
    throw new UsageError(`Cannot listen on port '${text.slice(0, 20)}': a port is 0 to 65535`);
  }
  return port;
}

/**
 * The tokens a server command accepts (variables, files, flags) and, when a token is required
 * and none is configured, the generated one of `home`.
 */
export async function serverAuth(
  flags: DashboardFlags,
  home: string,
): Promise<
  { settings: AuthSettings; generated?: { token: string; fresh: boolean; path: string } }
> {
  const settings = await settingsOf(flags);
  if (!settings.required || settings.tokens.length > 0) return { settings };
  const generated = await generatedToken(home);
  return { settings: withTokens(settings, [{ token: generated.token }]), generated };
}

/**
 * What a start prints: the address, then the ready-to-open URL on every start (a lost one is a
 * restart away), the generated token in its fragment, which a browser never sends. A token the
 * operator configured is never printed: its URL comes without it and the page asks for it.
 */
export function startLines(
  url: string,
  required: boolean,
  generated?: { token: string; fresh: boolean; path: string },
): string[] {
  const lines = [`svc: dashboard on ${url} (Ctrl-C stops it)`];
  if (!required) {
    lines.push(
      `svc: open ${url}/`,
      `svc: authentication is off (SVC_DASHBOARD_AUTH_REQUIRED=false): every request without a valid token acts as owner '${LOCAL_OWNER}'`,
    );
  } else if (generated) {
    lines.push(`svc: open ${url}/#token=${generated.token}`);
  } else {
    lines.push(`svc: open ${url}/ (the page asks for one of the configured API tokens)`);
  }
  lines.push(`svc: tool protocol (MCP, Streamable HTTP) on ${url}/mcp`);
  if (generated?.fresh) {
    lines.push(
      `svc: no API token was configured, so one was made and saved in ${generated.path}`,
      `svc: or: curl -H 'Authorization: Bearer ${generated.token}' ${url}/api/status`,
    );
  } else if (generated) {
    lines.push(`svc: the API token is in ${generated.path}`);
  }
  return lines;
}

/** Runs the dashboard until asked to stop; resolves to the exit status. */
export async function dashboard(flags: DashboardFlags): Promise<number> {
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
    server = await serveDashboard(services, {
      hostname: flags.host,
      port,
      auth: settings,
      logError: printLine,
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
  // Watching before the banner: an edit made as soon as it is printed is seen.
  const stopReporting = reportReloads(services);
  for (const line of startLines(server.url, settings.required, generated)) printLine(line);
  await untilStopped();
  stopReporting();
  printLine("svc: stopping the dashboard");
  await server.close();
  await services.close();
  return EXIT.ok;
}

/** Commander's collector of a repeatable option. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Adds the token options a server command shares with the dashboard. */
export function withTokenOptions(command: Command): Command {
  return command
    .option(
      "--token <token>",
      "accept this bearer token (prefer --token-file: flags show in process listings)",
    )
    .option("--token-owner <owner>", "the owner --token acts as (default: local)")
    .option("--owner-token <owner:token>", "accept a token bound to an owner (repeatable)", collect)
    .option(
      "--token-file <path>",
      "accept the tokens of a file: one per line, token or owner:token (repeatable)",
      collect,
    );
}

/** Resolves once the process is asked to stop (Ctrl-C, SIGTERM). */
export function untilStopped(): Promise<void> {
  return new Promise<void>((resolve) => {
    const remove = platform().onStop(() => {
      remove();
      resolve();
    });
  });
}

/** Adds `dashboard` to the program; `run` sets the exit status. */
export function addDashboardCommand(
  program: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  const command = program
    .command("dashboard")
    .description("Serve the dashboard: the authenticated /api/* routes and the board page")
    .option("--host <host>", "address to listen on", DASHBOARD_HOST)
    .option("--port <port>", "port to listen on (0 picks a free one)", String(DASHBOARD_PORT));
  withTokenOptions(command).action((flags: DashboardFlags) => run(() => dashboard(flags)));
}

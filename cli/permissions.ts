/**
 * The permission grants of the Deno host: what `deno task svc` (through `cli/launch.ts`), the
 * tests and the compiled binary give it. docs/PERMISSIONS.md describes them.
 * @module
 */
import type { Config } from "../src/config/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import {
  configFile,
  HARNESS_BASE_ENV,
  HARNESS_KEY_ENV,
  LEDGER_ENV_VARS,
  ledgerNetGrant,
  ledgerUrl,
  MICROVM_ENV_VARS,
  MICROVM_TOOLS,
  microvmBackendName,
  svcHome,
} from "../src/host_env/mod.ts";
import { LIFELINE_SHELL, platform } from "../src/platform/mod.ts";

/** Every environment variable the host reads; it is granted exactly these. */
export const HOST_ENV_VARS: readonly string[] = [
  "SVC_HOME",
  "SVC_DASHBOARD_BOARD_DIR",
  "SVC_FAKE_LATENCY_MS",
  "SVC_FAKE_JITTER_MS",
  "SVC_DENO",
  "SVC_CONFIG",
  "SVC_OWNER",
  "SVC_DASHBOARD_API_TOKEN",
  "SVC_DASHBOARD_OWNER_TOKENS",
  "SVC_DASHBOARD_API_TOKEN_OWNER",
  "SVC_DASHBOARD_AUTH_REQUIRED",
  "SVC_DASHBOARD_REQUIRE_OWNER",
  "SVC_DASHBOARD_ALLOWED_ORIGINS",
  "SVC_WORKFLOW_SANDBOX",
  ...LEDGER_ENV_VARS,
  ...MICROVM_ENV_VARS,
  // Where Lima keeps its instances, passed on to limactl (microvm backend_a).
  "LIMA_HOME",
  "HOME",
  "USERPROFILE",
  "PATH",
  // commander looks at these before colouring its help.
  "NO_COLOR",
  "FORCE_COLOR",
  "CLICOLOR_FORCE",
  // The YAML parser of agent type files looks at these (debug switches) on every parse.
  "LOG_TOKENS",
  "LOG_STREAM",
];

/**
 * The variables the host reads to build a harness's environment: the base set every tool gets
 * (PATH, HOME, locale, terminal, proxies) and the key variables of each tool, which a
 * configuration's `pass_env` replaces.
 */
export function harnessEnvGrants(pass?: readonly string[]): string[] {
  const keys = pass ?? Object.values(HARNESS_KEY_ENV).flat();
  return [...new Set([...HARNESS_BASE_ENV, ...keys])];
}

/**
 * Grants baked into the compiled binary. Flags are fixed when it is compiled, while `SVC_HOME`
 * and the guests' Deno are chosen when it runs: write and run cannot be scoped there. Env
 * covers the harnesses' base set and every tool's default key variables; a `pass_env` naming
 * others fails its calls with the grant they need.
 */
export const COMPILED_PERMISSION_FLAGS: readonly string[] = [
  "--allow-read",
  "--allow-write",
  "--allow-run",
  `--allow-env=${[...new Set([...HOST_ENV_VARS, ...harnessEnvGrants()])].join(",")}`,
];

/** What the host's grants are computed from. */
export interface HostGrants {
  /** `SVC_HOME`: data, run directories, guests' scratch space. */
  home: string;
  /** The board directory, when it lies outside `home`. */
  boardDir?: string;
  /** Executables the host spawns: the guests' Deno, prlimit, harness CLIs. */
  executables: readonly string[];
  /**
   * Environment variables beyond {@linkcode HOST_ENV_VARS}: the configured API key variables,
   * and what the configured harnesses' environments are built from.
   */
  env?: readonly string[];
  /** Hosts (`host:port`) of the configured model APIs. */
  net?: readonly string[];
  /**
   * Hosts (`host:port`) of the harnesses' endpoints (their `base_url`, else the tool's own),
   * which only `svc doctor` asks (a model list, to see whether the credentials answer).
   */
  probeNet?: readonly string[];
}

/** The endpoints the tools talk to when the configuration names no `base_url`. */
const TOOL_HOSTS: Record<string, string | undefined> = {
  claude: "api.anthropic.com",
  codex: "api.openai.com",
  gemini: "generativelanguage.googleapis.com",
};

/** `host` or `host:port` of a URL, as `--allow-net` takes it. */
function netOf(url: URL): string {
  return url.port ? `${url.hostname}:${url.port}` : url.hostname;
}

function list(flag: string, values: readonly string[]): string {
  for (const value of values) {
    if (value.includes(",")) {
      throw new SvcError(
        "invalid_argument",
        `Cannot grant ${flag} for '${value}': a path with a comma cannot be granted`,
      );
    }
  }
  return `${flag}=${[...new Set(values)].join(",")}`;
}

/**
 * The grants of this host as its configuration asks for them: `SVC_HOME` and the board
 * directory, the guests' Deno (`SVC_DENO`, else the Deno that runs the host), prlimit, the
 * configured harness binaries, the API providers' hosts and key variables.
 */
export async function configuredGrants(): Promise<HostGrants> {
  const home = svcHome();
  return grantsOf(home, await configuration(home));
}

/**
 * The configuration the grants come from. Without a file, svc runs on the embedded default,
 * which configures no provider but the fake one and no webhook: nothing to grant, so the
 * validator (zod and every schema, most of the launcher's start-up) is loaded only for a file.
 */
async function configuration(
  home: string,
): Promise<
  Pick<Config, "providers" | "webhooks"> & {
    notifications?: Pick<Config["notifications"], "endpoints">;
  }
> {
  const { path, explicit } = configFile(home);
  const absent = await platform().stat(path).then(
    () => false,
    (error) => error instanceof Error && error.name === "NotFound",
  );
  if (absent && !explicit) {
    return { providers: {}, webhooks: {} };
  }
  const { loadConfig } = await import("../src/config/mod.ts");
  return (await loadConfig(home)).config;
}

/** The grants of a host whose data directory is `home`, configured by `config`. */
export function grantsOf(
  home: string,
  config: Pick<Config, "providers" | "webhooks"> & {
    notifications?: Pick<Config["notifications"], "endpoints">;
  },
): HostGrants {
  const p = platform();
  const board = p.env("SVC_DASHBOARD_BOARD_DIR");
  const deno = p.env("SVC_DENO") || p.denoExecutable();
  const prlimit = p.which("prlimit");
  // git makes the worktrees of `isolation: "worktree"` calls; kill(1) stops a harness's whole
  // process group, which Deno.kill may not do under a scoped --allow-run.
  // bwrap (and ldd, which lists the libraries it binds) confine Linux guests, sandbox-exec
  // macOS ones (SVC_WORKFLOW_SANDBOX).
  const executables = [
    deno,
    prlimit,
    p.which("git"),
    p.which("kill"),
    // setsid(1) starts guests and harnesses in sessions of their own without a full fork.
    p.which("setsid"),
    p.which("bwrap"),
    p.which("ldd"),
    p.which("sandbox-exec"),
    ...microvmTools(),
  ];
  const env: string[] = [];
  const net: string[] = [];
  const probeNet: string[] = [];
  // A shared ledger (SVC_LEDGER_URL): its database's address.
  const database = ledgerNetGrant(ledgerUrl());
  if (database) net.push(database);
  // Webhook secrets are read from the variables the configuration names.
  for (const hook of Object.values(config.webhooks)) env.push(hook.secret_env);
  // The daemon POSTs notifications to the endpoints the operator configured, and only there.
  for (const endpoint of Object.values(config.notifications?.endpoints ?? {})) {
    net.push(netOf(new URL(endpoint.url)));
    env.push(endpoint.secret_env);
  }
  for (const settings of Object.values(config.providers)) {
    if (settings.type === "openai" || settings.type === "anthropic") {
      const url = new URL(settings.base_url ?? "https://api.anthropic.com");
      net.push(url.port ? `${url.hostname}:${url.port}` : url.hostname);
      env.push(settings.api_key_env ?? "ANTHROPIC_API_KEY");
    } else if (settings.type === "a2a") {
      const url = new URL(settings.url);
      net.push(url.port ? `${url.hostname}:${url.port}` : url.hostname);
      if (settings.token_env) env.push(settings.token_env);
    } else if (settings.type !== "fake") {
      const command = settings.command ?? settings.type;
      executables.push(command.includes("/") ? command : p.which(command));
      env.push(...harnessEnvGrants(settings.pass_env ?? HARNESS_KEY_ENV[settings.type]));
      const endpoint = settings.base_url
        ? netOf(new URL(settings.base_url))
        : TOOL_HOSTS[settings.type];
      if (endpoint) probeNet.push(endpoint);
    }
  }
  return {
    home,
    boardDir: board || undefined,
    executables: executables.filter((path): path is string => path !== undefined),
    env,
    net,
    probeNet,
  };
}

/**
 * The VM tool of the configured microvm backend (limactl, krunvm or QEMU), when it is on PATH;
 * with QEMU, the shell that looks for /dev/kvm and ties each VM to the host's life. An unknown
 * backend grants nothing: such runs fail closed before any tool would run.
 */
function microvmTools(): (string | undefined)[] {
  try {
    const backend = microvmBackendName();
    const tool = platform().which(MICROVM_TOOLS[backend]);
    return backend === "qemu" ? [tool, LIFELINE_SHELL] : [tool];
  } catch {
    return [];
  }
}

/** Commands that listen on a port, and so need net access to their address. */
const SERVER_COMMANDS = new Set(["dashboard", "daemon", "a2a-server"]);

/**
 * The address a server command will listen on (its `--host`, else 127.0.0.1), to grant net
 * access to; undefined for other commands.
 */
export function listenGrant(argv: readonly string[]): string | undefined {
  if (argv[0] === "health") return healthGrant(argv);
  if (!SERVER_COMMANDS.has(argv[0] ?? "")) return undefined;
  let host = "127.0.0.1";
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--host" && argv[i + 1] !== undefined) host = argv[++i]!;
    else if (arg.startsWith("--host=")) host = arg.slice("--host=".length);
  }
  if (host === "::" || host === "[::]") return "[::]";
  return /^[A-Za-z0-9.\-:\[\]]{1,253}$/.test(host) ? host : undefined;
}

/** `svc health` reads its `--url` (default 127.0.0.1): the host and port to grant. */
function healthGrant(argv: readonly string[]): string | undefined {
  let url = "http://127.0.0.1:41522/health";
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--url" && argv[i + 1] !== undefined) url = argv[++i]!;
    else if (arg.startsWith("--url=")) url = arg.slice("--url=".length);
  }
  try {
    const { host } = new URL(url);
    return /^[A-Za-z0-9.\-:\[\]]{1,260}$/.test(host) ? host : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `deno run` flags of the host: read anywhere (scripts and working directories are wherever
 * the user points), write only under `SVC_HOME` and the board directory, run only the given
 * executables, env only {@linkcode HOST_ENV_VARS}; no net, sys or ffi, and never a prompt.
 */
export function hostPermissionFlags(grants: HostGrants): string[] {
  const writable = [grants.home, ...(grants.boardDir ? [grants.boardDir] : [])];
  const flags = ["--no-prompt", "--allow-read", list("--allow-write", writable)];
  if (grants.executables.length > 0) flags.push(list("--allow-run", grants.executables));
  if (grants.net && grants.net.length > 0) flags.push(list("--allow-net", grants.net));
  flags.push(list("--allow-env", [...HOST_ENV_VARS, ...(grants.env ?? [])]));
  return flags;
}

import { SvcError } from "../errors/mod.ts";
import { type EnvReader, hostEnv } from "../host_env/mod.ts";
import { type ChildProcess, dirName, joinPath, platform } from "../platform/mod.ts";
import { makeScratchDir } from "../scratch/mod.ts";
import { guestExit } from "./bubblewrap.ts";
import { confine, type ConfinedCommand } from "./confine.ts";
import { guestImportMap } from "./guest_imports.ts";
import { parseSandboxMode } from "./sandbox_mode.ts";
import type { GuestHandle, GuestSpawnRequest, IsolationBackend } from "./types.ts";

/**
 * Flags of every local guest. No permission flag is ever added: the guest can read, write,
 * connect, spawn and load nothing. The rest close the side doors a permissionless process
 * still has (see docs/SECURITY.md).
 */
export const GUEST_RUNTIME_FLAGS: readonly string[] = [
  "--no-prompt",
  "--no-config",
  "--no-remote",
  "--no-npm",
  "--cached-only",
];

/**
 * Largest file a guest may write, in bytes (`prlimit --fsize`): none. With DENO_DIR unusable a
 * guest writes no file at all, so a route to storage that slips past the bootstrap is stopped
 * by the kernel (SIGXFSZ) at its first byte.
 */
const GUEST_FILE_SIZE_LIMIT = 0;

/** Address space beyond the V8 heap that a Deno process needs (code range, ArrayBuffers of the bridge). */
const DATA_HEADROOM_MB = 768;

/**
 * Path of the guest bootstrap shipped beside the host's sources: in a checkout, in the npm
 * package (`guest/` ships as files), and in a compiled binary (embedded with `--include guest/`,
 * readable only from inside the binary).
 */
export function defaultBootstrapPath(): string {
  return decodeURIComponent(new URL("../../guest/bootstrap_bundle.js", import.meta.url).pathname);
}

/**
 * The Deno binary of guests: `SVC_DENO` when set, else the platform's (the host's own binary
 * under `deno run`, the `deno` npm package's under Node, `deno` on PATH for a compiled svc).
 */
async function guestDeno(env: EnvReader): Promise<string> {
  const p = platform();
  const explicit = env("SVC_DENO");
  const deno = explicit || p.denoExecutable();
  if (!deno) {
    throw new SvcError(
      "guest_failed",
      "Cannot start the guest: no Deno binary to run it (set SVC_DENO to one, or put deno on PATH)",
    );
  }
  try {
    await p.stat(deno);
  } catch (error) {
    if (error instanceof Error && error.name === "NotFound") {
      const source = explicit ? "SVC_DENO names" : "the Deno binary";
      throw new SvcError(
        "guest_failed",
        `Cannot start the guest: ${source} '${deno}', which does not exist`,
      );
    }
    throw error;
  }
  return deno;
}

/**
 * The bootstrap a guest process can open. Files embedded in a compiled binary exist only for
 * the binary itself, so they are copied into the guest's scratch directory first.
 */
async function runnableBootstrap(bootstrap: string, scratch: string): Promise<string> {
  const p = platform();
  if (!p.embedded) return bootstrap;
  const source = dirName(bootstrap);
  const target = joinPath(scratch, "guest");
  await p.mkdir(target);
  for (const name of await p.readDir(source)) {
    if (!name.endsWith(".js")) continue;
    await p.writeTextFile(joinPath(target, name), await p.readTextFile(joinPath(source, name)));
  }
  return joinPath(target, bootstrap.slice(source.length + 1));
}

/** Turns the runtime refusing an operation for lack of a grant into an error naming the grant. */
function explainGrant(error: unknown): unknown {
  const grant = platform().missingGrant(error);
  return grant === undefined
    ? error
    : new SvcError("guest_failed", `Cannot start the guest: svc needs ${grant}`, { cause: error });
}

/** Options of {@linkcode createUnsafeLocalBackend}. */
export interface UnsafeLocalOptions {
  /**
   * Cap the data segment and CPU time with `prlimit` when it is installed (default true), so
   * ArrayBuffers cannot eat the host's memory and an orphaned guest cannot spin forever.
   */
  limitData?: boolean;
  /** The guest bootstrap module; defaults to `guest/bootstrap_bundle.js` (all of `guest/bootstrap.js` in one module) of this checkout or package. */
  bootstrapPath?: string;
  /**
   * Where `SVC_DENO` and `SVC_WORKFLOW_SANDBOX` are read: the composition root's snapshot. They
   * are checked per guest, so that a wrong value fails that run clearly rather than the host's start.
   * @default {hostEnv}
   */
  env?: EnvReader;
}

/**
 * The `unsafe-local` tier: the guest is a local `deno run` of the trusted bootstrap, with
 * no permissions, a cleared environment, a fresh empty DENO_DIR, a heap cap and its own
 * process group; inside the OS sandbox (bubblewrap on Linux, sandbox-exec on macOS) unless
 * `SVC_WORKFLOW_SANDBOX=off` or, under `auto`, none is available here.
 */
export function createUnsafeLocalBackend(options: UnsafeLocalOptions = {}): IsolationBackend {
  const prlimit = (options.limitData ?? true) ? platform().which("prlimit") : undefined;
  const bootstrap = options.bootstrapPath ?? defaultBootstrapPath();
  const env = options.env ?? hostEnv;
  return {
    name: "unsafe-local",
    async spawn(request: GuestSpawnRequest): Promise<GuestHandle> {
      try {
        return await spawnGuest(request, { bootstrap, prlimit, env });
      } catch (error) {
        throw explainGrant(error);
      }
    },
  };
}

/** Starts one guest process; see {@linkcode createUnsafeLocalBackend}. */
async function spawnGuest(
  request: GuestSpawnRequest,
  host: { bootstrap: string; prlimit: string | undefined; env: EnvReader },
): Promise<GuestHandle> {
  const { bootstrap, prlimit } = host;
  const p = platform();
  // Checked per guest, so that a wrong value fails this run clearly rather than the host's start.
  const mode = parseSandboxMode(host.env("SVC_WORKFLOW_SANDBOX"));
  const deno = await guestDeno(host.env);
  // At its real path: bubblewrap binds only real paths, and the guest's files are named in it.
  const made = await makeScratchDir(request.scratchRoot, { prefix: "guest-" });
  const scratch = await p.realPath(made).catch(() => made);
  // DENO_DIR names an empty file: whatever Deno would keep there (the Cache API, localStorage,
  // code caches) fails with "not a directory", even for root. The guest needs none of it.
  const denoDir = joinPath(scratch, "deno_dir");
  const importMap = joinPath(scratch, "import_map.json");
  let main: string;
  try {
    [main] = await Promise.all([
      runnableBootstrap(bootstrap, scratch),
      p.writeTextFile(denoDir, ""),
      p.writeTextFile(importMap, guestImportMap()),
    ]);
    main = await p.realPath(main);
  } catch (error) {
    await p.remove(scratch).catch(() => {});
    throw error;
  }
  const args = [
    "run",
    ...GUEST_RUNTIME_FLAGS,
    `--seed=${request.seed}`,
    `--v8-flags=--max-old-space-size=${request.heapMb}`,
    `--import-map=${importMap}`,
    main,
  ];
  const env = {
    DENO_DIR: denoDir,
    DENO_NO_PACKAGE_JSON: "1",
    DENO_NO_UPDATE_CHECK: "1",
    NO_COLOR: "1",
  };
  let plan: ConfinedCommand;
  try {
    plan = await confine({
      deno,
      args,
      env,
      readable: [scratch, dirName(main)],
      // Guests' scratch space lies in svc's data directory (`$SVC_HOME/tmp`).
      dataDir: dirName(request.scratchRoot),
    }, mode);
  } catch (error) {
    await p.remove(scratch).catch(() => {});
    throw error;
  }
  const dataBytes = (request.heapMb + DATA_HEADROOM_MB) * 1024 * 1024;
  const limits = [`--data=${dataBytes}`, `--fsize=${GUEST_FILE_SIZE_LIMIT}`];
  if (request.cpuSeconds !== undefined) {
    // SIGXCPU at the soft limit names the cause; SIGKILL a second later makes sure.
    const soft = Math.ceil(request.cpuSeconds);
    limits.push(`--cpu=${soft}:${soft + 1}`);
  }
  const [command, argv] = prlimit
    ? [prlimit, [...limits, "--", plan.command, ...plan.args]]
    : [plan.command, plan.args];
  let child: ChildProcess;
  try {
    child = p.spawn(command, {
      args: argv,
      clearEnv: true,
      env,
      // The same working directory for every guest: Deno.cwd() needs no permission, and a
      // value that differs between two runs of a script would break their replay.
      cwd: "/",
      newProcessGroup: true,
      // The guest may run no process, and bwrap's init stays in bwrap's group: the group's kill
      // ends the whole guest, with no pass over every process of the machine.
      groupHoldsTree: true,
    });
  } catch (error) {
    await p.remove(scratch).catch(() => {});
    throw error;
  }
  if (plan.sandbox.kind === "bubblewrap") child = withGuestExit(child);
  let disposed: Promise<void> | undefined;
  return {
    process: child,
    sandbox: plan.sandbox,
    dispose() {
      disposed ??= (async () => {
        child.kill("SIGKILL");
        await child.status;
        await p.remove(scratch).catch(() => {});
      })();
      return disposed;
    },
  };
}

/** The bwrap process as the guest itself: its status is the guest's end, not bwrap's code for it. */
function withGuestExit(child: ChildProcess): ChildProcess {
  return {
    pid: child.pid,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    status: child.status.then(guestExit),
    kill: (signal) => child.kill(signal),
  };
}

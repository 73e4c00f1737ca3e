import { joinPath, platform } from "../platform/mod.ts";
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

/** Address space beyond the V8 heap that a Deno process needs (code range, ArrayBuffers of the bridge). */
const DATA_HEADROOM_MB = 768;

/** Path of the guest bootstrap shipped beside the host's sources. */
export function defaultBootstrapPath(): string {
  return decodeURIComponent(new URL("../../guest/bootstrap.js", import.meta.url).pathname);
}

/** Options of {@linkcode createUnsafeLocalBackend}. */
export interface UnsafeLocalOptions {
  /**
   * Cap the data segment and CPU time with `prlimit` when it is installed (default true), so
   * ArrayBuffers cannot eat the host's memory and an orphaned guest cannot spin forever.
   */
  limitData?: boolean;
  /** The guest bootstrap module; defaults to `guest/bootstrap.js` of this checkout or package. */
  bootstrapPath?: string;
}

/**
 * The `unsafe-local` tier: the guest is a local `deno run` of the trusted bootstrap, with
 * no permissions, a cleared environment, a fresh empty DENO_DIR, a heap cap and its own
 * process group.
 */
export function createUnsafeLocalBackend(options: UnsafeLocalOptions = {}): IsolationBackend {
  const prlimit = (options.limitData ?? true) ? platform().which("prlimit") : undefined;
  const bootstrap = options.bootstrapPath ?? defaultBootstrapPath();
  return {
    name: "unsafe-local",
    async spawn(request: GuestSpawnRequest): Promise<GuestHandle> {
      const p = platform();
      await p.mkdir(request.scratchRoot);
      const scratch = await p.makeTempDir({ dir: request.scratchRoot, prefix: "guest-" });
      const denoDir = joinPath(scratch, "deno_dir");
      await p.mkdir(denoDir);
      const deno = p.denoExecutable();
      const args = [
        "run",
        ...GUEST_RUNTIME_FLAGS,
        `--seed=${request.seed}`,
        `--v8-flags=--max-old-space-size=${request.heapMb}`,
        bootstrap,
      ];
      const dataBytes = (request.heapMb + DATA_HEADROOM_MB) * 1024 * 1024;
      const limits = [`--data=${dataBytes}`];
      if (request.cpuSeconds !== undefined) {
        // SIGXCPU at the soft limit names the cause; SIGKILL a second later makes sure.
        const soft = Math.ceil(request.cpuSeconds);
        limits.push(`--cpu=${soft}:${soft + 1}`);
      }
      const [command, argv] = prlimit ? [prlimit, [...limits, "--", deno, ...args]] : [deno, args];
      let child;
      try {
        child = p.spawn(command, {
          args: argv,
          clearEnv: true,
          env: {
            DENO_DIR: denoDir,
            DENO_NO_PACKAGE_JSON: "1",
            DENO_NO_UPDATE_CHECK: "1",
            NO_COLOR: "1",
          },
          cwd: scratch,
          newProcessGroup: true,
        });
      } catch (error) {
        await p.remove(scratch).catch(() => {});
        throw error;
      }
      let disposed: Promise<void> | undefined;
      return {
        process: child,
        dispose() {
          disposed ??= (async () => {
            child.kill("SIGKILL");
            await child.status;
            await p.remove(scratch).catch(() => {});
          })();
          return disposed;
        },
      };
    },
  };
}

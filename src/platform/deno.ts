import { wrapKv } from "./kv.ts";
import { readBounded } from "./read_bounded.ts";
import { LIFELINE_RELEASE, LIFELINE_SHELL, lifelineArgs } from "./lifeline.ts";
import {
  descendantsOf,
  type ParentTable,
  procParents,
  type ProcReader,
  psParents,
} from "./process_tree.ts";
import type {
  ChildProcess,
  ExitStatus,
  FileIdentity,
  FileInfo,
  HttpServer,
  KvStore,
  OpenFile,
  Platform,
  ServeOptions,
  SpawnOptions,
} from "./types.ts";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./types.ts";
import { sha256Bytes } from "../../guest/sha256.js";
import { groupStart } from "./group_start.ts";

/**
 * Inputs up to this size (a call's prompt and options, an owner's name) are hashed in
 * JavaScript with the guest's own SHA-256, a few hundred microseconds at most.
 */
export const SMALL_HASH_BYTES = 64 * 1024;

/**
 * Node's crypto module, loaded at the first large hash: a static `node:crypto` import would
 * start Deno's Node layer (some 20 ms) in every process, the launcher's included, which hashes
 * nothing; small inputs (a run's) are hashed in JavaScript ({@linkcode SMALL_HASH_BYTES}).
 */
function nodeCrypto(): typeof import("node:crypto") {
  // Looked up once: every `agent()` call hashes, and the lookup costs more than the hash.
  return loadedCrypto ??= process.getBuiltinModule("node:crypto");
}
let loadedCrypto: typeof import("node:crypto") | undefined;

// Nothing here may touch `Deno` while the module loads: the npm package imports it under Node.
const encoder = new TextEncoder();

/**
 * Signals processes through kill(1) (`-<pgid>` for a group). False when it is not installed or
 * not granted.
 */
function killWithCommand(targets: readonly string[], signal: "SIGKILL" | "SIGTERM"): boolean {
  const kill = which("kill");
  if (!kill) return false;
  try {
    const result = new Deno.Command(kill, {
      args: ["-s", signal.slice(3), "--", ...targets],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).outputSync();
    return result.success;
  } catch {
    return false;
  }
}

const DENO_PROC: ProcReader = {
  readDir: (path) => [...Deno.readDirSync(path)].map((entry) => entry.name),
  readFile: (path) => Deno.readTextFileSync(path),
};

/**
 * Every process's parent: from `/proc`, or, where Deno may not read it (it asks for every grant
 * to), from ps(1). Undefined when neither answers.
 */
function parentTable(): ParentTable | undefined {
  const table = procParents(DENO_PROC);
  if (table !== undefined) return table;
  const ps = which("ps");
  if (!ps) return undefined;
  try {
    const result = new Deno.Command(ps, {
      args: ["-A", "-o", "pid=,ppid="],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).outputSync();
    return result.success ? psParents(new TextDecoder().decode(result.stdout)) : undefined;
  } catch {
    return undefined;
  }
}

/** Signals the descendants of a group leader that left its group; best effort. */
function killDescendants(tree: readonly number[], signal: "SIGKILL" | "SIGTERM"): void {
  if (tree.length === 0) return;
  try {
    for (const pid of tree) {
      try {
        Deno.kill(pid, signal);
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
    }
  } catch {
    killWithCommand(tree.map(String), signal);
  }
}

function spawnDeno(command: string, options: SpawnOptions): ChildProcess {
  const group = options.newProcessGroup ?? false;
  const start = group
    ? groupStart(command, options.args, which)
    : { command, args: [...options.args], detached: false };
  const child = new Deno.Command(start.command, {
    args: start.args,
    env: options.env,
    clearEnv: options.clearEnv ?? false,
    cwd: options.cwd,
    detached: start.detached,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lifeline = options.lifeline ? holdLifeline(child.pid) : undefined;
  let exited = false;
  const status: Promise<ExitStatus> = child.status.then(async (s) => {
    exited = true;
    await lifeline?.release();
    return { code: s.code, signal: s.signal ?? null };
  });
  return {
    pid: child.pid,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    status,
    kill(signal = "SIGKILL") {
      if (group) {
        // Read before the group dies: descendants in groups of their own are found by their
        // parents, and a killed parent's children are handed to init.
        const table = exited || options.groupHoldsTree ? undefined : parentTable();
        const tree = table ? descendantsOf(child.pid, table) : [];
        killDescendants(tree, signal);
        // The group may outlive its leader (a tool's children): it is signalled even after the
        // leader exited. A negative pid addresses the whole group.
        try {
          Deno.kill(-child.pid, signal);
          return;
        } catch (error) {
          // No such group: it has ended, or the child has not made it yet (setsid(1) had no turn
          // to run); then the child is the whole tree, and is signalled below.
          if (error instanceof Deno.errors.NotFound) {
            if (exited) return;
          } else if (killWithCommand([`-${child.pid}`], signal)) {
            // Deno.kill needs an unscoped --allow-run; under the launcher's narrow grants the
            // system's kill(1), granted by path, reaches the group instead.
            return;
          }
        }
      }
      if (exited) return;
      try {
        child.kill(signal);
      } catch {
        // Already gone: killing is best effort by contract.
      }
    },
  };
}

const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

async function runAttached(
  command: string,
  options: { args: readonly string[]; cwd?: string },
): Promise<ExitStatus> {
  const child = new Deno.Command(command, {
    args: [...options.args],
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    // Its own group: a Ctrl-C at the terminal reaches it once, through us, not twice.
    detached: true,
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const lifeline = holdLifeline(child.pid);
  const forwarders = FORWARDED_SIGNALS.map((signal) => {
    const forward = () => {
      try {
        child.kill(signal);
      } catch {
        // It has already ended.
      }
    };
    Deno.addSignalListener(signal, forward);
    return () => Deno.removeSignalListener(signal, forward);
  });
  try {
    const status = await child.status;
    return { code: status.code, signal: status.signal ?? null };
  } finally {
    for (const remove of forwarders) remove();
    await lifeline?.release();
  }
}

/**
 * Starts the watcher that kills `pid`'s tree if this process dies before it (see
 * `lifeline.ts`); undefined where no POSIX shell runs it, and the child then lives as before.
 */
function holdLifeline(pid: number): { release(): Promise<void> } | undefined {
  let watcher: Deno.ChildProcess;
  try {
    watcher = new Deno.Command(LIFELINE_SHELL, {
      args: lifelineArgs(pid),
      // A session of its own: a signal to this process's group must not end the watcher.
      detached: true,
      stdin: "piped",
      stdout: "null",
      stderr: "null",
    }).spawn();
  } catch {
    return undefined;
  }
  const writer = watcher.stdin.getWriter();
  return {
    async release() {
      await writer.write(encoder.encode(LIFELINE_RELEASE)).catch(() => {});
      await writer.close().catch(() => {});
      await watcher.status;
    },
  };
}

function which(command: string): string | undefined {
  const path = Deno.env.get("PATH") ?? "";
  for (const dir of path.split(":")) {
    if (!dir) continue;
    const candidate = `${dir}/${command}`;
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && ((info.mode ?? 0) & 0o111) !== 0) return candidate;
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

/**
 * Opens a KV file: the SQLite format both runtimes share. A missing file is created private
 * first (not truncating one another process just made): SQLite would create it 0644, and gives
 * its `-wal` and `-shm` files the mode of the store.
 */
async function openKv(path: string): Promise<KvStore> {
  const file = await Deno.open(path, { create: true, append: true, mode: PRIVATE_FILE_MODE });
  file.close();
  return wrapKv(await Deno.openKv(path));
}

function processAlive(pid: number): boolean | undefined {
  try {
    // SIGCONT does nothing to a running process; only its delivery is of interest.
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    // Without an unscoped --allow-run Deno may not signal other processes: cannot tell.
    if (error instanceof Deno.errors.NotCapable) return undefined;
    return true;
  }
}

const GRANT_MESSAGE = /^Requires (\w+) access to (.+), run again with the (--allow-[\w-]+) flag/;

function missingGrant(error: unknown): string | undefined {
  if (!(error instanceof Deno.errors.NotCapable)) return undefined;
  const match = GRANT_MESSAGE.exec(error.message);
  if (!match) return `a permission grant (${error.message})`;
  return `${match[3]} (${match[1]} access to ${match[2]})`;
}

const INTERNAL_ERROR = JSON.stringify({
  error: { status: 500, code: "internal", message: "Internal error" },
});

function serve(
  handler: (request: Request) => Promise<Response>,
  options: ServeOptions,
): Promise<HttpServer> {
  const server = Deno.serve({
    hostname: options.hostname,
    port: options.port,
    signal: options.signal,
    onListen() {},
    // Never a stack trace to a client (nor to our stderr): handlers answer their own errors.
    onError: () =>
      new Response(INTERNAL_ERROR, {
        status: 500,
        headers: { "content-type": "application/json" },
      }),
  }, (request) => handler(request));
  return Promise.resolve({
    hostname: server.addr.hostname,
    port: server.addr.port,
    async close() {
      await server.shutdown();
      await server.finished;
    },
  });
}

function spawnDetached(
  command: string,
  options: { args: readonly string[]; cwd?: string },
): number {
  const child = new Deno.Command(command, {
    args: [...options.args],
    cwd: options.cwd,
    detached: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  child.unref();
  return child.pid;
}

/** The identity fields of a Deno file description. */
function identityOf(info: Deno.FileInfo): FileIdentity {
  return {
    dev: info.dev,
    ino: info.ino,
    isFile: info.isFile,
    isDirectory: info.isDirectory,
    isSymlink: info.isSymlink,
    size: info.size,
  };
}

/**
 * Opens a file for reading. Deno has no `O_NOFOLLOW`: the caller's comparison of the handle's
 * identity with the checked path is what refuses a file swapped in after the check.
 */
async function openRead(path: string): Promise<OpenFile> {
  const file = await Deno.open(path, { read: true });
  return {
    identity: async () => identityOf(await file.stat()),
    async readText(maxBytes) {
      const chunks: Uint8Array[] = [];
      let size = 0;
      const buffer = new Uint8Array(64 * 1024);
      while (true) {
        const n = await file.read(buffer);
        if (n === null) break;
        size += n;
        if (size > maxBytes) throw new RangeError(`the file is larger than ${maxBytes} bytes`);
        chunks.push(buffer.slice(0, n));
      }
      const out = new Uint8Array(size);
      let offset = 0;
      for (const chunk of chunks) {
        out.set(chunk, offset);
        offset += chunk.length;
      }
      return new TextDecoder().decode(out);
    },
    close() {
      try {
        file.close();
      } catch {
        // Closed already.
      }
    },
  };
}

/** The platform implementation for the Deno runtime: `deno run` and compiled binaries. */
export const denoPlatform: Platform = {
  get runtime() {
    return `deno ${Deno.version.deno}`;
  },
  get os() {
    return Deno.build.os;
  },
  get embedded() {
    return Deno.build.standalone === true;
  },
  // A compiled svc is not a Deno that can run scripts: guests need a real one.
  denoExecutable: () => Deno.build.standalone ? which("deno") : Deno.execPath(),
  which,
  spawn: spawnDeno,
  run: runAttached,
  spawnDetached,
  selfCommand: () => Deno.build.standalone ? { command: Deno.execPath(), args: [] } : undefined,
  env: (name) => Deno.env.get(name),
  homeDir: () => Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE"),
  cwd: () => Deno.cwd(),
  readTextFile: (path) => Deno.readTextFile(path),
  // Deno applies the mode to an existing file too.
  writeTextFile: (path, text, options) =>
    Deno.writeTextFile(path, text, { mode: options?.mode ?? PRIVATE_FILE_MODE }),
  async stat(path): Promise<FileInfo> {
    const info = await Deno.stat(path);
    return {
      isFile: info.isFile,
      isDirectory: info.isDirectory,
      size: info.size,
      mtimeMs: info.mtime?.getTime() ?? null,
      mode: info.mode === null ? null : info.mode & 0o7777,
    };
  },
  realPath: (path) => Deno.realPath(path),
  fileIdentity: async (path) => identityOf(await Deno.lstat(path)),
  openRead,
  mkdir: (path) => Deno.mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE }),
  makeTempDir: ({ dir, prefix }) => Deno.makeTempDir({ dir, prefix }),
  rename: (from, to) => Deno.rename(from, to),
  openKv,
  processAlive,
  pid: () => Deno.pid,
  remove: (path) => Deno.remove(path, { recursive: true }),
  async readDir(path) {
    const names: string[] = [];
    for await (const entry of Deno.readDir(path)) names.push(entry.name);
    return names;
  },
  stderrColumns() {
    if (!Deno.stderr.isTerminal()) return undefined;
    try {
      // A pseudo-terminal nobody sized says 0.
      return Deno.consoleSize().columns || 80;
    } catch {
      return 80;
    }
  },
  writeStderr(text) {
    const bytes = encoder.encode(text);
    let written = 0;
    while (written < bytes.length) written += Deno.stderr.writeSync(bytes.subarray(written));
  },
  async writeStdout(text) {
    const bytes = encoder.encode(text);
    let written = 0;
    while (written < bytes.length) written += await Deno.stdout.write(bytes.subarray(written));
  },
  onInterrupt(handler) {
    Deno.addSignalListener("SIGINT", handler);
    return () => Deno.removeSignalListener("SIGINT", handler);
  },
  onStop(handler) {
    Deno.addSignalListener("SIGINT", handler);
    Deno.addSignalListener("SIGTERM", handler);
    return () => {
      Deno.removeSignalListener("SIGINT", handler);
      Deno.removeSignalListener("SIGTERM", handler);
    };
  },
  onReload(handler) {
    if (Deno.build.os === "windows") return () => {};
    Deno.addSignalListener("SIGHUP", handler);
    return () => Deno.removeSignalListener("SIGHUP", handler);
  },
  watchFile: watchFileDeno,
  args: () => [...Deno.args],
  readStdin: (maxBytes) => readBounded(Deno.stdin.readable, maxBytes),
  exit: (code) => Deno.exit(code),
  sha256: (data) =>
    data.length <= SMALL_HASH_BYTES
      ? sha256Bytes(data)
      : new Uint8Array(nodeCrypto().createHash("sha256").update(data).digest()),
  serve,
  missingGrant,
};

/** {@linkcode Platform.watchFile} over `Deno.watchFs` on the file's folder. */
function watchFileDeno(path: string, onChange: () => void): () => void {
  const slash = path.lastIndexOf("/");
  const dir = slash > 0 ? path.slice(0, slash) : slash === 0 ? "/" : ".";
  const name = path.slice(slash + 1);
  let watcher: Deno.FsWatcher;
  try {
    watcher = Deno.watchFs(dir, { recursive: false });
  } catch {
    return () => {};
  }
  (async () => {
    for await (const event of watcher) {
      if (event.paths.some((changed) => changed.split("/").at(-1) === name)) onChange();
    }
  })().catch(() => {});
  return () => {
    try {
      watcher.close();
    } catch {
      // Already closed.
    }
  };
}

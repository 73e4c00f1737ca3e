/**
 * The platform implementation for Node.js (the npm package). Guests still run on Deno: the
 * package depends on the `deno` npm package and spawns its binary.
 * @module
 */
import { createHash } from "node:crypto";
import { openKv as openDenoKv } from "@deno/kv";
import { getRequestListener } from "@hono/node-server";
import { spawn as spawnChild } from "node:child_process";
import {
  accessSync,
  constants as fsConstants,
  readdirSync,
  readFileSync,
  statSync,
  watch as watchFs,
} from "node:fs";
import * as fs from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import process from "node:process";
import { Readable, Writable } from "node:stream";
import { wrapKv } from "./kv.ts";
import { readBounded } from "./read_bounded.ts";
import { LIFELINE_RELEASE, LIFELINE_SHELL, lifelineArgs } from "./lifeline.ts";
import { descendantsOf, procParents, type ProcReader } from "./process_tree.ts";
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

/** Node's error codes, as the names the platform contract uses (those of Deno). */
const ERROR_NAMES: Record<string, string> = {
  ENOENT: "NotFound",
  ENOTDIR: "NotFound",
  EACCES: "PermissionDenied",
  EPERM: "PermissionDenied",
  EEXIST: "AlreadyExists",
  EISDIR: "IsADirectory",
};

/** Runs a file operation, renaming Node's errors after the platform contract. */
async function fsCall<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (error instanceof Error && typeof code === "string" && ERROR_NAMES[code]) {
      error.name = ERROR_NAMES[code];
    }
    throw error;
  }
}

const NODE_PROC: ProcReader = {
  readDir: (path) => readdirSync(path),
  readFile: (path) => readFileSync(path, "utf8"),
};

function spawnNode(command: string, options: SpawnOptions): ChildProcess {
  const group = options.newProcessGroup ?? false;
  const env = options.clearEnv
    ? { ...options.env }
    : { ...process.env, ...options.env } as Record<string, string>;
  const child = spawnChild(command, [...options.args], {
    env,
    cwd: options.cwd,
    detached: group,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let exited = false;
  const lifeline = options.lifeline && child.pid !== undefined
    ? holdLifeline(child.pid)
    : undefined;
  const status = new Promise<ExitStatus>((resolve) => {
    // A binary that cannot be started reports `error` instead of `exit`: the shell's 127.
    child.once("error", () => {
      exited = true;
      resolve({ code: 127, signal: null });
    });
    child.once("exit", (code, signal) => {
      exited = true;
      resolve({ code: code ?? 128, signal: signal ?? null });
    });
  }).then(async (status) => {
    await lifeline?.release();
    return status;
  });
  // EPIPE on a guest's stdin after it died is expected; the status tells what happened.
  child.stdin.on("error", () => {});
  return {
    pid: child.pid ?? -1,
    stdin: Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    stdout: Readable.toWeb(child.stdout) as unknown as ReadableStream<Uint8Array>,
    stderr: Readable.toWeb(child.stderr) as unknown as ReadableStream<Uint8Array>,
    status,
    kill(signal = "SIGKILL") {
      if (group && child.pid !== undefined && !exited && !options.groupHoldsTree) {
        // Descendants in groups of their own, read before the group dies (see process_tree.ts).
        for (const pid of descendantsOf(child.pid, procParents(NODE_PROC) ?? [])) {
          try {
            process.kill(pid, signal);
          } catch {
            // Gone already.
          }
        }
      }
      try {
        // A negative pid addresses the whole group; grandchildren die with the guest.
        // The group may outlive its leader (a tool's children): signal it even after the leader exited.
        if (group && child.pid !== undefined) process.kill(-child.pid, signal);
        else if (!exited) child.kill(signal);
      } catch {
        // Already gone: killing is best effort by contract.
      }
    },
  };
}

const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

function runAttached(
  command: string,
  options: { args: readonly string[]; cwd?: string },
): Promise<ExitStatus> {
  // Its own group: a Ctrl-C at the terminal reaches it once, through us, not twice.
  const child = spawnChild(command, [...options.args], {
    stdio: "inherit",
    detached: true,
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
  });
  const forward = (signal: NodeJS.Signals) => {
    try {
      child.kill(signal);
    } catch {
      // It has already ended.
    }
  };
  for (const signal of FORWARDED_SIGNALS) process.on(signal, forward);
  const lifeline = child.pid !== undefined ? holdLifeline(child.pid) : undefined;
  return new Promise<ExitStatus>((resolve) => {
    child.once("error", () => resolve({ code: 127, signal: null }));
    child.once("exit", (code, signal) => resolve({ code: code ?? 128, signal: signal ?? null }));
  }).finally(async () => {
    for (const signal of FORWARDED_SIGNALS) process.off(signal, forward);
    await lifeline?.release();
  });
}

/**
 * Starts the watcher that kills `pid`'s tree if this process dies before it (see
 * `lifeline.ts`); where no POSIX shell runs it, the child lives as before.
 */
function holdLifeline(pid: number): { release(): Promise<void> } {
  // A session of its own: a signal to this process's group must not end the watcher.
  const watcher = spawnChild(LIFELINE_SHELL, lifelineArgs(pid), {
    stdio: ["pipe", "ignore", "ignore"],
    detached: true,
  });
  const ended = new Promise<void>((resolve) => {
    watcher.once("error", () => resolve());
    watcher.once("exit", () => resolve());
  });
  watcher.stdin?.on("error", () => {});
  return {
    release() {
      watcher.stdin?.end(LIFELINE_RELEASE);
      return ended;
    },
  };
}

function which(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (!dir) continue;
    const candidate = `${dir}/${command}`;
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

/** The binary of the `deno` npm package, located the way its own `bin.cjs` does. */
function denoExecutable(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const installApi = require("deno/install_api.cjs") as { runInstall(): string };
    return installApi.runInstall();
  } catch {
    return undefined;
  }
}

function serve(
  handler: (request: Request) => Promise<Response>,
  options: ServeOptions,
): Promise<HttpServer> {
  const listener = getRequestListener((request) => handler(request), {
    // Never a stack trace to a client: handlers answer their own errors.
    errorHandler: () =>
      new Response(
        JSON.stringify({ error: { status: 500, code: "internal", message: "Internal error" } }),
        { status: 500, headers: { "content-type": "application/json" } },
      ),
  });
  const server = createServer((incoming, outgoing) => void listener(incoming, outgoing));
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return closed;
  };
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const address = server.address() as AddressInfo;
      options.signal?.addEventListener("abort", () => void close(), { once: true });
      if (options.signal?.aborted) void close();
      resolve({ hostname: address.address, port: address.port, close });
    });
  });
}

/** The platform implementation for Node.js. */

/**
 * Opens a KV file: the SQLite format both runtimes share. A missing file is created private
 * first (not truncating one another process just made): SQLite would create it 0644, and gives
 * its `-wal` and `-shm` files the mode of the store.
 */
async function openKv(path: string): Promise<KvStore> {
  await fsCall(async () => await (await fs.open(path, "a", PRIVATE_FILE_MODE)).close());
  return wrapKv(await openDenoKv(path));
}

/** Writes a file with `mode`, which Node's `writeFile` would give a new file only. */
async function writeTextFile(path: string, text: string, mode: number): Promise<void> {
  const file = await fs.open(path, "w", mode);
  try {
    // Before the text goes in: an existing file may have been readable by others.
    await file.chmod(mode);
    await file.writeFile(text, "utf8");
  } finally {
    await file.close();
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === "EPERM";
  }
}

function spawnDetached(
  command: string,
  options: { args: readonly string[]; cwd?: string },
): number {
  const child = spawnChild(command, [...options.args], {
    cwd: options.cwd,
    detached: true,
    stdio: "ignore",
  });
  child.unref();
  return child.pid ?? 0;
}

/** The identity fields of a Node file description. */
function identityOf(info: import("node:fs").Stats): FileIdentity {
  return {
    dev: info.dev,
    ino: info.ino,
    isFile: info.isFile(),
    isDirectory: info.isDirectory(),
    isSymlink: info.isSymbolicLink(),
    size: info.size,
  };
}

/** Opens a file for reading, refusing a final symbolic link (`O_NOFOLLOW`). */
async function openRead(path: string): Promise<OpenFile> {
  const flags = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0);
  const handle = await fsCall(() => fs.open(path, flags));
  return {
    identity: () => fsCall(async () => identityOf(await handle.stat())),
    readText: (maxBytes) =>
      fsCall(async () => {
        const chunks: Uint8Array[] = [];
        let size = 0;
        while (true) {
          const { bytesRead, buffer } = await handle.read({ buffer: new Uint8Array(64 * 1024) });
          if (bytesRead === 0) break;
          size += bytesRead;
          if (size > maxBytes) throw new RangeError(`the file is larger than ${maxBytes} bytes`);
          chunks.push(buffer.subarray(0, bytesRead));
        }
        const out = new Uint8Array(size);
        let offset = 0;
        for (const chunk of chunks) {
          out.set(chunk, offset);
          offset += chunk.length;
        }
        return new TextDecoder().decode(out);
      }),
    close() {
      handle.close().catch(() => {});
    },
  };
}

/** The Node implementation of {@linkcode Platform}, installed by the npm package's entry. */
export const nodePlatform: Platform = {
  runtime: `node ${process.versions.node}`,
  os: process.platform,
  embedded: false,
  denoExecutable,
  which,
  spawn: spawnNode,
  run: runAttached,
  spawnDetached,
  selfCommand: () => ({
    command: process.execPath,
    args: process.argv[1] ? [process.argv[1]] : [],
  }),
  env: (name) => process.env[name],
  homeDir: () => process.env.HOME ?? homedir(),
  cwd: () => process.cwd(),
  readTextFile: (path) => fsCall(() => fs.readFile(path, "utf8")),
  writeTextFile: (path, text, options) =>
    fsCall(() => writeTextFile(path, text, options?.mode ?? PRIVATE_FILE_MODE)),
  stat: (path) =>
    fsCall(async (): Promise<FileInfo> => {
      const info = await fs.stat(path);
      return {
        isFile: info.isFile(),
        isDirectory: info.isDirectory(),
        size: info.size,
        mtimeMs: info.mtimeMs,
        mode: process.platform === "win32" ? null : info.mode & 0o7777,
      };
    }),
  realPath: (path) => fsCall(() => fs.realpath(path)),
  fileIdentity: (path) => fsCall(async () => identityOf(await fs.lstat(path))),
  openRead,
  mkdir: (path) =>
    fsCall(async () => void await fs.mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE })),
  makeTempDir: ({ dir, prefix }) => fsCall(() => fs.mkdtemp(`${dir}/${prefix}`)),
  rename: (from, to) => fsCall(() => fs.rename(from, to)),
  openKv,
  processAlive,
  pid: () => process.pid,
  remove: (path) => fsCall(() => fs.rm(path, { recursive: true })),
  readDir: (path) => fsCall(() => fs.readdir(path)),
  stderrColumns() {
    return process.stderr.isTTY ? (process.stderr.columns || 80) : undefined;
  },
  writeStderr(text) {
    // Synchronous for files, pipes and terminals on POSIX, so narration keeps its order.
    process.stderr.write(text);
  },
  writeStdout(text) {
    return new Promise((resolve, reject) => {
      process.stdout.write(text, (error) => error ? reject(error) : resolve());
    });
  },
  onInterrupt(handler) {
    process.on("SIGINT", handler);
    return () => void process.off("SIGINT", handler);
  },
  onStop(handler) {
    process.on("SIGINT", handler);
    process.on("SIGTERM", handler);
    return () => {
      process.off("SIGINT", handler);
      process.off("SIGTERM", handler);
    };
  },
  onReload(handler) {
    if (process.platform === "win32") return () => {};
    process.on("SIGHUP", handler);
    return () => void process.off("SIGHUP", handler);
  },
  watchFile: watchFileNode,
  args: () => process.argv.slice(2),
  readStdin: (maxBytes) =>
    readBounded(Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>, maxBytes),
  exit: (code) => process.exit(code),
  sha256: (data) => new Uint8Array(createHash("sha256").update(data).digest()),
  serve,
  // Node has no permission grants (its --permission model is not used): nothing to name.
  missingGrant: () => undefined,
};

/** {@linkcode Platform.watchFile} over `fs.watch` on the file's folder. */
function watchFileNode(path: string, onChange: () => void): () => void {
  const slash = path.lastIndexOf("/");
  const dir = slash > 0 ? path.slice(0, slash) : slash === 0 ? "/" : ".";
  const name = path.slice(slash + 1);
  try {
    const watcher = watchFs(dir, { persistent: false }, (_event, file) => {
      if (file === null || String(file) === name) onChange();
    });
    watcher.on("error", () => {});
    return () => watcher.close();
  } catch {
    return () => {};
  }
}

/** How a child process ended. `signal` is set when a signal ended it. */
export interface ExitStatus {
  code: number;
  signal: string | null;
}

/** Options of {@linkcode Platform.spawn}. */
export interface SpawnOptions {
  args: readonly string[];
  /** Variables of the child; with `clearEnv` they are its whole environment. */
  env?: Record<string, string>;
  /** Start the child with an empty environment instead of inheriting the host's. */
  clearEnv?: boolean;
  cwd?: string;
  /** Put the child in a process group of its own, so that {@linkcode ChildProcess.kill} reaches its descendants. */
  newProcessGroup?: boolean;
}

/** A spawned child with piped standard streams. */
export interface ChildProcess {
  readonly pid: number;
  readonly stdin: WritableStream<Uint8Array>;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly status: Promise<ExitStatus>;
  /** Sends a signal to the child, or to its whole group when it was spawned with `newProcessGroup`. Never throws. */
  kill(signal?: "SIGKILL" | "SIGTERM"): void;
}

/** Options of {@linkcode Platform.serve}. */
export interface ServeOptions {
  /** Address to listen on, e.g. `127.0.0.1`. */
  hostname: string;
  /** Port to listen on; 0 picks a free one. */
  port: number;
  /** Aborting it closes the server, like {@linkcode HttpServer.close}. */
  signal?: AbortSignal;
}

/** A listening HTTP server. */
export interface HttpServer {
  /** The address it listens on. */
  readonly hostname: string;
  /** The port it listens on (the one picked when 0 was asked for). */
  readonly port: number;
  /** Stops accepting connections and resolves once the server has closed. */
  close(): Promise<void>;
}

/** A directory entry's kind, as {@linkcode Platform.stat} reports it. */
export interface FileInfo {
  isFile: boolean;
  isDirectory: boolean;
  size: number;
  /** Last modification, in milliseconds since the epoch; null where the file system keeps none. */
  mtimeMs: number | null;
}

/** A part of a KV key. */
export type KvKeyPart = string | number;
/** A KV key: its parts in order. */
export type KvKey = readonly KvKeyPart[];

/** One KV entry. Values are bytes: the ledger stores JSON, readable from Deno and Node alike. */
export interface KvEntry {
  key: KvKey;
  value: Uint8Array | null;
  versionstamp: string | null;
}

/** A set of writes that commit together or not at all. */
export interface KvAtomic {
  /** Makes the commit fail unless `key` still has `versionstamp` (null: does not exist). */
  check(key: KvKey, versionstamp: string | null): KvAtomic;
  set(key: KvKey, value: Uint8Array): KvAtomic;
  delete(key: KvKey): KvAtomic;
  commit(): Promise<{ ok: boolean }>;
}

/** A KV store file (Deno KV's SQLite format on both runtimes). */
export interface KvStore {
  get(key: KvKey): Promise<KvEntry>;
  /** Entries under `prefix`, in key order; with `start`, from that key on (inclusive). */
  list(
    prefix: KvKey,
    options?: { limit?: number; reverse?: boolean; start?: KvKey },
  ): AsyncIterable<KvEntry>;
  atomic(): KvAtomic;
  close(): void;
}

/**
 * Everything runtime-specific the host needs. Only `src/platform/` implements it, so that
 * the rest of the code runs unchanged wherever an implementation exists.
 *
 * File operations report a missing path with an error named `NotFound` and a refused one with
 * an error named `PermissionDenied`, whatever the runtime calls them.
 */
export interface Platform {
  /** Name and version of the runtime, for status output. */
  readonly runtime: string;
  /**
   * True when the host's own files (the guest bootstrap among them) are embedded in a compiled
   * binary rather than lying on disk: they can be read, but no other process can open them.
   */
  readonly embedded: boolean;
  /**
   * The Deno binary that runs guests when `SVC_DENO` does not name one: under `deno run` the
   * very binary the host runs on, under Node the one of the `deno` npm package, in a compiled
   * binary `deno` on PATH. Undefined when there is none.
   */
  denoExecutable(): string | undefined;
  /** Finds an executable on PATH; undefined when there is none. */
  which(command: string): string | undefined;
  spawn(command: string, options: SpawnOptions): ChildProcess;
  /**
   * Runs a command on the host's own standard streams, in a process group of its own, and
   * forwards SIGINT and SIGTERM to it (once each time they arrive). Resolves when it ends.
   */
  run(command: string, options: { args: readonly string[]; cwd?: string }): Promise<ExitStatus>;
  /**
   * Starts a process that outlives this one: its own session, no standard streams. Returns
   * its pid. Used for `svc dispatch` workers.
   */
  spawnDetached(command: string, options: { args: readonly string[]; cwd?: string }): number;
  /**
   * How to start this same program again, when the platform knows (Node: `node <bin>`; a
   * compiled binary: itself). Undefined under `deno run`, whose grants the caller supplies.
   */
  selfCommand(): { command: string; args: string[] } | undefined;
  env(name: string): string | undefined;
  homeDir(): string | undefined;
  cwd(): string;
  readTextFile(path: string): Promise<string>;
  writeTextFile(path: string, text: string): Promise<void>;
  stat(path: string): Promise<FileInfo>;
  /**
   * The absolute path of `path` with every symbolic link and `.`/`..` resolved, as the kernel
   * opens it. Fails with `NotFound` when it does not exist.
   */
  realPath(path: string): Promise<string>;
  mkdir(path: string): Promise<void>;
  makeTempDir(options: { dir: string; prefix: string }): Promise<string>;
  /** Moves a file in one step (used to publish a fully written file). */
  rename(from: string, to: string): Promise<void>;
  /** Opens (creating if needed) a KV store file. */
  openKv(path: string): Promise<KvStore>;
  /**
   * Whether a process with this id exists (it may belong to someone else); undefined when
   * the host's grants do not allow finding out.
   */
  processAlive(pid: number): boolean | undefined;
  /** Id of this process. */
  pid(): number;
  remove(path: string): Promise<void>;
  /** Names of the entries of a directory. */
  readDir(path: string): Promise<string[]>;
  /** Writes text to the host's standard error, synchronously so narration keeps its order. */
  writeStderr(text: string): void;
  writeStdout(text: string): Promise<void>;
  /** The width of the terminal on standard error, or undefined when stderr is not a terminal. */
  stderrColumns(): number | undefined;
  /** Registers a handler for SIGINT; returns a function that removes it. */
  onInterrupt(handler: () => void): () => void;
  /** Command-line arguments after the program name. */
  args(): string[];
  /**
   * Reads the host's standard input to its end, at most `maxBytes` of it; rejects with a
   * `RangeError` when there is more.
   */
  readStdin(maxBytes: number): Promise<Uint8Array>;
  exit(code: number): never;
  /** Serves HTTP with `handler` until closed. Resolves once the server listens. */
  serve(
    handler: (request: Request) => Promise<Response>,
    options: ServeOptions,
  ): Promise<HttpServer>;
  /**
   * When `error` is the runtime refusing an operation for lack of a permission grant, names
   * the grant, e.g. `--allow-run (run access to "/usr/bin/prlimit")`; otherwise undefined.
   */
  missingGrant(error: unknown): string | undefined;
}

/** How a child process ended. `signal` is set when a signal ended it. */
export interface ExitStatus {
  /** The exit code. */
  code: number;
  /** The signal's name, e.g. `SIGKILL`; null when the child exited. */
  signal: string | null;
}

/** Options of {@linkcode Platform.spawn}. */
export interface SpawnOptions {
  /** The arguments, passed as they are: never through a shell. */
  args: readonly string[];
  /** Variables of the child; with `clearEnv` they are its whole environment. */
  env?: Record<string, string>;
  /** Start the child with an empty environment instead of inheriting the host's. */
  clearEnv?: boolean;
  /** The child's working directory; the host's when absent. */
  cwd?: string;
  /** Put the child in a process group of its own, so that {@linkcode ChildProcess.kill} reaches its descendants. */
  newProcessGroup?: boolean;
  /**
   * The child's descendants never leave its process group (it may start no process, or none
   * that starts a session or group of its own: a guest, which may run nothing, in bubblewrap,
   * whose init stays in the group): with `newProcessGroup`, its kill signals the group alone,
   * without reading every process's parent to find descendants that left it. That read costs
   * one pass over every process of the machine per kill, which made ending N guests cost N².
   * @default false
   */
  groupHoldsTree?: boolean;
  /**
   * Tie the child to this process's life: a small watcher (`lifeline.ts`) kills the child's
   * group and tree when this process dies before the child ends (SIGKILL from outside included),
   * for children that would otherwise run on for long (a micro-VM). Needs `/bin/sh`.
   * @default false
   */
  lifeline?: boolean;
}

/** A spawned child with piped standard streams. */
export interface ChildProcess {
  /** The child's process id. */
  readonly pid: number;
  /** Its standard input. */
  readonly stdin: WritableStream<Uint8Array>;
  /** Its standard output. */
  readonly stdout: ReadableStream<Uint8Array>;
  /** Its standard error. */
  readonly stderr: ReadableStream<Uint8Array>;
  /** Resolves once the child has ended. */
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
  /** A regular file. */
  isFile: boolean;
  /** A directory. */
  isDirectory: boolean;
  /** Size in bytes. */
  size: number;
  /** Last modification, in milliseconds since the epoch; null where the file system keeps none. */
  mtimeMs: number | null;
  /** Permission bits (`0o755`, ...); null where the system has none (Windows). */
  mode: number | null;
}

/**
 * Which file a path or an open handle is, as the kernel knows it: device and inode. Two
 * handles with the same identity are the same file, whatever path reached them.
 */
export interface FileIdentity {
  /** The device; null where the system reports none (Windows). */
  dev: number | null;
  /** The inode; null where the system reports none (Windows). */
  ino: number | null;
  /** A regular file. */
  isFile: boolean;
  /** A directory. */
  isDirectory: boolean;
  /** A symbolic link (only a path's own identity, never an open handle's, can be one). */
  isSymlink: boolean;
  /** Size in bytes. */
  size: number;
}

/** A file opened for reading: what it is, and its text, read from the handle, never again by path. */
export interface OpenFile {
  /** The identity of the opened file (`fstat`). */
  identity(): Promise<FileIdentity>;
  /** Reads the whole file as UTF-8 from the handle; fails when it holds over `maxBytes`. */
  readText(maxBytes: number): Promise<string>;
  /** Closes the handle. Never throws. */
  close(): void;
}

/** The mode of every directory svc creates: its user's alone. */
export const PRIVATE_DIR_MODE = 0o700;
/** The mode of every file svc writes unless told otherwise: its user's alone. */
export const PRIVATE_FILE_MODE = 0o600;

/** A part of a KV key. */
export type KvKeyPart = string | number;
/** A KV key: its parts in order. */
export type KvKey = readonly KvKeyPart[];

/** One KV entry. Values are bytes: the ledger stores JSON, readable from Deno and Node alike. */
export interface KvEntry {
  /** The entry's key. */
  key: KvKey;
  /** The stored bytes; null when the key does not exist. */
  value: Uint8Array | null;
  /** Changes on every write of the key; null when it does not exist. */
  versionstamp: string | null;
}

/** A set of writes that commit together or not at all. */
export interface KvAtomic {
  /** Makes the commit fail unless `key` still has `versionstamp` (null: does not exist). */
  check(key: KvKey, versionstamp: string | null): KvAtomic;
  /** Writes `value` under `key`. */
  set(key: KvKey, value: Uint8Array): KvAtomic;
  /** Deletes `key`. */
  delete(key: KvKey): KvAtomic;
  /** Commits every write, or none: `ok` is false when a check failed. */
  commit(options?: KvCommitOptions): Promise<{ ok: boolean }>;
}

/** Options of {@linkcode KvAtomic.commit}. */
export interface KvCommitOptions {
  /**
   * The commit may be acknowledged before it reaches the disk; the store's next commit that is
   * not lazy (or the store itself, within a fraction of a second) makes it durable, in order.
   * Only for writes whose loss in a crash of the database costs nothing a resume needs (a
   * run's feed events), so that they do not cost a disk flush each. A store that flushes
   * nothing per commit (a local KV file) ignores it.
   * @default false
   */
  lazy?: boolean;
}

/** A KV store file (Deno KV's SQLite format on both runtimes). */
export interface KvStore {
  /** Reads one entry (its `value` null when absent). */
  get(key: KvKey): Promise<KvEntry>;
  /**
   * Entries under `prefix`, in key order; with `start`, from that key on (inclusive); with
   * `end`, before that key (exclusive).
   */
  list(
    prefix: KvKey,
    options?: { limit?: number; reverse?: boolean; start?: KvKey; end?: KvKey },
  ): AsyncIterable<KvEntry>;
  /** Starts a set of writes that commit together. */
  atomic(): KvAtomic;
  /** Closes the store (a database's store resolves once its connections are closed). */
  close(): void | Promise<void>;
}

/**
 * Everything runtime-specific the host needs. Only `src/platform/` implements it, so that
 * the rest of the code runs unchanged wherever an implementation exists.
 *
 * File operations report a missing path with an error named `NotFound` and a refused one with
 * an error named `PermissionDenied`, whatever the runtime calls them.
 *
 * What svc creates is private to the user it runs as: directories {@linkcode PRIVATE_DIR_MODE},
 * files {@linkcode PRIVATE_FILE_MODE}, whatever the umask (it only takes bits away). `SVC_HOME`
 * holds every owner's scripts, inputs and results: no other local user may read them.
 */
export interface Platform {
  /** Name and version of the runtime, for status output. */
  readonly runtime: string;
  /** The operating system: `linux`, `darwin`, ... (what picks the guest's OS sandbox). */
  readonly os: string;
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
  /** Starts a child process with piped standard streams; never through a shell. */
  spawn(command: string, options: SpawnOptions): ChildProcess;
  /**
   * Runs a command on the host's own standard streams, in a process group of its own, and
   * forwards SIGINT and SIGTERM to it (once each time they arrive). Resolves when it ends.
   * Its life is tied to this process's: should this one die first, even of SIGKILL, the
   * command and every process it started are killed within moments (`lifeline.ts`).
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
  /** Reads an environment variable; undefined when unset or not granted. */
  env(name: string): string | undefined;
  /** The user's home directory, when known. */
  homeDir(): string | undefined;
  /** The host's working directory. */
  cwd(): string;
  /** Reads a file as UTF-8. */
  readTextFile(path: string): Promise<string>;
  /**
   * Writes a file as UTF-8, creating or replacing it. Its mode is `options.mode`, else
   * {@linkcode PRIVATE_FILE_MODE}, applied to an existing file as well.
   */
  writeTextFile(path: string, text: string, options?: { mode?: number }): Promise<void>;
  /** Describes a path, following symbolic links. */
  stat(path: string): Promise<FileInfo>;
  /** The identity of `path` itself: a final symbolic link is described, not followed (`lstat`). */
  fileIdentity(path: string): Promise<FileIdentity>;
  /**
   * Opens a file for reading. Where the runtime can (Node), a final symbolic link is refused
   * (`O_NOFOLLOW`); callers compare the handle's identity with the path they checked either way.
   */
  openRead(path: string): Promise<OpenFile>;
  /**
   * The absolute path of `path` with every symbolic link and `.`/`..` resolved, as the kernel
   * opens it. Fails with `NotFound` when it does not exist.
   */
  realPath(path: string): Promise<string>;
  /**
   * Creates a directory and its missing parents, each {@linkcode PRIVATE_DIR_MODE}; an existing
   * one is fine and keeps its mode.
   */
  mkdir(path: string): Promise<void>;
  /** Creates a fresh, private directory `<prefix><random>` under `dir` and returns its path. */
  makeTempDir(options: { dir: string; prefix: string }): Promise<string>;
  /** Moves a file in one step (used to publish a fully written file). */
  rename(from: string, to: string): Promise<void>;
  /**
   * Opens (creating if needed) a KV store file. A new one is created {@linkcode PRIVATE_FILE_MODE},
   * and so are its journal files (SQLite gives them the store's mode).
   */
  openKv(path: string): Promise<KvStore>;
  /**
   * Whether a process with this id exists (it may belong to someone else); undefined when
   * the host's grants do not allow finding out.
   */
  processAlive(pid: number): boolean | undefined;
  /** Id of this process. */
  pid(): number;
  /** Removes a file, or a directory with everything in it. */
  remove(path: string): Promise<void>;
  /** Names of the entries of a directory. */
  readDir(path: string): Promise<string[]>;
  /** Writes text to the host's standard error, synchronously so narration keeps its order. */
  writeStderr(text: string): void;
  /** Writes text to the host's standard output. */
  writeStdout(text: string): Promise<void>;
  /** The width of the terminal on standard error, or undefined when stderr is not a terminal. */
  stderrColumns(): number | undefined;
  /** Registers a handler for SIGINT; returns a function that removes it. */
  onInterrupt(handler: () => void): () => void;
  /**
   * Calls `handler` when the process is asked to stop (SIGINT or SIGTERM), instead of dying;
   * returns a function that removes it. Servers close cleanly with it.
   */
  onStop(handler: () => void): () => void;
  /**
   * Calls `handler` on SIGHUP, the conventional "read your configuration again" signal, instead
   * of dying; returns a function that removes it. Where the signal does not exist (Windows),
   * nothing is registered.
   */
  onReload(handler: () => void): () => void;
  /**
   * Calls `onChange` whenever the file at `path` may have changed (written, replaced, created or
   * removed). Its folder is watched, not the file, since editors save by replacing the file.
   * Returns a function that stops watching; a folder that cannot be watched watches nothing.
   */
  watchFile(path: string, onChange: () => void): () => void;
  /** Command-line arguments after the program name. */
  args(): string[];
  /**
   * Reads the host's standard input to its end, at most `maxBytes` of it; rejects with a
   * `RangeError` when there is more.
   */
  readStdin(maxBytes: number): Promise<Uint8Array>;
  /** Ends the host process with `code`. */
  exit(code: number): never;
  /**
   * The SHA-256 digest of `data`, computed at once: the dashboard hashes every request's token,
   * and the asynchronous Web Crypto digest costs a round trip through a thread pool.
   */
  sha256(data: Uint8Array): Uint8Array;
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

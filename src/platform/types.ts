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

/** A directory entry's kind, as {@linkcode Platform.stat} reports it. */
export interface FileInfo {
  isFile: boolean;
  isDirectory: boolean;
  size: number;
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
  /** Entries under `prefix`, in key order. */
  list(prefix: KvKey, options?: { limit?: number; reverse?: boolean }): AsyncIterable<KvEntry>;
  atomic(): KvAtomic;
  close(): void;
}

/**
 * Everything runtime-specific the host needs. Only `src/platform/` implements it, so that
 * the rest of the code runs unchanged wherever an implementation exists.
 */
export interface Platform {
  /** Name of the runtime, for status output. */
  readonly runtime: string;
  /** The Deno binary that runs guests: under Deno the very binary the host runs on. */
  denoExecutable(): string;
  /** Finds an executable on PATH; undefined when there is none. */
  which(command: string): string | undefined;
  spawn(command: string, options: SpawnOptions): ChildProcess;
  env(name: string): string | undefined;
  homeDir(): string | undefined;
  cwd(): string;
  readTextFile(path: string): Promise<string>;
  writeTextFile(path: string, text: string): Promise<void>;
  stat(path: string): Promise<FileInfo>;
  mkdir(path: string): Promise<void>;
  makeTempDir(options: { dir: string; prefix: string }): Promise<string>;
  /** Moves a file in one step (used to publish a fully written file). */
  rename(from: string, to: string): Promise<void>;
  /** Opens (creating if needed) a KV store file. */
  openKv(path: string): Promise<KvStore>;
  /** True when a process with this id exists (it may belong to someone else). */
  processAlive(pid: number): boolean;
  /** Id of this process. */
  pid(): number;
  remove(path: string): Promise<void>;
  /** Writes text to the host's standard error, synchronously so narration keeps its order. */
  writeStderr(text: string): void;
  writeStdout(text: string): Promise<void>;
  /** Registers a handler for SIGINT; returns a function that removes it. */
  onInterrupt(handler: () => void): () => void;
  /** Command-line arguments after the program name. */
  args(): string[];
  exit(code: number): never;
}

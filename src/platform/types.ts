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

/**
 * The version probes of the tools' binaries, once per binary and version: a probe runs once for
 * a binary file as it is (its resolved path, size and modification time, so an upgrade is
 * probed again), callers that arrive while it runs share it, and a call waits for it at most
 * a short while. A tool that is slow to print its version is not made unavailable by it.
 * @module
 */
import { platform } from "../../platform/mod.ts";
import { locate } from "./locate.ts";

/** What running a binary's version flag once found. */
export type VersionOutcome =
  | { state: "answered"; version: string; line: string }
  | { state: "failed"; reason: string }
  | { state: "timed_out"; reason: string };

/** What is known of a tool's binary now. */
export type ToolProbe =
  | { state: "missing"; reason: string }
  | { state: "probing"; path: string }
  | ({ path: string } & VersionOutcome);

/** Options of {@linkcode ProbeCache}. */
export interface ProbeCacheOptions {
  /** How long a failed or timed-out probe stands before the binary is probed again. Default 60 s. */
  retryMs?: number;
  /** The clock, for tests. */
  now?: () => number;
}

/** Options of one {@linkcode ProbeCache.probe}. */
export interface ProbeOptions {
  /** Runs the version flag of the binary at `path` once; must end by its own deadline. */
  run(path: string): Promise<VersionOutcome>;
  /** Longest wait for a probe still running; forever (until it ends) when absent. */
  waitMs?: number;
}

interface Entry {
  /** Size and modification time of the file the probe ran. */
  identity: string;
  running: Promise<VersionOutcome>;
  outcome?: VersionOutcome;
  settledAt?: number;
  /** The outcome of the previous probe of the same file (a retry), shown while this one runs. */
  previous?: VersionOutcome;
}

/** Default time a failed or timed-out probe stands before it is run again. */
export const PROBE_RETRY_MS = 60_000;

/** Version probes by binary file, shared by every provider of the process. */
export class ProbeCache {
  readonly #entries = new Map<string, Entry>();
  readonly #retry: number;
  readonly #now: () => number;

  constructor(options: ProbeCacheOptions = {}) {
    this.#retry = options.retryMs ?? PROBE_RETRY_MS;
    this.#now = options.now ?? Date.now;
  }

  /**
   * What is known of `command`'s binary: missing, its probe's outcome, or `probing` when the
   * probe (started now, or already running) did not end within `waitMs`.
   */
  async probe(command: string, options: ProbeOptions): Promise<ToolProbe> {
    const found = await locate(command);
    if (!found.ok) return { state: "missing", reason: found.reason };
    let key: string;
    let identity: string;
    try {
      key = await platform().realPath(found.path);
      const info = await platform().stat(key);
      identity = `${info.size}:${info.mtimeMs}`;
    } catch {
      return { state: "missing", reason: `${command} does not exist` };
    }
    const entry = this.#current(key, identity, found.path, options);
    const outcome = entry.outcome ?? await settled(entry.running, options.waitMs);
    if (outcome) return { path: found.path, ...outcome };
    return entry.previous ? { path: found.path, ...entry.previous } : {
      state: "probing",
      path: found.path,
    };
  }

  /** The last outcome of the binary at `path` when its probe timed out, else undefined. */
  async timedOut(path: string): Promise<string | undefined> {
    const key = await platform().realPath(path).catch(() => path);
    const entry = this.#entries.get(key);
    const last = entry?.outcome ?? entry?.previous;
    return last?.state === "timed_out" ? last.reason : undefined;
  }

  /** The entry of this file as it is now, starting a probe when there is none worth keeping. */
  #current(key: string, identity: string, path: string, options: ProbeOptions): Entry {
    const old = this.#entries.get(key);
    const stale = old?.settledAt !== undefined && old.outcome?.state !== "answered" &&
      this.#now() - old.settledAt >= this.#retry;
    if (old && old.identity === identity && !stale) return old;
    const entry: Entry = {
      identity,
      running: Promise.resolve({ state: "failed", reason: "not probed" }),
      ...(old && old.identity === identity && old.outcome ? { previous: old.outcome } : {}),
    };
    entry.running = options.run(path).catch((error): VersionOutcome => ({
      state: "failed",
      reason: `probe failed: ${error instanceof Error ? error.message : "unknown error"}`,
    })).then((outcome) => {
      entry.outcome = outcome;
      entry.settledAt = this.#now();
      delete entry.previous;
      return outcome;
    });
    this.#entries.set(key, entry);
    return entry;
  }
}

/** `running`'s outcome, or undefined when it has not ended within `waitMs`. */
async function settled(
  running: Promise<VersionOutcome>,
  waitMs: number | undefined,
): Promise<VersionOutcome | undefined> {
  if (waitMs === undefined) return await running;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((
    resolve,
  ) => (timer = setTimeout(() => resolve(undefined), waitMs)));
  try {
    return await Promise.race([running, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The version probes of this process: one per binary file, whichever provider asks. */
export const TOOL_PROBES: ProbeCache = new ProbeCache();

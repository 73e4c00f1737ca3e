/**
 * The benchmark's shared parts: its sizes and groups, the scripts it runs, its statistics, and
 * the process and run timers every group uses.
 * @module
 */
import { findBubblewrap } from "../../src/isolation/mod.ts";
import { type RunManager, type RunManagerOptions, type RunStatus } from "../../src/engine/mod.ts";
import { limited, STEP_TIMEOUT_MS } from "../bench_limit.ts";

/** The caller of every in-process run. */
export const LOCAL = { owner: "local" };

/** Repetitions kept when `--runs` is not given. */
export const DEFAULT_RUNS = 15;

/** The most repetitions `--runs` accepts. */
export const MAX_RUNS = 1000;

/** Repetitions run first and discarded. */
export const WARMUP_RUNS = 2;

/** Whether bubblewrap can confine a guest on this machine (its figures are skipped if not). */
export const BWRAP_OK = (await findBubblewrap(Deno.execPath())).ok;

/** Calls of the long fan-out. */
export const FANOUT_CALLS = 200;

/** The fan-out's concurrency. */
export const CONCURRENCY = 8;

/** `timeout` of every in-process run, in seconds: the RunManager stops the run after it. */
export const RUN_TIMEOUT_S = 30;

/** Heap cap of a guest, as the RunManager sets it by default. */
export const GUEST_HEAP_MB = 512;

/**
 * Where "start with a pre-started guest" is measured: the {@linkcode RunManager} options that
 * make a host keep an idle guest started ahead of its runs, as the dashboard, the daemon, the
 * A2A server and `svc mcp` do. The first call of a run on a host that has already run one.
 */
export const PRESTARTED_GUEST_OPTIONS: Partial<RunManagerOptions> | undefined = {
  prestartGuest: true,
};

/** The pause between a long-lived host's runs, in which its next guest boots. */
export const IDLE_BETWEEN_RUNS_MS = 250;

/** Calls of the long sequential chain, of the long fan-out, and of the resumed chain. */
export const CHAIN_CALLS = 200;

/** Bare KV commits whose mean is one sample of the baseline. */
export const BARE_COMMITS = 200;

/** The figure groups `--only` selects from. */
export const GROUPS = [
  "start",
  "microvm",
  "cli",
  "chain",
  "fanout",
  "replay",
  "memory",
  "feed",
  "http",
  "scale",
  "postgres",
  "qemu",
  "fuzz",
  "soak",
] as const;

export type Group = typeof GROUPS[number];

/** A script that awaits `calls` agent() calls one after the other and returns their values. */
export function chainScript(calls: number): string {
  return [
    `const values = [];`,
    `for (let i = 0; i < ${calls}; i++) values.push(await agent("step " + i));`,
    `return values;`,
    ``,
  ].join("\n");
}

/** The same loop with no agent() call: what a fully replayed chain is measured against. */
export function noCallScript(calls: number): string {
  return [
    `const values = [];`,
    `for (let i = 0; i < ${calls}; i++) values.push("step " + i);`,
    `return values;`,
    ``,
  ].join("\n");
}

/** A `parallel()` of `calls` agent() calls; returns how many answered. */
export function fanoutScript(calls: number): string {
  return [
    `const results = await parallel(`,
    `  Array.from({ length: ${calls} }, (_, i) => () => agent("task " + i)),`,
    `);`,
    `return results.filter((r) => r !== null).length;`,
    ``,
  ].join("\n");
}

export const ONE_CALL_SCRIPT = `return await agent("hello");\n`;

export const FANOUT_SCRIPT = fanoutScript(FANOUT_CALLS);

/** Median, min and max of a measurement, plus its samples (warm-ups excluded). */
export interface Stats {
  median: number;
  min: number;
  max: number;
  samples: number[];
}

/** Samples of one repetition of every measurement (NaN: not measured in this run). */
export interface Repetition {
  inProcessFirstCallMs: number;
  /** The first call of a run on a host holding a pre-started guest; NaN when not offered. */
  preStartedFirstCallMs: number;
  bareGuestMs: number;
  /** The same guest start inside bubblewrap; NaN where bubblewrap cannot run. */
  bwrapGuestMs: number;
  microvmLimaMs: number;
  microvmKrunvmMs: number;
  cliMs: number;
  /** The CLI as `deno task svc` runs it: the launcher, then the host. */
  cliLauncherMs: number;
  /** `deno task svc ...` itself, from a shell. */
  cliTaskMs: number;
  bareDenoMs: number;
  fanoutMs: number;
  replayMs: number;
  journalWriteMs: number;
  /** One bare atomic KV commit of a journal entry, its call record and run document. */
  bareCommitMs: number;
  chain1Ms: number;
  chainMs: number;
  fanout1Ms: number;
  resumeChainMs: number;
  noCallMs: number;
  hostKb: number;
  guestKb: number;
  bareKb: number;
}

export function repoRoot(): string {
  return decodeURIComponent(new URL("../..", import.meta.url).pathname).replace(/\/$/, "");
}

export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function summarize(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) throw new Error("no samples to summarize");
  const middle = Math.floor(n / 2);
  const upper = sorted[middle] ?? 0;
  const median = n % 2 === 1 ? upper : ((sorted[middle - 1] ?? upper) + upper) / 2;
  return {
    median: round(median),
    min: round(sorted[0] ?? 0),
    max: round(sorted[n - 1] ?? 0),
    samples: samples.map((s) => round(s)),
  };
}

/** Median and 95th percentile (nearest rank) of a sample, with min and max. */
export function withP95(samples: number[]): Stats & { p95: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(0.95 * sorted.length));
  return { ...summarize(samples), p95: round(sorted[rank - 1] ?? 0) };
}

/** Runs `fn` with a fresh temporary directory under `root`, removed afterwards. */
export async function withTempDir<T>(root: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ dir: root, prefix: "home-" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Spawns a process to its end and returns its wall time in ms; throws when it fails or hangs. */
export async function timeProcess(
  what: string,
  command: string,
  options: Omit<Deno.CommandOptions, "stdin" | "stdout" | "stderr" | "signal">,
): Promise<{ ms: number; stdout: string }> {
  const signal = AbortSignal.timeout(STEP_TIMEOUT_MS);
  const cmd = new Deno.Command(command, {
    ...options,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal,
  });
  const t0 = performance.now();
  const output = await cmd.output();
  const ms = performance.now() - t0;
  if (signal.aborted) throw new Error(`${what} did not end within ${STEP_TIMEOUT_MS} ms`);
  if (!output.success) {
    const stderr = new TextDecoder().decode(output.stderr).trim();
    throw new Error(`${what} exited with status ${output.code}: ${stderr}`);
  }
  return { ms, stdout: new TextDecoder().decode(output.stdout) };
}

export function expectSucceeded(status: RunStatus, what: string): void {
  if (status.state !== "succeeded") {
    const reason = status.error ? `${status.error.code}: ${status.error.message}` : "no error";
    throw new Error(`${what} ended '${status.state}' (${reason})`);
  }
}

/** A run of `script` from `start()` to its end (the feed's last event): ms and final status. */
export async function runToEnd(
  manager: RunManager,
  request: { script: string; filename: string; resume_from?: string },
): Promise<{ ms: number; status: RunStatus }> {
  return await limited(
    `the run of ${request.filename}`,
    (async () => {
      const t0 = performance.now();
      const started = await manager.start({
        ...request,
        fake_dispatch: true,
        timeout: RUN_TIMEOUT_S,
      }, LOCAL);
      for await (const _item of manager.events(started.run_id, LOCAL)) {
        // The feed ends with the run's terminal state.
      }
      const ms = performance.now() - t0;
      return { ms, status: await manager.wait(started.run_id, LOCAL) };
    })(),
  );
}

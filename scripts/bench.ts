const LOCAL = { owner: "local" };
/**
 * Benchmark of the workflow engine (`deno task bench [--runs N]`).
 *
 * It measures two things and prints a table of medians (with min and max) on standard output,
 * then one JSON line with every number:
 *
 * 1. Latency to the first `agent()` call, for a script that makes one call:
 *    - in process: from `RunManager.start()` to the first `calls` event with `calls.total === 1`,
 *      which is the moment the guest's first `agent()` reaches the host. Compared with a bare
 *      guest-like `deno run` of an empty file (same runtime flags, cleared environment, fresh
 *      empty DENO_DIR and `prlimit` when installed, as the `unsafe-local` backend spawns it).
 *    - whole CLI: wall time of `deno task svc workflow run <script> --fake-dispatch` from a
 *      shell, of the launcher's `deno run` it starts (launcher, then host), and of the host alone
 *      (`deno run` of the module the launcher picks: `cli/workflow_main.ts`), all on one SVC_HOME
 *      kept across repetitions (as a user's is).
 *      Compared with a bare `deno run --no-prompt --no-config` of an empty file (goal <= 5x).
 * 2. Fake calls per second of a script that fans out 200 `agent()` calls with `parallel()` at
 *    concurrency 8: 200 / (time from `start()` to the run's `end` event). Measured with the
 *    dispatcher as `createDispatcher()` builds it by default (latency from
 *    `SVC_FAKE_LATENCY_MS`, else 0) and with `fakeLatencyMs: 0`.
 *
 * 3. Latency of the event feed: from an event being recorded (its `at`, stamped by the host that
 *    runs the work) to a reader following the run's feed seeing it (`Date.now()` on the same
 *    machine's clock, 1 ms resolution), over the log lines of a run (`bench_feed_writer.ts`).
 *    The reader is in another process than the writer (woken by polling the ledger, at the
 *    default period and at a short one), compared with a reader in the same process (woken by
 *    the ledger's own write). Plus the CPU an idle reader spends polling. Measured once, after
 *    the repetitions, since each measurement already has many events.
 *
 * 4. The dashboard (`bench_http.ts`): requests per second of an authenticated `GET /api/status`
 *    beside a bare `Deno.serve` hello-world, and the time from `POST /api/workflow/run` to the
 *    run's first SSE event and to its first `call` event, compared with the in-process figure;
 *    one `svc_task_status` tool call over `/mcp` (both protocol eras) against one
 *    `GET /api/workflow/{run_id}` of the same run.
 *
 * 5. Durable steps (issue 17), each against a baseline measured in the same repetition:
 *    - sequential chain: a script awaiting `agent()` N times in a loop (fake provider, latency
 *      0, in process). Marginal cost of one journaled step = (T200 - T1) / 199, T being the
 *      time from `start()` to the run's end. Baseline: one bare atomic Deno KV commit of a
 *      journal entry the size of the chain's, with its call record and run document, as the
 *      ledger's `write()` commits them, measured alone on a KV file of its own (goal <= 2x).
 *    - fan-out marginal: (T200 - T1) / 199 of a `parallel()` of N calls at concurrency 8,
 *      against the same bare commit (goal <= 0.5x).
 *    - replay: resuming the finished 200-call chain unchanged, start to end, against a run of
 *      the same loop with no `agent()` call (goal <= 1.1x), and the cost of a replayed call,
 *      (T_resume - T_nocall) / 200. The bench fails unless the resumed run returns exactly
 *      what the original returned and its journal says 200 calls were replayed.
 *    - start with a pre-started guest: the in-process first call through a RunManager whose
 *      host keeps a guest started ahead ({@linkcode PRESTARTED_GUEST_OPTIONS}); "n/a" until the
 *      engine offers the option.
 *
 * 6. The longer fuzz battery (`bench_fuzz.ts`, group `fuzz`): `test/fuzz_entries_test.ts` at
 *    `--fuzz-scale` times its CI size (default {@linkcode FUZZ_DEFAULT_SCALE}) with a random seed
 *    printed first (`--fuzz-seed` replays one): requests fuzzed, time and failed tests.
 *
 * 7. The soak (`bench_soak.ts`, group `soak`): the real `svc dashboard` process under a steady
 *    mix of runs, event-stream subscribers and autocannon reads for `--soak-s` seconds (default
 *    {@linkcode SOAK_DEFAULT_S}), its host's RSS per tenth of the duration and whether it stayed
 *    flat (last window's median within {@linkcode FLAT_RATIO}x of the second's).
 *
 * 8. The shared ledger (`bench_postgres.ts`, group `postgres`), on a real Postgres server with
 *    fsync on: the marginal cost of a journaled sequential step on a Postgres ledger against one
 *    bare Postgres commit of the same size (goal <= 2x), and queue claims per second with one
 *    daemon and with two. Measured `--runs` times after the repetitions.
 *
 * The soak and the fuzz run fail the bench (exit 1, after the table) when they find a failure.
 *
 * Every figure is printed with its baseline and the ratio of the medians; the final JSON line
 * carries them all (`figures`). `--only <name,...>` runs a subset (names: {@linkcode GROUPS}).
 *
 * Every repetition measures the figures in turn; the first two repetitions are warm-ups and
 * are discarded. Every step has a time limit, so the benchmark always ends.
 * @module
 */
import process from "node:process";
import { createDispatcher, type Dispatcher } from "../src/dispatch/mod.ts";
import { RunManager, type RunManagerOptions, type RunStatus } from "../src/engine/mod.ts";
import { type JournalEntry, openLedger, toBytes } from "../src/ledger/mod.ts";
import { createUnsafeLocalBackend, findBubblewrap } from "../src/isolation/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { FEED_CALLER, FEED_TICKS, startFeedRun, TICK_PREFIX } from "./bench_feed_writer.ts";
import { measureHttp } from "./bench_http.ts";
import { FUZZ_DEFAULT_SCALE, measureFuzz, randomSeed } from "./bench_fuzz.ts";
import { FLAT_RATIO, measureSoak, SOAK_DEFAULT_S } from "./bench_soak.ts";
import { timeMicrovmStandInGuest } from "./bench_microvm.ts";
import { measurePostgres } from "./bench_postgres.ts";
import { limited, STEP_TIMEOUT_MS } from "./bench_limit.ts";
import { hostEntry } from "../cli/host_entry.ts";

const DEFAULT_RUNS = 15;
/** Whether bubblewrap can confine a guest on this machine (its figures are skipped if not). */
const BWRAP_OK = (await findBubblewrap(Deno.execPath())).ok;
const MAX_RUNS = 1000;
const WARMUP_RUNS = 2;
const FANOUT_CALLS = 200;
const CONCURRENCY = 8;
/** `timeout` of every in-process run, in seconds: the RunManager stops the run after it. */
const RUN_TIMEOUT_S = 30;
/** Heap cap of a guest, as the RunManager sets it by default. */
const GUEST_HEAP_MB = 512;

/** The ledger's default polling period for readers in another process, in ms. */
const DEFAULT_POLL_MS = 25;
/** A shorter polling period, to show what latency it buys and what it costs an idle reader. */
const SHORT_POLL_MS = 5;
/** How long an idle reader waits while its CPU time is measured, in ms. */
const IDLE_MS = 1000;

/**
 * Where "start with a pre-started guest" is measured: the {@linkcode RunManager} options that
 * make a host keep an idle guest started ahead of its runs, as the dashboard, the daemon, the
 * A2A server and `svc mcp` do. The first call of a run on a host that has already run one.
 */
const PRESTARTED_GUEST_OPTIONS: Partial<RunManagerOptions> | undefined = { prestartGuest: true };
/** The pause between a long-lived host's runs, in which its next guest boots. */
const IDLE_BETWEEN_RUNS_MS = 250;

/** Calls of the long sequential chain, of the long fan-out, and of the resumed chain. */
const CHAIN_CALLS = 200;
/** Bare KV commits whose mean is one sample of the baseline. */
const BARE_COMMITS = 200;

/** The figure groups `--only` selects from. */
const GROUPS = [
  "start",
  "microvm",
  "cli",
  "chain",
  "fanout",
  "replay",
  "memory",
  "feed",
  "http",
  "postgres",
  "fuzz",
  "soak",
] as const;
type Group = typeof GROUPS[number];

/** A script that awaits `calls` agent() calls one after the other and returns their values. */
function chainScript(calls: number): string {
  return [
    `const values = [];`,
    `for (let i = 0; i < ${calls}; i++) values.push(await agent("step " + i));`,
    `return values;`,
    ``,
  ].join("\n");
}

/** The same loop with no agent() call: what a fully replayed chain is measured against. */
function noCallScript(calls: number): string {
  return [
    `const values = [];`,
    `for (let i = 0; i < ${calls}; i++) values.push("step " + i);`,
    `return values;`,
    ``,
  ].join("\n");
}

/** A `parallel()` of `calls` agent() calls; returns how many answered. */
function fanoutScript(calls: number): string {
  return [
    `const results = await parallel(`,
    `  Array.from({ length: ${calls} }, (_, i) => () => agent("task " + i)),`,
    `);`,
    `return results.filter((r) => r !== null).length;`,
    ``,
  ].join("\n");
}

const ONE_CALL_SCRIPT = `return await agent("hello");\n`;
const FANOUT_SCRIPT = fanoutScript(FANOUT_CALLS);

/** Median, min and max of a measurement, plus its samples (warm-ups excluded). */
interface Stats {
  median: number;
  min: number;
  max: number;
  samples: number[];
}

/** Samples of one repetition of every measurement (NaN: not measured in this run). */
interface Repetition {
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

function repoRoot(): string {
  return decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/$/, "");
}

function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

function summarize(samples: number[]): Stats {
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

/** What the command line asks for: repetitions, the figure groups, the soak and the fuzz run. */
interface BenchArgs {
  runs: number;
  only: ReadonlySet<Group>;
  /** The soak's duration, s. */
  soakS: number;
  /** The fuzz battery's scale, and its seed (random when none is given). */
  fuzzScale: number;
  fuzzSeed?: number;
}

const USAGE = `usage: deno task bench [--runs N] [--only ${GROUPS.join(",")}] ` +
  `[--soak-s S] [--fuzz-scale K] [--fuzz-seed N]`;

/** A whole number from `min` to `max` given to `flag`. */
function wholeNumber(flag: string, raw: string | undefined, min: number, max: number): number {
  const value = Number(raw);
  if (raw === undefined || !/^\d+$/.test(raw) || value < min || value > max) {
    throw new Error(`${flag} must be a whole number from ${min} to ${max}, got '${raw ?? ""}'`);
  }
  return value;
}

function parseArgs(args: string[]): BenchArgs {
  let runs = DEFAULT_RUNS;
  let only = new Set<Group>(GROUPS);
  let soakS = SOAK_DEFAULT_S;
  let fuzzScale = FUZZ_DEFAULT_SCALE;
  let fuzzSeed: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    const [flag, inline] = arg.includes("=") ? arg.split(/=(.*)/s, 2) : [arg, undefined];
    const raw = inline ?? args[++i];
    if (flag === "--runs") {
      const value = Number(raw);
      if (raw === undefined || !/^\d+$/.test(raw) || value < 1 || value > MAX_RUNS) {
        throw new Error(`--runs must be a whole number from 1 to ${MAX_RUNS}, got '${raw ?? ""}'`);
      }
      runs = value;
    } else if (flag === "--only") {
      const names = (raw ?? "").split(",").map((name) => name.trim()).filter(Boolean);
      const unknown = names.filter((name) => !(GROUPS as readonly string[]).includes(name));
      if (names.length === 0 || unknown.length > 0) {
        throw new Error(`--only takes names among ${GROUPS.join(",")}, got '${raw ?? ""}'`);
      }
      only = new Set(names as Group[]);
    } else if (flag === "--soak-s") {
      // At least 20 s: ten windows of two RSS samples or more.
      soakS = wholeNumber(flag, raw, 20, 86_400);
    } else if (flag === "--fuzz-scale") {
      fuzzScale = wholeNumber(flag, raw, 1, 1000);
    } else if (flag === "--fuzz-seed") {
      fuzzSeed = wholeNumber(flag, raw, 0, 2 ** 31 - 1);
    } else throw new Error(`unknown argument '${arg}' (${USAGE})`);
  }
  return { runs, only, soakS, fuzzScale, ...(fuzzSeed !== undefined ? { fuzzSeed } : {}) };
}

/** Spawns a process to its end and returns its wall time in ms; throws when it fails or hangs. */
async function timeProcess(
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

function expectSucceeded(status: RunStatus, what: string): void {
  if (status.state !== "succeeded") {
    const reason = status.error ? `${status.error.code}: ${status.error.message}` : "no error";
    throw new Error(`${what} ended '${status.state}' (${reason})`);
  }
}

/**
 * The host's side of `agent()`, timed: the first time the engine hands a call to the
 * dispatcher (its sandbox admission comes first, before the call takes a slot).
 */
function probedDispatcher(dispatcher: Dispatcher): {
  dispatcher: Dispatcher;
  firstCallAt(): number | undefined;
  /** Forgets the calls seen so far: the next run's first call is timed. */
  reset(): void;
} {
  let first: number | undefined;
  const seen = () => (first ??= performance.now());
  return {
    firstCallAt: () => first,
    reset: () => (first = undefined),
    dispatcher: {
      providers: () => dispatcher.providers(),
      status: () => dispatcher.status(),
      admit(options, context) {
        seen();
        return dispatcher.admit(options, context);
      },
      dispatch(input, context) {
        seen();
        return dispatcher.dispatch(input, context);
      },
    },
  };
}

/**
 * In process: ms from `start()` to the first `agent()` call reaching the host (the engine
 * handing it to the dispatcher). With `managerOptions` (a pre-started guest), one run goes
 * first so that the measured run finds its guest waiting, as a run on a long-lived host does.
 */
async function timeFirstCallInProcess(
  home: string,
  managerOptions: Partial<RunManagerOptions> = {},
): Promise<number> {
  const ledger = await openLedger(home);
  const probe = probedDispatcher(createDispatcher({ fakeLatencyMs: 0 }));
  const manager = await RunManager.create({
    dispatcher: probe.dispatcher,
    ledger,
    ...managerOptions,
  });
  try {
    if (Object.keys(managerOptions).length > 0) {
      expectSucceeded(
        // Its timeout is the measured run's, so the guest started after it has the same limits.
        (await runToEnd(manager, { script: ONE_CALL_SCRIPT, filename: "bench_warm.js" })).status,
        "the warm-up run",
      );
      await new Promise((resolve) => setTimeout(resolve, IDLE_BETWEEN_RUNS_MS));
      probe.reset();
    }
    const t0 = performance.now();
    const started = await manager.start({
      script: ONE_CALL_SCRIPT,
      filename: "bench_one_call.js",
      fake_dispatch: true,
      timeout: RUN_TIMEOUT_S,
    }, LOCAL);
    const status = await manager.wait(started.run_id, LOCAL);
    expectSucceeded(status, "the one-call run");
    if (typeof status.result !== "string") {
      throw new Error(`the one-call run returned ${JSON.stringify(status.result)}, not a string`);
    }
    const firstCallAt = probe.firstCallAt();
    if (firstCallAt === undefined) {
      throw new Error("the one-call run's call never reached the host");
    }
    return firstCallAt - t0;
  } finally {
    await manager.close();
    ledger.close();
  }
}

/** A run of `script` from `start()` to its end (the feed's last event): ms and final status. */
async function runToEnd(
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

/** What one repetition of the chain measures, and the entry the bare commit mirrors. */
interface ChainSample {
  chain1Ms: number;
  chainMs: number;
  noCallMs: number;
  resumeChainMs: number;
  /** The last journal entry of the long chain and the status written with it. */
  template: { entry: JournalEntry; status: RunStatus };
}

/**
 * Sequential chains of 1 and {@linkcode CHAIN_CALLS} calls, the same loop with no call, and a
 * resume of the long chain, on one host. Throws unless the resume returns exactly what the
 * chain returned, every call replayed.
 */
async function timeChainAndReplay(home: string): Promise<ChainSample> {
  const ledger = await openLedger(home);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
  });
  try {
    const short = await runToEnd(manager, { script: chainScript(1), filename: "chain_1.js" });
    expectSucceeded(short.status, "the 1-call chain");
    const long = await runToEnd(manager, {
      script: chainScript(CHAIN_CALLS),
      filename: "chain.js",
    });
    expectSucceeded(long.status, `the ${CHAIN_CALLS}-call chain`);
    if (!Array.isArray(long.status.result) || long.status.result.length !== CHAIN_CALLS) {
      throw new Error(`the chain returned ${JSON.stringify(long.status.result).slice(0, 200)}`);
    }
    const noCall = await runToEnd(manager, {
      script: noCallScript(CHAIN_CALLS),
      filename: "chain.js",
    });
    expectSucceeded(noCall.status, "the chain without calls");
    const resumed = await runToEnd(manager, {
      script: chainScript(CHAIN_CALLS),
      filename: "chain.js",
      resume_from: long.status.run_id,
    });
    expectSucceeded(resumed.status, "the resumed chain");
    if (JSON.stringify(resumed.status.result) !== JSON.stringify(long.status.result)) {
      throw new Error("the resumed chain returned something else than the original run");
    }
    if (resumed.status.journal.replayed !== CHAIN_CALLS) {
      throw new Error(
        `the resumed chain replayed ${resumed.status.journal.replayed} calls, not ${CHAIN_CALLS}`,
      );
    }
    const entries = await manager.journal(long.status.run_id, LOCAL);
    const entry = entries[entries.length - 1];
    if (!entry) throw new Error("the chain left no journal entry");
    return {
      chain1Ms: short.ms,
      chainMs: long.ms,
      noCallMs: noCall.ms,
      resumeChainMs: resumed.ms,
      template: { entry, status: long.status },
    };
  } finally {
    await manager.close();
    ledger.close();
  }
}

/** ms from `start()` to the end of a `parallel()` of `calls` calls at concurrency 8. */
async function timeFanout(home: string, calls: number): Promise<number> {
  const ledger = await openLedger(home);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
    concurrency: CONCURRENCY,
  });
  try {
    const run = await runToEnd(manager, { script: fanoutScript(calls), filename: "fan.js" });
    expectSucceeded(run.status, `the ${calls}-call fan-out`);
    if (run.status.result !== calls) {
      throw new Error(`the ${calls}-call fan-out returned ${JSON.stringify(run.status.result)}`);
    }
    return run.ms;
  } finally {
    await manager.close();
    ledger.close();
  }
}

/**
 * Baseline of a journaled step: mean ms of one atomic commit, on a Deno KV file of its own, of
 * what the ledger's `write()` commits for one journal op (the entry with its result inline, the
 * call record, the run document), the entry and status being a real chain step's.
 */
async function timeBareCommit(
  dir: string,
  template: { entry: JournalEntry; status: RunStatus },
): Promise<number> {
  const kv = await Deno.openKv(`${dir}/bare_commit.kv`);
  try {
    const { result, ...entry } = template.entry;
    const { result: _result, ...status } = template.status;
    const runDoc = toBytes({ v: 1, status: { ...status, narration: [], security_events: [] } });
    const runId = template.status.run_id;
    const t0 = performance.now();
    for (let seq = 1; seq <= BARE_COMMITS; seq++) {
      const at = new Date().toISOString();
      const ok = await kv.atomic()
        .set(
          ["journal", runId, seq],
          toBytes({ v: 1, entry: { ...entry, seq }, result: { value: result } }),
        )
        .set(
          ["calls", at, runId, seq],
          toBytes({
            at,
            source: "run",
            id: runId,
            seq,
            owner: status.owner,
            provider: entry.provider,
            model: entry.model,
            outcome: entry.outcome,
            duration_ms: entry.duration_ms,
            usage: entry.usage,
            cost_usd: entry.cost_usd,
          }),
        )
        .set(["runs", runId], runDoc)
        .commit();
      if (!ok.ok) throw new Error("a bare KV commit failed");
    }
    return (performance.now() - t0) / BARE_COMMITS;
  } finally {
    kv.close();
  }
}

/** In process: ms from `start()` to the end of the 200-call fan-out run. */
/** The 200-call fan-out, then a resume of it: ms of the live run and of the replay. */
async function timeFanoutAndReplay(home: string): Promise<{ liveMs: number; replayMs: number }> {
  const ledger = await openLedger(home);
  const dispatcher = createDispatcher({ fakeLatencyMs: 0 });
  const manager = await RunManager.create({ dispatcher, ledger, concurrency: CONCURRENCY });
  try {
    const timeRun = async (resumeFrom?: string): Promise<{ ms: number; status: RunStatus }> => {
      let endedAt: number | undefined = undefined;
      const t0 = performance.now();
      const started = await manager.start({
        script: FANOUT_SCRIPT,
        filename: "bench_fanout.js",
        fake_dispatch: true,
        timeout: RUN_TIMEOUT_S,
        ...(resumeFrom ? { resume_from: resumeFrom } : {}),
      }, LOCAL);
      for await (const _item of manager.events(started.run_id, LOCAL)) {
        // The feed ends with the run's terminal state.
      }
      endedAt = performance.now();
      const status = await manager.wait(started.run_id, LOCAL);
      expectSucceeded(status, resumeFrom ? "the resumed fan-out" : "the fan-out run");
      if (status.result !== FANOUT_CALLS) {
        throw new Error(
          `the fan-out returned ${JSON.stringify(status.result)}, expected ${FANOUT_CALLS}`,
        );
      }
      return { ms: (endedAt ?? performance.now()) - t0, status };
    };
    const live = await timeRun();
    const replay = await timeRun(live.status.run_id);
    if (replay.status.journal.replayed !== FANOUT_CALLS) {
      throw new Error(
        `the resume replayed ${replay.status.journal.replayed} calls, expected ${FANOUT_CALLS}`,
      );
    }
    return { liveMs: live.ms, replayMs: replay.ms };
  } finally {
    await manager.close();
    ledger.close();
  }
}

/** Mean ms of one journal write (entry plus run counters, one atomic commit), over 200 writes. */
async function timeJournalWrite(home: string): Promise<number> {
  const ledger = await openLedger(home);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
  });
  try {
    // A real run supplies a real status document to write with each entry.
    const started = await manager.start({ script: ONE_CALL_SCRIPT, fake_dispatch: true }, LOCAL);
    const status = await manager.wait(started.run_id, LOCAL);
    const [template] = await manager.journal(started.run_id, LOCAL);
    if (!template) throw new Error("the one-call run left no journal entry");
    const t0 = performance.now();
    for (let seq = 1; seq <= FANOUT_CALLS; seq++) {
      await ledger.write(status.run_id, [{
        kind: "journal",
        status,
        entry: { ...template, seq: seq + 1 },
      }]);
    }
    return (performance.now() - t0) / FANOUT_CALLS;
  } finally {
    await manager.close();
    ledger.close();
  }
}

/** `deno run` arguments of `svc workflow run <script> --fake-dispatch` from the checkout. */
function cliArgs(script: string): string[] {
  const argv = ["workflow", "run", script, "--fake-dispatch"];
  // The module the launcher starts for these arguments (the lean program for `workflow run`).
  return [
    "run",
    "--allow-read",
    "--allow-write",
    "--allow-run",
    "--allow-env",
    hostEntry(argv),
    ...argv,
  ];
}

/**
 * Peak resident memory (VmHWM, KiB) of a process and of its children (the largest), sampled from
 * /proc until it exits. Deno wants --allow-all to read /proc; a shell reads it with run permission.
 */
async function peakMemoryOf(child: Deno.ChildProcess): Promise<{ ownKb: number; childKb: number }> {
  const sampler = `pid=$1; own=0; kid=0
    while [ -d /proc/$pid ]; do
      v=$(awk '/VmHWM/{print $2}' /proc/$pid/status 2>/dev/null); [ -n "$v" ] && [ "$v" -gt "$own" ] && own=$v
      # Every descendant: a guest in bubblewrap is a grandchild or deeper (bwrap, its init, deno).
      todo=$(cat /proc/$pid/task/*/children 2>/dev/null)
      while [ -n "$todo" ]; do
        next=""
        for c in $todo; do
          v=$(awk '/VmHWM/{print $2}' /proc/$c/status 2>/dev/null); [ -n "$v" ] && [ "$v" -gt "$kid" ] && kid=$v
          next="$next $(cat /proc/$c/task/*/children 2>/dev/null)"
        done
        todo=$(echo $next)
      done
      sleep 0.002
    done
    echo "$own $kid"`;
  const sample = new Deno.Command("bash", {
    args: ["-c", sampler, "sampler", String(child.pid)],
    stdout: "piped",
  }).output();
  const status = await child.status;
  if (!status.success) throw new Error(`the measured process exited with status ${status.code}`);
  const [ownKb = 0, childKb = 0] = new TextDecoder().decode((await sample).stdout).trim().split(" ")
    .map(Number);
  return { ownKb, childKb };
}

/** Peak memory of the host and of its guest during a whole CLI run of the 200-call fan-out. */
async function peakMemory(
  home: string,
  script: string,
): Promise<{ hostKb: number; guestKb: number }> {
  const host = new Deno.Command(Deno.execPath(), {
    args: cliArgs(script),
    cwd: repoRoot(),
    env: { SVC_HOME: home, SVC_FAKE_LATENCY_MS: "0", DENO_NO_UPDATE_CHECK: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const { ownKb, childKb } = await peakMemoryOf(host);
  if (!ownKb || !childKb) throw new Error("the memory sampler saw no host or no guest");
  return { hostKb: ownKb, guestKb: childKb };
}

/** Peak memory (KiB) of a bare `deno run` of an empty file: the baseline. */
async function peakMemoryBare(emptyScript: string): Promise<number> {
  const bare = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--no-config", emptyScript],
    env: { DENO_NO_UPDATE_CHECK: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  return (await peakMemoryOf(bare)).ownKb;
}

/**
 * A bare guest: the real `unsafe-local` backend spawning an empty file instead of the bootstrap,
 * so flags, environment, DENO_DIR and caps are exactly those of a guest.
 */
async function timeBareGuest(
  scratchRoot: string,
  emptyScript: string,
  sandbox: "off" | "on",
): Promise<number> {
  const backend = createUnsafeLocalBackend({ bootstrapPath: emptyScript });
  // The backend reads SVC_WORKFLOW_SANDBOX at each spawn.
  const before = Deno.env.get("SVC_WORKFLOW_SANDBOX");
  Deno.env.set("SVC_WORKFLOW_SANDBOX", sandbox);
  const t0 = performance.now();
  let guest;
  try {
    guest = await backend.spawn({ scratchRoot, heapMb: GUEST_HEAP_MB, seed: 1 });
  } finally {
    if (before === undefined) Deno.env.delete("SVC_WORKFLOW_SANDBOX");
    else Deno.env.set("SVC_WORKFLOW_SANDBOX", before);
  }
  try {
    const timeout = AbortSignal.timeout(STEP_TIMEOUT_MS);
    const status = await Promise.race([
      guest.process.status,
      new Promise<never>((_, reject) =>
        timeout.addEventListener("abort", () => reject(new Error("the bare guest did not end")))
      ),
    ]);
    const ms = performance.now() - t0;
    if (status.code !== 0) throw new Error(`the bare guest exited with status ${status.code}`);
    return ms;
  } finally {
    await guest.dispose();
  }
}

/** A bare `deno run --no-prompt --no-config` of an empty file. */
async function timeBareDeno(emptyScript: string): Promise<number> {
  const { ms } = await timeProcess("the bare deno run", Deno.execPath(), {
    args: ["run", "--no-prompt", "--no-config", emptyScript],
    env: { DENO_NO_UPDATE_CHECK: "1" },
  });
  return ms;
}

/** Wall time of a whole `svc workflow run <one-call script> --fake-dispatch` process. */
async function timeCli(home: string, script: string): Promise<number> {
  const { ms, stdout } = await timeProcess("svc workflow run", Deno.execPath(), {
    args: cliArgs(script),
    cwd: repoRoot(),
    env: { SVC_HOME: home, SVC_FAKE_LATENCY_MS: "0", DENO_NO_UPDATE_CHECK: "1" },
  });
  expectOneCallOutput("svc workflow run", stdout);
  return ms;
}

/** The `deno run` arguments of `deno task svc` (deno.json), so that the two never differ. */
async function launcherArgs(): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(`${repoRoot()}/deno.json`)) as {
    tasks?: Record<string, string>;
  };
  const words = (config.tasks?.svc ?? "").split(/\s+/).filter(Boolean);
  if (words[0] !== "deno" || words[1] !== "run") {
    throw new Error(`deno.json's svc task is not a 'deno run': ${words.join(" ")}`);
  }
  return words.slice(1);
}

/** Checks that a whole CLI run printed a JSON string, the one call's value. */
function expectOneCallOutput(what: string, stdout: string): void {
  let result: unknown;
  try {
    result = JSON.parse(stdout);
  } catch {
    throw new Error(`${what} printed something that is not JSON: ${stdout.trim()}`);
  }
  if (typeof result !== "string") {
    throw new Error(`${what} returned ${stdout.trim()}, not a string`);
  }
}

/**
 * Wall time of `svc workflow run <one-call script> --fake-dispatch` as `deno task svc` starts
 * it: the launcher (`cli/launch.ts`, its task flags), which spawns the host. With `viaTask`,
 * `deno task svc` itself, as typed in a shell.
 */
async function timeCliLauncher(home: string, script: string, viaTask: boolean): Promise<number> {
  const args = viaTask
    ? ["task", "--quiet", "svc", "workflow", "run", script, "--fake-dispatch"]
    : [...await launcherArgs(), "workflow", "run", script, "--fake-dispatch"];
  const what = viaTask ? "deno task svc workflow run" : "the launcher's workflow run";
  const { ms, stdout } = await timeProcess(what, Deno.execPath(), {
    args,
    cwd: repoRoot(),
    env: { SVC_HOME: home, SVC_FAKE_LATENCY_MS: "0", DENO_NO_UPDATE_CHECK: "1" },
  });
  expectOneCallOutput(what, stdout);
  return ms;
}

/** What a reader of the feed run saw: the latency of each of its log lines, in ms. */
interface FeedSample {
  latenciesMs: number[];
}

/**
 * Follows the feed run through the services, as a surface does (`svc workflow watch`), and
 * measures for each log line the time from its `at` to its arrival here. The first read is a
 * replay; the reader must have attached before the first line was recorded, else that line
 * would count its wait in the replay.
 */
async function followTicks(services: Services, runId: string): Promise<FeedSample> {
  const latenciesMs: number[] = [];
  let attachedAt: number | undefined;
  let firstTickAt: number | undefined;
  const feed = services.runs.events(runId, FEED_CALLER, {
    signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
  });
  let ended = false;
  for await (const { event } of feed) {
    const seenAt = Date.now();
    attachedAt ??= seenAt;
    if (event.type === "narration" && event.entry.text.startsWith(TICK_PREFIX)) {
      const at = Date.parse(event.at);
      firstTickAt ??= at;
      latenciesMs.push(seenAt - at);
    }
    if (event.type === "state" && event.state === "succeeded") ended = true;
  }
  if (!ended) throw new Error(`the feed of run ${runId} did not end with 'succeeded'`);
  if (latenciesMs.length !== FEED_TICKS) {
    throw new Error(`the feed reader saw ${latenciesMs.length} log lines, not ${FEED_TICKS}`);
  }
  if (firstTickAt === undefined || attachedAt === undefined || attachedAt >= firstTickAt) {
    throw new Error("the feed reader attached after the first log line: lengthen the pause");
  }
  return { latenciesMs };
}

/** Baseline: writer and reader in this process, the reader woken by the ledger's own write. */
async function timeFeedSameProcess(home: string): Promise<FeedSample> {
  await using services = await openServices({ home });
  const runId = await startFeedRun(services);
  const sample = await followTicks(services, runId);
  expectSucceeded(await services.runs.wait(runId, FEED_CALLER), "the feed run");
  return sample;
}

/** Reads a child's stream to its end as text. */
async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
  return text;
}

/**
 * The writer in a child process (`bench_feed_writer.ts`), the reader here with its own services
 * on the same home, polling the ledger every `pollMs`.
 */
async function timeFeedCrossProcess(home: string, pollMs: number): Promise<FeedSample> {
  await using services = await openServices({ home, pollMs });
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      "--allow-env",
      "scripts/bench_feed_writer.ts",
      home,
    ],
    cwd: repoRoot(),
    env: { DENO_NO_UPDATE_CHECK: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
  }).spawn();
  let exited = false;
  const status = child.status.finally(() => exited = true);
  const stderr = readAll(child.stderr);
  try {
    // The child's first line names its run; the rest of its output is drained meanwhile.
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) {
        throw new Error(`the feed writer ended before naming its run: ${(await stderr).trim()}`);
      }
      buffered += value;
    }
    const drained = (async () => {
      while (!(await lines.read()).done) { /* nothing more is expected */ }
    })();
    const { run_id: runId } = JSON.parse(buffered.slice(0, buffered.indexOf("\n"))) as {
      run_id: string;
    };
    const sample = await followTicks(services, runId);
    const { code } = await status;
    await drained;
    if (code !== 0) {
      throw new Error(`the feed writer exited with status ${code}: ${(await stderr).trim()}`);
    }
    return sample;
  } finally {
    if (!exited) {
      try {
        child.kill("SIGKILL");
      } catch {
        // It ended meanwhile.
      }
    }
    await status;
    await stderr.catch(() => "");
  }
}

/**
 * CPU time (% of one core) of this process while one reader waits `IDLE_MS` for events of a
 * stream nobody writes: the cost of polling at `pollMs`; without `pollMs`, nothing waits.
 */
async function idleCpuPercent(home: string, pollMs?: number): Promise<number> {
  const ledger = await openLedger(home, pollMs !== undefined ? { pollMs } : {});
  try {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    if (pollMs === undefined) await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    else {
      await ledger.waitForEvents({ kind: "run", id: "run_idle_bench" }, {
        after: -1,
        timeoutMs: IDLE_MS,
      });
    }
    const cpu1 = process.cpuUsage();
    const elapsedUs = (performance.now() - t0) * 1000;
    return (100 * (cpu1.user - cpu0.user + cpu1.system - cpu0.system)) / elapsedUs;
  } finally {
    ledger.close();
  }
}

/** Median and 95th percentile (nearest rank) of a sample, with min and max. */
function withP95(samples: number[]): Stats & { p95: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(0.95 * sorted.length));
  return { ...summarize(samples), p95: round(sorted[rank - 1] ?? 0) };
}

/** Runs `fn` with a fresh temporary directory under `root`, removed afterwards. */
async function withTempDir<T>(root: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ dir: root, prefix: "home-" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

async function repetition(
  root: string,
  only: ReadonlySet<Group>,
  scripts: { empty: string; oneCall: string; fanout: string; cliHome: string },
): Promise<Repetition> {
  const home = <T>(fn: (dir: string) => Promise<T>): Promise<T> => withTempDir(root, fn);
  const rep: Repetition = {
    inProcessFirstCallMs: NaN,
    preStartedFirstCallMs: NaN,
    bareGuestMs: NaN,
    bwrapGuestMs: NaN,
    microvmLimaMs: NaN,
    microvmKrunvmMs: NaN,
    cliMs: NaN,
    cliLauncherMs: NaN,
    cliTaskMs: NaN,
    bareDenoMs: NaN,
    fanoutMs: NaN,
    replayMs: NaN,
    journalWriteMs: NaN,
    bareCommitMs: NaN,
    chain1Ms: NaN,
    chainMs: NaN,
    fanout1Ms: NaN,
    resumeChainMs: NaN,
    noCallMs: NaN,
    hostKb: NaN,
    guestKb: NaN,
    bareKb: NaN,
  };
  if (only.has("start")) {
    rep.bareGuestMs = await timeBareGuest(root, scripts.empty, "off");
    if (BWRAP_OK) rep.bwrapGuestMs = await timeBareGuest(root, scripts.empty, "on");
    rep.inProcessFirstCallMs = await home((dir) => timeFirstCallInProcess(dir));
    if (PRESTARTED_GUEST_OPTIONS) {
      const options = PRESTARTED_GUEST_OPTIONS;
      rep.preStartedFirstCallMs = await home((dir) => timeFirstCallInProcess(dir, options));
    }
  }
  if (only.has("microvm")) {
    rep.microvmLimaMs = await timeMicrovmStandInGuest(root, scripts.empty, "backend_a");
    rep.microvmKrunvmMs = await timeMicrovmStandInGuest(root, scripts.empty, "backend_b");
  }
  if (only.has("cli")) {
    // One SVC_HOME for every CLI run, as a user's shell has: its ledger and caches exist.
    rep.bareDenoMs = await timeBareDeno(scripts.empty);
    rep.cliMs = await timeCli(scripts.cliHome, scripts.oneCall);
    rep.cliLauncherMs = await timeCliLauncher(scripts.cliHome, scripts.oneCall, false);
    rep.cliTaskMs = await timeCliLauncher(scripts.cliHome, scripts.oneCall, true);
  }
  if (only.has("chain") || only.has("replay") || only.has("fanout")) {
    const chain = await home((dir) => timeChainAndReplay(dir));
    Object.assign(rep, {
      chain1Ms: chain.chain1Ms,
      chainMs: chain.chainMs,
      noCallMs: chain.noCallMs,
      resumeChainMs: chain.resumeChainMs,
    });
    rep.bareCommitMs = await home((dir) => timeBareCommit(dir, chain.template));
  }
  if (only.has("fanout")) {
    rep.fanout1Ms = await home((dir) => timeFanout(dir, 1));
    const { liveMs, replayMs } = await home((dir) => timeFanoutAndReplay(dir));
    rep.fanoutMs = liveMs;
    rep.replayMs = replayMs;
    rep.journalWriteMs = await home((dir) => timeJournalWrite(dir));
  }
  if (only.has("memory")) {
    const memory = await home((dir) => peakMemory(dir, scripts.fanout));
    rep.hostKb = memory.hostKb;
    rep.guestKb = memory.guestKb;
    rep.bareKb = await peakMemoryBare(scripts.empty);
  }
  return rep;
}

/** One line of the table: a figure, its baseline's median and the ratio of the medians. */
interface Row {
  name: string;
  value: Stats | number | null;
  unit: string;
  /** The baseline's median; undefined for a row that is itself a baseline. */
  baseline?: number | null;
  ratio?: number | null;
  /** The goal for the ratio, as printed ("<= 2x"). */
  goal?: string;
}

function cell(value: number | null | undefined, digits = 2): string {
  if (value === undefined) return "";
  return value === null || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);
}

function formatTable(rows: Row[]): string {
  const header = ["measurement", "median", "min", "max", "unit", "baseline", "ratio", "goal"];
  const cells = rows.map((row) => {
    const v = row.value;
    const stats = v === null
      ? ["n/a", "", ""]
      : typeof v === "number"
      ? [cell(v), "", ""]
      : [cell(v.median), cell(v.min), cell(v.max)];
    const ratio = row.ratio === undefined ? "" : row.ratio === null ? "n/a" : `${cell(row.ratio)}x`;
    return [row.name, ...stats, row.unit, cell(row.baseline), ratio, row.goal ?? ""];
  });
  const all = [header, ...cells];
  const widths = header.map((_, c) => Math.max(...all.map((row) => (row[c] ?? "").length)));
  const left = new Set([0, 4, 7]);
  const line = (row: string[]): string =>
    row.map((text, c) => left.has(c) ? text.padEnd(widths[c] ?? 0) : text.padStart(widths[c] ?? 0))
      .join("  ").trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(header), rule, ...cells.map(line)].join("\n");
}

/** A figure of the JSON line: its stats, unit, the baseline it is compared with, and the ratio. */
interface Figure {
  value: Stats | number | null;
  unit: string;
  baseline?: string;
  ratio?: number | null;
  goal?: string;
}

async function main(args: string[]): Promise<number> {
  let parsed: BenchArgs;
  try {
    parsed = parseArgs(args);
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    return 2;
  }
  const { runs, only } = parsed;
  /** Set when the soak or the fuzz run found a failure: the bench then exits with 1. */
  const broken: string[] = [];
  const root = await Deno.makeTempDir({ prefix: "svc-bench-" });
  try {
    const scripts = {
      empty: `${root}/bench_empty.js`,
      oneCall: `${root}/bench_one_call.js`,
      fanout: `${root}/bench_fanout.js`,
      cliHome: `${root}/cli_home`,
    };
    await Deno.mkdir(scripts.cliHome);
    await Deno.writeTextFile(scripts.empty, "");
    await Deno.writeTextFile(scripts.oneCall, ONE_CALL_SCRIPT);
    await Deno.writeTextFile(scripts.fanout, FANOUT_SCRIPT);

    const started = performance.now();
    const reps: Repetition[] = [];
    for (let i = 0; i < WARMUP_RUNS + runs; i++) {
      const rep = await repetition(root, only, scripts);
      if (i >= WARMUP_RUNS) reps.push(rep);
    }

    /** Median etc. of a per-repetition value; null when it was not measured. */
    const stat = (value: (r: Repetition) => number): Stats | null => {
      const samples = reps.map(value);
      return samples.some((v) => !Number.isFinite(v)) ? null : summarize(samples);
    };
    const pick = (key: keyof Repetition): Stats | null => stat((r) => r[key]);
    const ratioOf = (a: Stats | number | null, b: Stats | number | null): number | null => {
      const x = typeof a === "number" ? a : a?.median;
      const y = typeof b === "number" ? b : b?.median;
      return x === undefined || y === undefined || !y ? null : round(x / y);
    };
    const median = (s: Stats | number | null): number | null =>
      s === null ? null : typeof s === "number" ? s : s.median;

    const rows: Row[] = [];
    const figures: Record<string, Figure> = {};
    /** A baseline: printed as a row of its own, and kept in the JSON line. */
    const baseline = (key: string, name: string, value: Stats | number | null, unit: string) => {
      if (figures[key]) return;
      rows.push({ name, value, unit });
      figures[key] = { value, unit };
    };
    /** A component of the figure above it (no ratio of its own): kept in the JSON line too. */
    const part = (key: string, name: string, value: Stats | number | null, unit: string) => {
      rows.push({ name, value, unit });
      figures[key] = { value, unit };
    };
    /** A figure against `base` (a key given to {@linkcode baseline}). */
    const figure = (
      key: string,
      name: string,
      value: Stats | number | null,
      unit: string,
      base: string,
      goal?: string,
    ) => {
      const against = figures[base]?.value ?? null;
      const ratio = ratioOf(value, against);
      rows.push({ name, value, unit, baseline: median(against), ratio, goal });
      figures[key] = { value, unit, baseline: base, ratio, ...(goal ? { goal } : {}) };
    };

    // Start.
    let inProcess: Stats | null = null;
    let bareGuest: Stats | null = null;
    let bwrapGuest: Stats | null = null;
    if (only.has("start")) {
      bareGuest = pick("bareGuestMs");
      bwrapGuest = BWRAP_OK ? pick("bwrapGuestMs") : null;
      inProcess = pick("inProcessFirstCallMs");
      baseline("bare_guest_ms", "baseline: bare guest-like deno run (empty file)", bareGuest, "ms");
      figure(
        "first_call_in_process_ms",
        "first agent() call, in process (start -> call reaches the host)",
        inProcess,
        "ms",
        "bare_guest_ms",
        "<= 1.2x",
      );
      figure(
        "first_call_prestarted_guest_ms",
        PRESTARTED_GUEST_OPTIONS
          ? "first agent() call, pre-started guest (host has run once)"
          : "first agent() call, pre-started guest (no engine option yet)",
        PRESTARTED_GUEST_OPTIONS ? pick("preStartedFirstCallMs") : null,
        "ms",
        "bare_guest_ms",
      );
      if (BWRAP_OK) {
        figure(
          "bwrap_guest_ms",
          "the same bare guest start inside bubblewrap",
          bwrapGuest,
          "ms",
          "bare_guest_ms",
        );
      }
    }
    if (only.has("microvm")) {
      baseline("bare_guest_ms", "baseline: bare guest-like deno run (empty file)", bareGuest, "ms");
      figure(
        "microvm_stand_in_lima_ms",
        "stand-in microVM guest start, backend_a (limactl list + shell)",
        pick("microvmLimaMs"),
        "ms",
        "bare_guest_ms",
      );
      figure(
        "microvm_stand_in_krunvm_ms",
        "stand-in microVM guest start, backend_b (krunvm create/start/delete)",
        pick("microvmKrunvmMs"),
        "ms",
        "bare_guest_ms",
      );
    }
    // The whole CLI.
    if (only.has("cli")) {
      baseline(
        "bare_deno_ms",
        "baseline: bare deno run --no-config (empty file)",
        pick("bareDenoMs"),
        "ms",
      );
      figure(
        "cli_task_ms",
        "deno task svc workflow run, 1 call (from a shell)",
        pick("cliTaskMs"),
        "ms",
        "bare_deno_ms",
        "<= 5x",
      );
      figure(
        "cli_launcher_ms",
        "  launcher + host (the svc task's deno run)",
        pick("cliLauncherMs"),
        "ms",
        "bare_deno_ms",
        "<= 5x",
      );
      figure(
        "cli_ms",
        "  host alone (deno run of the module the launcher picks)",
        pick("cliMs"),
        "ms",
        "bare_deno_ms",
      );
    }
    // Durable steps.
    const chainMarginal = stat((r) => (r.chainMs - r.chain1Ms) / (CHAIN_CALLS - 1));
    const fanoutMarginal = stat((r) => (r.fanoutMs - r.fanout1Ms) / (FANOUT_CALLS - 1));
    const replayPerCall = stat((r) => (r.resumeChainMs - r.noCallMs) / CHAIN_CALLS);
    if (only.has("chain") || only.has("fanout") || only.has("replay")) {
      baseline(
        "bare_commit_ms",
        "baseline: one bare KV commit of a journal entry (alone)",
        pick("bareCommitMs"),
        "ms",
      );
    }
    if (only.has("chain")) {
      figure(
        "chain_step_ms",
        `sequential step, marginal (T${CHAIN_CALLS} - T1) / ${CHAIN_CALLS - 1}`,
        chainMarginal,
        "ms",
        "bare_commit_ms",
        "<= 2x",
      );
      part("chain_1_ms", "  T1: 1-call chain, start -> end", pick("chain1Ms"), "ms");
      part(
        "chain_ms",
        `  T${CHAIN_CALLS}: ${CHAIN_CALLS}-call chain, start -> end`,
        pick("chainMs"),
        "ms",
      );
    }
    if (only.has("fanout")) {
      figure(
        "fanout_step_ms",
        `fan-out step, marginal (T${FANOUT_CALLS} - T1) / ${FANOUT_CALLS - 1}, conc ${CONCURRENCY}`,
        fanoutMarginal,
        "ms",
        "bare_commit_ms",
        "<= 0.5x",
      );
      figure(
        "journal_write_ms",
        "one ledger.write() of a journal op alone (the ledger's own path)",
        pick("journalWriteMs"),
        "ms",
        "bare_commit_ms",
      );
    }
    if (only.has("replay") || only.has("chain")) {
      baseline(
        "no_call_ms",
        `baseline: the same loop with no agent() call, start -> end`,
        pick("noCallMs"),
        "ms",
      );
      figure(
        "resume_chain_ms",
        `resume of the ${CHAIN_CALLS}-call chain (all replayed), start -> end`,
        pick("resumeChainMs"),
        "ms",
        "no_call_ms",
        "<= 1.1x",
      );
      figure(
        "replayed_call_ms",
        "  per replayed call: (T_resume - T_nocall) / 200",
        replayPerCall,
        "ms",
        "bare_commit_ms",
      );
    }
    let live: Stats | null = null;
    let replay: Stats | null = null;
    if (only.has("fanout")) {
      live = stat((r) => FANOUT_CALLS / (r.fanoutMs / 1000));
      replay = stat((r) => FANOUT_CALLS / (r.replayMs / 1000));
      baseline(
        "fanout_calls_per_s",
        `baseline: ${FANOUT_CALLS} live fake calls, conc ${CONCURRENCY}`,
        live,
        "calls/s",
      );
      figure(
        "fanout_replay_calls_per_s",
        `  resume of it: ${FANOUT_CALLS} replayed calls`,
        replay,
        "calls/s",
        "fanout_calls_per_s",
      );
    }
    // Memory.
    const mib = (key: "hostKb" | "guestKb" | "bareKb") => stat((r) => r[key] / 1024);
    if (only.has("memory")) {
      baseline(
        "bare_rss_mib",
        "baseline: peak RSS of a bare deno run (empty file)",
        mib("bareKb"),
        "MiB",
      );
      figure(
        "host_rss_mib",
        `peak RSS of the host, ${FANOUT_CALLS}-call CLI run`,
        mib("hostKb"),
        "MiB",
        "bare_rss_mib",
      );
      figure("guest_rss_mib", "peak RSS of its guest", mib("guestKb"), "MiB", "bare_rss_mib");
    }

    // The event feed, once: each measurement holds FEED_TICKS events.
    if (only.has("feed")) {
      const sameProcess = withP95(
        (await withTempDir(root, (dir) => timeFeedSameProcess(dir))).latenciesMs,
      );
      const crossDefault = withP95(
        (await withTempDir(root, (dir) => timeFeedCrossProcess(dir, DEFAULT_POLL_MS)))
          .latenciesMs,
      );
      const crossShort = withP95(
        (await withTempDir(root, (dir) => timeFeedCrossProcess(dir, SHORT_POLL_MS))).latenciesMs,
      );
      const idleNone = round(await withTempDir(root, (dir) => idleCpuPercent(dir)));
      const idleDefault = round(
        await withTempDir(root, (dir) => idleCpuPercent(dir, DEFAULT_POLL_MS)),
      );
      const idleShort = round(
        await withTempDir(root, (dir) => idleCpuPercent(dir, SHORT_POLL_MS)),
      );
      // At least 1 ms, the resolution of `at`, so that the ratios stay finite.
      const floor = (s: Stats & { p95: number }) => ({ ...s, median: Math.max(s.median, 1) });
      baseline(
        "feed_same_process_ms",
        `baseline: event recorded -> seen, same process (${FEED_TICKS} events)`,
        floor(sameProcess),
        "ms",
      );
      baseline("feed_same_process_p95_ms", "  p95", Math.max(sameProcess.p95, 1), "ms");
      figure(
        "feed_other_process_ms",
        `  reader in another process, poll ${DEFAULT_POLL_MS} ms (default)`,
        crossDefault,
        "ms",
        "feed_same_process_ms",
      );
      figure(
        "feed_other_process_p95_ms",
        "  p95",
        crossDefault.p95,
        "ms",
        "feed_same_process_p95_ms",
      );
      figure(
        "feed_other_process_short_poll_ms",
        `  reader in another process, poll ${SHORT_POLL_MS} ms`,
        crossShort,
        "ms",
        "feed_same_process_ms",
      );
      figure(
        "feed_other_process_short_poll_p95_ms",
        "  p95",
        crossShort.p95,
        "ms",
        "feed_same_process_p95_ms",
      );
      baseline("idle_cpu_none", "baseline: CPU with no reader (asleep)", idleNone, "% core");
      figure(
        "idle_cpu_poll_default",
        `CPU of an idle reader, poll ${DEFAULT_POLL_MS} ms`,
        idleDefault,
        "% core",
        "idle_cpu_none",
      );
      figure(
        "idle_cpu_poll_short",
        `  poll ${SHORT_POLL_MS} ms`,
        idleShort,
        "% core",
        "idle_cpu_none",
      );
    }
    // The dashboard, once: each figure already holds several rounds.
    if (only.has("http")) {
      const http = await measureHttp(root);
      baseline(
        "bare_serve_rps",
        "baseline: bare Deno.serve hello-world",
        summarize(http.bareRps),
        "req/s",
      );
      figure(
        "status_rps",
        "authenticated GET /api/status, dashboard process",
        summarize(http.statusRps),
        "req/s",
        "bare_serve_rps",
      );
      if (!figures["first_call_in_process_ms"]) {
        baseline(
          "first_call_in_process_ms",
          "baseline: first agent() call, in process",
          pick("inProcessFirstCallMs"),
          "ms",
        );
      }
      figure(
        "http_first_event_ms",
        "POST /api/workflow/run -> first SSE event",
        summarize(http.firstEventMs),
        "ms",
        "first_call_in_process_ms",
      );
      figure(
        "http_first_call_ms",
        "POST /api/workflow/run -> first call event over SSE",
        summarize(http.firstCallMs),
        "ms",
        "first_call_in_process_ms",
      );
      baseline(
        "rest_status_ms",
        "baseline: GET /api/workflow/{run_id}",
        summarize(http.restStatusMs),
        "ms",
      );
      figure(
        "mcp_status_session_ms",
        "svc_task_status over /mcp, 2025-era session",
        summarize(http.mcpSessionMs),
        "ms",
        "rest_status_ms",
      );
      figure(
        "mcp_status_stateless_ms",
        "svc_task_status over /mcp, stateless 2026-07-28",
        summarize(http.mcpStatelessMs),
        "ms",
        "rest_status_ms",
      );
    }
    if (only.has("postgres")) {
      const pg = await measurePostgres(root, runs);
      baseline(
        "pg_bare_commit_ms",
        "baseline: one bare Postgres commit of a step's size (fsync on)",
        summarize(pg.bareCommitMs),
        "ms",
      );
      figure(
        "pg_step_ms",
        "journaled sequential step on a Postgres ledger, against it",
        summarize(pg.stepMs),
        "ms",
        "pg_bare_commit_ms",
        "<= 2x",
      );
      baseline(
        "pg_claims_one_per_s",
        "baseline: queue claims per second, one daemon (Postgres)",
        summarize(pg.claimsOne),
        "claims/s",
      );
      figure(
        "pg_claims_two_per_s",
        "queue claims per second, two daemons, against one",
        summarize(pg.claimsTwo),
        "claims/s",
        "pg_claims_one_per_s",
      );
    }
    // The longer fuzz battery, once.
    if (only.has("fuzz")) {
      const seed = parsed.fuzzSeed ?? randomSeed();
      const scale = parsed.fuzzScale;
      console.error(
        `bench: fuzz battery x${scale}, seed ${seed} (replay: SVC_FUZZ_SEED=${seed} ` +
          `SVC_FUZZ_SCALE=${scale} deno test -A test/fuzz_entries_test.ts)`,
      );
      const fuzz = await measureFuzz(repoRoot(), { scale, seed });
      part("fuzz_seed", `fuzz battery x${scale}: seed`, fuzz.seed, "");
      part("fuzz_requests", "  requests fuzzed", fuzz.total, "requests");
      for (const [server, count] of Object.entries(fuzz.requests)) {
        part(`fuzz_requests_${server}`, `    ${server}`, count, "requests");
      }
      part("fuzz_seconds", "  time", round(fuzz.seconds, 1), "s");
      part("fuzz_failed_tests", "  failed tests (of 4)", fuzz.failed, "tests");
      if (fuzz.failure !== undefined) {
        console.error(fuzz.failure);
        broken.push(`the fuzz battery failed at seed ${seed}, scale ${scale}`);
      }
    }
    // The soak, once, last: it is the longest.
    if (only.has("soak")) {
      console.error(`bench: soak of ${parsed.soakS} s`);
      const soak = await measureSoak(root, parsed.soakS);
      const window = soak.durationS / soak.rssMib.length;
      const per = window === 60 ? "minute" : `${round(window, 1)} s window`;
      for (const [w, mib] of soak.rssMib.entries()) {
        const name = `soak: host RSS, ${per} ${w + 1} (median)`;
        if (w === 1) baseline("soak_rss_window_2_mib", name, round(mib), "MiB");
        else if (w === soak.rssMib.length - 1) {
          figure(
            `soak_rss_window_${w + 1}_mib`,
            `${name}, against ${per} 2`,
            round(mib),
            "MiB",
            "soak_rss_window_2_mib",
            `<= ${FLAT_RATIO}x`,
          );
        } else part(`soak_rss_window_${w + 1}_mib`, name, round(mib), "MiB");
      }
      part("soak_rss_first_mib", "  first sample", round(soak.rssFirstMib), "MiB");
      part("soak_rss_last_mib", "  last sample", round(soak.rssLastMib), "MiB");
      part("soak_runs", "  runs, each succeeded with its result", soak.runs, "runs");
      part("soak_reads", "  reads (autocannon)", soak.reads, "requests");
      part("soak_read_p50_ms", "  read latency p50", round(soak.readP50Ms), "ms");
      part("soak_read_p99_ms", "  read latency p99", round(soak.readP99Ms), "ms");
      part("soak_subscribers", "  event-stream subscriptions", soak.subscribers, "");
      part("soak_events", "  events delivered, none lost or repeated", soak.events, "events");
      part("soak_delivery_p50_ms", "  recorded -> delivered p50", round(soak.deliveryP50Ms), "ms");
      part("soak_delivery_p99_ms", "  recorded -> delivered p99", round(soak.deliveryP99Ms), "ms");
      const flat = soak.rssRatio <= FLAT_RATIO;
      console.error(
        `bench: soak RSS ${flat ? "stayed flat" : "GREW"}: ${per} ${soak.rssMib.length} / ` +
          `${per} 2 = ${round(soak.rssRatio, 3)} (flat: <= ${FLAT_RATIO})`,
      );
      if (soak.failures.length > 0) {
        console.error(soak.failures.join("\n"));
        broken.push(`the soak saw ${soak.failures.length} failures`);
      }
    }
    const elapsedS = (performance.now() - started) / 1000;
    const machine = {
      nproc: navigator.hardwareConcurrency,
      os: Deno.build.os,
      arch: Deno.build.arch,
      deno: Deno.version.deno,
      v8: Deno.version.v8,
    };

    console.log(
      `svc bench: ${runs} runs (+${WARMUP_RUNS} warm-up), medians; ` +
        `nproc ${machine.nproc}, ${machine.os}/${machine.arch}, deno ${machine.deno}, ` +
        `${round(elapsedS, 1)} s; ${[...only].join(",")}`,
    );
    console.log("");
    console.log(formatTable(rows));
    console.log("");
    console.log(JSON.stringify({
      bench: "svc",
      machine,
      runs,
      warmup: WARMUP_RUNS,
      only: [...only],
      elapsed_s: round(elapsedS, 2),
      figures,
    }));
    if (broken.length > 0) {
      console.error(`bench: FAILED: ${broken.join("; ")}`);
      return 1;
    }
    return 0;
  } catch (error) {
    console.error(`bench: FAILED: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}

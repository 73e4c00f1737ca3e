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
 *    - whole CLI: wall time of a `svc workflow run <script> --fake-dispatch` process. Compared
 *      with a bare `deno run --no-prompt --no-config` of an empty file.
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
 * Every repetition measures the first two in turn; the first two repetitions are warm-ups and
 * are discarded. Every step has a time limit, so the benchmark always ends.
 * @module
 */
import process from "node:process";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { RunManager, type RunStatus } from "../src/engine/mod.ts";
import { openLedger } from "../src/ledger/mod.ts";
import { createUnsafeLocalBackend, findBubblewrap } from "../src/isolation/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { FEED_CALLER, FEED_TICKS, startFeedRun, TICK_PREFIX } from "./bench_feed_writer.ts";
import { measureHttp } from "./bench_http.ts";
import { timeMicrovmStandInGuest } from "./bench_microvm.ts";

const DEFAULT_RUNS = 15;
/** Whether bubblewrap can confine a guest on this machine (its figures are skipped if not). */
const BWRAP_OK = (await findBubblewrap(Deno.execPath())).ok;
const MAX_RUNS = 1000;
const WARMUP_RUNS = 2;
const FANOUT_CALLS = 200;
const CONCURRENCY = 8;
/** Limit of one spawned process or one in-process run. */
const STEP_TIMEOUT_MS = 30_000;
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

const ONE_CALL_SCRIPT = `return await agent("hello");\n`;
const FANOUT_SCRIPT = [
  `const results = await parallel(`,
  `  Array.from({ length: ${FANOUT_CALLS} }, (_, i) => () => agent("task " + i)),`,
  `);`,
  `return results.filter((r) => r !== null).length;`,
  ``,
].join("\n");

/** Median, min and max of a measurement, plus its samples (warm-ups excluded). */
interface Stats {
  median: number;
  min: number;
  max: number;
  samples: number[];
}

/** Samples of one repetition of every measurement. */
interface Repetition {
  inProcessFirstCallMs: number;
  bareGuestMs: number;
  /** The same guest start inside bubblewrap; NaN where bubblewrap cannot run. */
  bwrapGuestMs: number;
  microvmLimaMs: number;
  microvmKrunvmMs: number;
  cliMs: number;
  bareDenoMs: number;
  fanoutMs: number;
  replayMs: number;
  journalWriteMs: number;
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

function parseRuns(args: string[]): number {
  let runs = DEFAULT_RUNS;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    let raw: string | undefined;
    if (arg === "--runs") raw = args[++i];
    else if (arg.startsWith("--runs=")) raw = arg.slice("--runs=".length);
    else throw new Error(`unknown argument '${arg}' (usage: deno task bench [--runs N])`);
    const value = Number(raw);
    if (raw === undefined || !/^\d+$/.test(raw) || value < 1 || value > MAX_RUNS) {
      throw new Error(`--runs must be a whole number from 1 to ${MAX_RUNS}, got '${raw ?? ""}'`);
    }
    runs = value;
  }
  return runs;
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

/** In process: ms from `start()` to the first `agent()` call reaching the host. */
async function timeFirstCallInProcess(home: string): Promise<number> {
  const ledger = await openLedger(home);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
  });
  try {
    let firstCallAt: number | undefined;
    const t0 = performance.now();
    const started = await manager.start({
      script: ONE_CALL_SCRIPT,
      filename: "bench_one_call.js",
      fake_dispatch: true,
      timeout: RUN_TIMEOUT_S,
    }, LOCAL);
    // The run's feed, as every surface reads it (in process: woken by the ledger's own write).
    for await (const { event } of manager.events(started.run_id, LOCAL)) {
      // The first journaled call: its counts are held back a moment to show a wave whole.
      if (firstCallAt === undefined && event.type === "call") {
        firstCallAt = performance.now();
      }
    }
    const status = await manager.wait(started.run_id, LOCAL);
    expectSucceeded(status, "the one-call run");
    if (typeof status.result !== "string") {
      throw new Error(`the one-call run returned ${JSON.stringify(status.result)}, not a string`);
    }
    if (firstCallAt === undefined) throw new Error("the one-call run never reported its call");
    return firstCallAt - t0;
  } finally {
    await manager.close();
    ledger.close();
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
  return [
    "run",
    "--allow-read",
    "--allow-write",
    "--allow-run",
    "--allow-env",
    "cli/main.ts",
    "workflow",
    "run",
    script,
    "--fake-dispatch",
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
  let result: unknown;
  try {
    result = JSON.parse(stdout);
  } catch {
    throw new Error(`svc workflow run printed something that is not JSON: ${stdout.trim()}`);
  }
  if (typeof result !== "string") {
    throw new Error(`svc workflow run returned ${stdout.trim()}, not a string`);
  }
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
  emptyScript: string,
  oneCallScript: string,
  fanoutScript: string,
): Promise<Repetition> {
  const bareDenoMs = await timeBareDeno(emptyScript);
  const bareGuestMs = await timeBareGuest(root, emptyScript, "off");
  const bwrapGuestMs = BWRAP_OK ? await timeBareGuest(root, emptyScript, "on") : NaN;
  const microvmLimaMs = await timeMicrovmStandInGuest(root, emptyScript, "backend_a");
  const microvmKrunvmMs = await timeMicrovmStandInGuest(root, emptyScript, "backend_b");
  const inProcessFirstCallMs = await withTempDir(root, (home) => timeFirstCallInProcess(home));
  const cliMs = await withTempDir(root, (home) => timeCli(home, oneCallScript));
  const { liveMs: fanoutMs, replayMs } = await withTempDir(
    root,
    (home) => timeFanoutAndReplay(home),
  );
  const journalWriteMs = await withTempDir(root, (home) => timeJournalWrite(home));
  const memory = await withTempDir(root, (home) => peakMemory(home, fanoutScript));
  const bareKb = await peakMemoryBare(emptyScript);
  return {
    inProcessFirstCallMs,
    bareGuestMs,
    bwrapGuestMs,
    microvmLimaMs,
    microvmKrunvmMs,
    cliMs,
    bareDenoMs,
    fanoutMs,
    replayMs,
    journalWriteMs,
    hostKb: memory.hostKb,
    guestKb: memory.guestKb,
    bareKb,
  };
}

function formatTable(rows: Array<[string, Stats | number, string]>): string {
  const header = ["measurement", "median", "min", "max", "unit"];
  const cells = rows.map(([name, value, unit]) =>
    typeof value === "number"
      ? [name, value.toFixed(2), "", "", unit]
      : [name, value.median.toFixed(2), value.min.toFixed(2), value.max.toFixed(2), unit]
  );
  const all = [header, ...cells];
  const widths = header.map((_, c) => Math.max(...all.map((row) => (row[c] ?? "").length)));
  const line = (row: string[]): string =>
    row.map((cell, c) =>
      c === 0 || c === 4 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0)
    ).join("  ").trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(header), rule, ...cells.map(line)].join("\n");
}

async function main(args: string[]): Promise<number> {
  let runs: number;
  try {
    runs = parseRuns(args);
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    return 2;
  }
  const root = await Deno.makeTempDir({ prefix: "svc-bench-" });
  try {
    const emptyScript = `${root}/bench_empty.js`;
    const oneCallScript = `${root}/bench_one_call.js`;
    const fanoutScript = `${root}/bench_fanout.js`;
    await Deno.writeTextFile(emptyScript, "");
    await Deno.writeTextFile(oneCallScript, ONE_CALL_SCRIPT);
    await Deno.writeTextFile(fanoutScript, FANOUT_SCRIPT);

    const started = performance.now();
    const reps: Repetition[] = [];
    for (let i = 0; i < WARMUP_RUNS + runs; i++) {
      const rep = await repetition(root, emptyScript, oneCallScript, fanoutScript);
      if (i >= WARMUP_RUNS) reps.push(rep);
    }

    // The event feed, once: each measurement holds FEED_TICKS events.
    const sameProcess = withP95(
      (await withTempDir(root, (home) => timeFeedSameProcess(home))).latenciesMs,
    );
    const crossDefault = withP95(
      (await withTempDir(root, (home) => timeFeedCrossProcess(home, DEFAULT_POLL_MS)))
        .latenciesMs,
    );
    const crossShort = withP95(
      (await withTempDir(root, (home) => timeFeedCrossProcess(home, SHORT_POLL_MS)))
        .latenciesMs,
    );
    const idleNone = round(await withTempDir(root, (home) => idleCpuPercent(home)));
    const idleDefault = round(
      await withTempDir(root, (home) => idleCpuPercent(home, DEFAULT_POLL_MS)),
    );
    const idleShort = round(await withTempDir(root, (home) => idleCpuPercent(home, SHORT_POLL_MS)));
    // The dashboard, once: each figure already holds several rounds.
    const http = await measureHttp(root);
    const elapsedS = (performance.now() - started) / 1000;

    const pick = (key: keyof Repetition): Stats => summarize(reps.map((r) => r[key]));
    const rate = (key: "fanoutMs" | "replayMs"): Stats =>
      summarize(reps.map((r) => FANOUT_CALLS / (r[key] / 1000)));
    const inProcess = pick("inProcessFirstCallMs");
    const bareGuest = pick("bareGuestMs");
    const bwrapGuest = BWRAP_OK ? pick("bwrapGuestMs") : undefined;
    const cli = pick("cliMs");
    const bareDeno = pick("bareDenoMs");
    const live = rate("fanoutMs");
    const replay = rate("replayMs");
    const liveRunMs = pick("fanoutMs");
    const journalWrite = pick("journalWriteMs");
    const perCallMs = round(liveRunMs.median / FANOUT_CALLS, 3);
    const hostMb = summarize(reps.map((r) => r.hostKb / 1024));
    const guestMb = summarize(reps.map((r) => r.guestKb / 1024));
    const bareMb = summarize(reps.map((r) => r.bareKb / 1024));
    const ratios = {
      in_process_vs_bare_guest: round(inProcess.median / bareGuest.median),
      bwrap_guest_vs_plain: bwrapGuest ? round(bwrapGuest.median / bareGuest.median) : null,
      bwrap_guest_extra_ms: bwrapGuest ? round(bwrapGuest.median - bareGuest.median) : null,
      cli_vs_bare_deno: round(cli.median / bareDeno.median),
      replay_vs_live: round(replay.median / live.median),
      host_vs_bare: round(hostMb.median / bareMb.median),
      guest_vs_bare: round(guestMb.median / bareMb.median),
      // At least 1 ms, the resolution of `at`, so that the ratio stays finite.
      feed_other_process_vs_same: round(crossDefault.median / Math.max(sameProcess.median, 1)),
      status_vs_bare_serve: 0,
      http_first_call_vs_in_process: 0,
      mcp_session_vs_rest_status: 0,
      mcp_stateless_vs_rest_status: 0,
    };
    const bareRps = summarize(http.bareRps);
    const statusRps = summarize(http.statusRps);
    const httpFirstEvent = summarize(http.firstEventMs);
    const httpFirstCall = summarize(http.firstCallMs);
    ratios.status_vs_bare_serve = round(statusRps.median / bareRps.median);
    ratios.http_first_call_vs_in_process = round(httpFirstCall.median / inProcess.median);
    const restStatus = summarize(http.restStatusMs);
    const mcpSession = summarize(http.mcpSessionMs);
    const mcpStateless = summarize(http.mcpStatelessMs);
    ratios.mcp_session_vs_rest_status = round(mcpSession.median / restStatus.median);
    ratios.mcp_stateless_vs_rest_status = round(mcpStateless.median / restStatus.median);
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
        `${round(elapsedS, 1)} s`,
    );
    console.log("");
    console.log(formatTable([
      ["first agent() call, in process (start -> calls.total=1)", inProcess, "ms"],
      ["bare guest-like deno run (empty file), plain subprocess", bareGuest, "ms"],
      ["  in process / bare guest-like (medians)", ratios.in_process_vs_bare_guest, "x"],
      ...(bwrapGuest
        ? [
          ["the same guest start inside bubblewrap", bwrapGuest, "ms"] as [string, Stats, string],
          ["  bubblewrap / plain (medians)", ratios.bwrap_guest_vs_plain ?? 0, "x"] as [
            string,
            number,
            string,
          ],
          ["  bubblewrap adds (medians)", ratios.bwrap_guest_extra_ms ?? 0, "ms"] as [
            string,
            number,
            string,
          ],
        ]
        : []),
      [
        "stand-in microVM guest start, backend_a (limactl list + shell)",
        pick("microvmLimaMs"),
        "ms",
      ],
      [
        "stand-in microVM guest start, backend_b (krunvm create/start/delete)",
        pick("microvmKrunvmMs"),
        "ms",
      ],
      ["svc workflow run, 1 call, whole CLI process", cli, "ms"],
      ["bare deno run --no-prompt --no-config (empty file)", bareDeno, "ms"],
      ["  CLI / bare deno (medians)", ratios.cli_vs_bare_deno, "x"],
      [`${FANOUT_CALLS} live fake calls, conc ${CONCURRENCY}`, live, "calls/s"],
      ["  run time", liveRunMs, "ms"],
      [`resume of it: ${FANOUT_CALLS} replayed calls`, replay, "calls/s"],
      ["  replayed / live (medians)", ratios.replay_vs_live, "x"],
      ["one journal write alone (entry + counters, one atomic commit)", journalWrite, "ms"],
      [`  a live call of the fan-out, everything included (writes batched)`, perCallMs, "ms"],
      [`peak RSS of the host, ${FANOUT_CALLS}-call CLI run`, hostMb, "MiB"],
      ["peak RSS of its guest", guestMb, "MiB"],
      ["peak RSS of a bare deno run (empty file)", bareMb, "MiB"],
      [
        `event recorded -> seen, reader in the same process (${FEED_TICKS} events)`,
        sameProcess,
        "ms",
      ],
      ["  p95", sameProcess.p95, "ms"],
      [`  reader in another process, poll ${DEFAULT_POLL_MS} ms (default)`, crossDefault, "ms"],
      ["  p95", crossDefault.p95, "ms"],
      ["  other process / same process (medians)", ratios.feed_other_process_vs_same, "x"],
      [`  reader in another process, poll ${SHORT_POLL_MS} ms`, crossShort, "ms"],
      ["  p95", crossShort.p95, "ms"],
      [`CPU of an idle reader, poll ${DEFAULT_POLL_MS} ms`, idleDefault, "% core"],
      [`  poll ${SHORT_POLL_MS} ms`, idleShort, "% core"],
      ["  no reader (same process, asleep)", idleNone, "% core"],
      ["bare Deno.serve hello-world, own process", bareRps, "req/s"],
      ["authenticated GET /api/status, dashboard process", statusRps, "req/s"],
      ["  /api/status / bare serve (medians)", ratios.status_vs_bare_serve, "x"],
      ["POST /api/workflow/run -> first SSE event", httpFirstEvent, "ms"],
      ["POST /api/workflow/run -> first call event over SSE", httpFirstCall, "ms"],
      [
        "  over HTTP / in process, to the first call (medians)",
        ratios.http_first_call_vs_in_process,
        "x",
      ],
      ["GET /api/workflow/{run_id}", restStatus, "ms"],
      ["svc_task_status over /mcp, 2025-era session", mcpSession, "ms"],
      ["  / GET status (medians)", ratios.mcp_session_vs_rest_status, "x"],
      ["svc_task_status over /mcp, stateless 2026-07-28", mcpStateless, "ms"],
      ["  / GET status (medians)", ratios.mcp_stateless_vs_rest_status, "x"],
    ]));
    console.log("");
    console.log(JSON.stringify({
      bench: "svc",
      machine,
      runs,
      warmup: WARMUP_RUNS,
      elapsed_s: round(elapsedS, 2),
      first_call: {
        in_process_ms: inProcess,
        bare_guest_ms: bareGuest,
        bwrap_guest_ms: bwrapGuest ?? null,
        microvm_stand_in_lima_ms: pick("microvmLimaMs"),
        microvm_stand_in_krunvm_ms: pick("microvmKrunvmMs"),
        cli_ms: cli,
        bare_deno_ms: bareDeno,
      },
      throughput: {
        calls: FANOUT_CALLS,
        concurrency: CONCURRENCY,
        live_calls_per_s: live,
        live_run_ms: liveRunMs,
      },
      resume: { replayed_calls_per_s: replay },
      journal: { write_ms: journalWrite, live_call_ms: perCallMs },
      memory_mib: { host: hostMb, guest: guestMb, bare_deno: bareMb },
      feed: {
        events: FEED_TICKS,
        same_process_ms: sameProcess,
        other_process_ms: {
          [`poll_${DEFAULT_POLL_MS}`]: crossDefault,
          [`poll_${SHORT_POLL_MS}`]: crossShort,
        },
        idle_cpu_percent: {
          [`poll_${DEFAULT_POLL_MS}`]: idleDefault,
          [`poll_${SHORT_POLL_MS}`]: idleShort,
          none: idleNone,
        },
      },
      http: {
        bare_serve_rps: bareRps,
        status_rps: statusRps,
        run_to_first_event_ms: httpFirstEvent,
        run_to_first_call_ms: httpFirstCall,
        rest_status_ms: restStatus,
        mcp_status_session_ms: mcpSession,
        mcp_status_stateless_ms: mcpStateless,
      },
      ratios,
    }));
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

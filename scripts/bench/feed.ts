/**
 * The feed group: latency of the event feed to a reader in another process (polling the
 * ledger) against one in the same process, and the CPU an idle reader spends.
 * @module
 */
import process from "node:process";
import { openLedger } from "../../src/ledger/mod.ts";
import { openServices, type Services } from "../../src/services/mod.ts";
import { FEED_CALLER, FEED_TICKS, startFeedRun, TICK_PREFIX } from "../bench_feed_writer.ts";
import { STEP_TIMEOUT_MS } from "../bench_limit.ts";
import { expectSucceeded, repoRoot, round, type Stats, withP95, withTempDir } from "./common.ts";
import type { GroupContext, Report } from "./report.ts";

/** The ledger's default polling period for readers in another process, in ms. */
export const DEFAULT_POLL_MS = 25;

/** A shorter polling period, to show what latency it buys and what it costs an idle reader. */
export const SHORT_POLL_MS = 5;

/** How long an idle reader waits while its CPU time is measured, in ms. */
export const IDLE_MS = 1000;

/** What a reader of the feed run saw: the latency of each of its log lines, in ms. */
export interface FeedSample {
  latenciesMs: number[];
}

/**
 * Follows the feed run through the services, as a surface does (`svc workflow watch`), and
 * measures for each log line the time from its `at` to its arrival here. The first read is a
 * replay; the reader must have attached before the first line was recorded, else that line
 * would count its wait in the replay.
 */
export async function followTicks(services: Services, runId: string): Promise<FeedSample> {
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
export async function timeFeedSameProcess(home: string): Promise<FeedSample> {
  await using services = await openServices({ home });
  const runId = await startFeedRun(services);
  const sample = await followTicks(services, runId);
  expectSucceeded(await services.runs.wait(runId, FEED_CALLER), "the feed run");
  return sample;
}

/** Reads a child's stream to its end as text. */
export async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
  return text;
}

/**
 * The writer in a child process (`bench_feed_writer.ts`), the reader here with its own services
 * on the same home, polling the ledger every `pollMs`.
 */
export async function timeFeedCrossProcess(home: string, pollMs: number): Promise<FeedSample> {
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
export async function idleCpuPercent(home: string, pollMs?: number): Promise<number> {
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

/** The feed group, measured once: the event feed across processes against one process. */
export async function reportFeed(report: Report, context: GroupContext): Promise<void> {
  // The event feed, once: each measurement holds FEED_TICKS events.
  if (context.only.has("feed")) {
    const sameProcess = withP95(
      (await withTempDir(context.root, (dir) => timeFeedSameProcess(dir))).latenciesMs,
    );
    const crossDefault = withP95(
      (await withTempDir(context.root, (dir) => timeFeedCrossProcess(dir, DEFAULT_POLL_MS)))
        .latenciesMs,
    );
    const crossShort = withP95(
      (await withTempDir(context.root, (dir) => timeFeedCrossProcess(dir, SHORT_POLL_MS)))
        .latenciesMs,
    );
    const idleNone = round(await withTempDir(context.root, (dir) => idleCpuPercent(dir)));
    const idleDefault = round(
      await withTempDir(context.root, (dir) => idleCpuPercent(dir, DEFAULT_POLL_MS)),
    );
    const idleShort = round(
      await withTempDir(context.root, (dir) => idleCpuPercent(dir, SHORT_POLL_MS)),
    );
    // At least 1 ms, the resolution of `at`, so that the ratios stay finite.
    const floor = (s: Stats & { p95: number }) => ({ ...s, median: Math.max(s.median, 1) });
    report.baseline(
      "feed_same_process_ms",
      `baseline: event recorded -> seen, same process (${FEED_TICKS} events)`,
      floor(sameProcess),
      "ms",
    );
    report.baseline("feed_same_process_p95_ms", "  p95", Math.max(sameProcess.p95, 1), "ms");
    report.figure(
      "feed_other_process_ms",
      `  reader in another process, poll ${DEFAULT_POLL_MS} ms (default)`,
      crossDefault,
      "ms",
      "feed_same_process_ms",
    );
    report.figure(
      "feed_other_process_p95_ms",
      "  p95",
      crossDefault.p95,
      "ms",
      "feed_same_process_p95_ms",
    );
    report.figure(
      "feed_other_process_short_poll_ms",
      `  reader in another process, poll ${SHORT_POLL_MS} ms`,
      crossShort,
      "ms",
      "feed_same_process_ms",
    );
    report.figure(
      "feed_other_process_short_poll_p95_ms",
      "  p95",
      crossShort.p95,
      "ms",
      "feed_same_process_p95_ms",
    );
    report.baseline("idle_cpu_none", "baseline: CPU with no reader (asleep)", idleNone, "% core");
    report.figure(
      "idle_cpu_poll_default",
      `CPU of an idle reader, poll ${DEFAULT_POLL_MS} ms`,
      idleDefault,
      "% core",
      "idle_cpu_none",
    );
    report.figure(
      "idle_cpu_poll_short",
      `  poll ${SHORT_POLL_MS} ms`,
      idleShort,
      "% core",
      "idle_cpu_none",
    );
  }
}

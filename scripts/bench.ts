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
 *      (`deno run` of the module the launcher picks: `cli/host_bundle/workflow_main.js`, built by
 *      `deno task build:host`), all on one SVC_HOME kept across repetitions (as a user's is).
 *      Compared with a bare `deno run --no-prompt --no-config` of an empty file (issue 37's
 *      goal: the whole command at most 8x).
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
 *      host keeps a guest started ahead (`PRESTARTED_GUEST_OPTIONS` in `bench/common.ts`); "n/a" until the
 *      engine offers the option.
 *
 * 6. The longer fuzz battery (`bench_fuzz.ts`, group `fuzz`): `test/fuzz_entries_test.ts` at
 *    `--fuzz-scale` times its CI size (default `FUZZ_DEFAULT_SCALE`) with a random seed
 *    printed first (`--fuzz-seed` replays one): requests fuzzed, time and failed tests.
 *
 * 7. The soak (`bench_soak.ts`, group `soak`): the real `svc dashboard` process under a steady
 *    mix of runs, event-stream subscribers and autocannon reads for `--soak-s` seconds (default
 *    `SOAK_DEFAULT_S`), its host's RSS per tenth of the duration and whether it stayed
 *    flat (last window's median within `FLAT_RATIO`x of the second's).
 *
 * 8. The shared ledger (`bench_postgres.ts`, group `postgres`), on a real Postgres server with
 *    fsync on: the marginal cost of a journaled sequential step on a Postgres ledger against one
 *    bare Postgres commit of the same size (goal <= 2x), and queue claims per second with one
 *    daemon and with two. Measured `--runs` times after the repetitions.
 *
 * 9. The microvm tier's `qemu` backend in real micro-VMs (`bench_qemu.ts`, group `qemu`), only
 *    where its image exists: a run's start to its first `agent()` with a VM booted for it, and
 *    with one already waiting (a long-lived host), and one waiting VM's resident memory.
 *    Measured `--runs` times, one VM at a time.
 *
 * 10. The scale of one host (`bench_scale.ts`, group `scale`): 50, 100 and 200 runs started at
 *    once in one dashboard process, each waiting on slow fake calls: the host's RSS (and per
 *    run), each guest's RSS, the host's event-loop delay p99, the time to admit the last run
 *    and to its first call, and `GET /api/status` latency meanwhile, against the same host idle.
 *
 * The soak and the fuzz run fail the bench (exit 1, after the table) when they find a failure.
 *
 * Every figure is printed with its baseline and the ratio of the medians; the final JSON line
 * carries them all (`figures`). `--only <name,...>` runs a subset (names: `GROUPS` in `bench/common.ts`).
 *
 * Every repetition measures the figures in turn; the first two repetitions are warm-ups and
 * are discarded. Every step has a time limit, so the benchmark always ends.
 *
 * Each group has its module in `bench/`: its measurements and its section of the table.
 * @module
 */
import { type BenchArgs, parseArgs } from "./bench/args.ts";
import {
  FANOUT_SCRIPT,
  ONE_CALL_SCRIPT,
  type Repetition,
  round,
  WARMUP_RUNS,
} from "./bench/common.ts";
import { reportCli } from "./bench/cli.ts";
import { reportFeed } from "./bench/feed.ts";
import { reportFuzz } from "./bench/fuzz.ts";
import { reportHttp } from "./bench/http.ts";
import { reportMemory } from "./bench/memory.ts";
import { reportMicrovm } from "./bench/microvm.ts";
import { reportPostgres } from "./bench/postgres.ts";
import { reportQemu } from "./bench/qemu.ts";
import { repetition } from "./bench/repetition.ts";
import { createReport, formatTable, type GroupContext, type Report } from "./bench/report.ts";
import { reportScale } from "./bench/scale.ts";
import { reportSoak } from "./bench/soak.ts";
import { reportStart } from "./bench/start.ts";
import { reportSteps } from "./bench/steps.ts";
import { runTask } from "./task_failure.ts";

/**
 * The groups' sections of the table, in the order they are printed: the repeated figures
 * first, then those measured once, the soak last since it is the longest.
 */
const SECTIONS: ((report: Report, context: GroupContext) => void | Promise<void>)[] = [
  reportStart,
  reportMicrovm,
  reportCli,
  reportSteps,
  reportMemory,
  reportFeed,
  reportHttp,
  reportScale,
  reportPostgres,
  reportQemu,
  reportFuzz,
  reportSoak,
];

/** Writes the scripts the runs share into `root`; returns their paths. */
async function writeScripts(root: string) {
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
  return scripts;
}

/** Prints the heading, the table and the JSON line. */
function print(parsed: BenchArgs, report: Report, elapsedS: number): void {
  const { runs, only } = parsed;
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
  console.log(formatTable(report.rows));
  console.log("");
  console.log(JSON.stringify({
    bench: "svc",
    machine,
    runs,
    warmup: WARMUP_RUNS,
    only: [...only],
    elapsed_s: round(elapsedS, 2),
    figures: report.figures,
  }));
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
  const root = await Deno.makeTempDir({ prefix: "svc-bench-" });
  try {
    const scripts = await writeScripts(root);
    const started = performance.now();
    const reps: Repetition[] = [];
    for (let i = 0; i < WARMUP_RUNS + runs; i++) {
      const rep = await repetition(root, only, scripts);
      if (i >= WARMUP_RUNS) reps.push(rep);
    }
    const report = createReport(reps);
    const context: GroupContext = { only, args: parsed, root, broken: [] };
    for (const section of SECTIONS) await section(report, context);
    print(parsed, report, (performance.now() - started) / 1000);
    if (context.broken.length > 0) {
      console.error(`bench: FAILED: ${context.broken.join("; ")}`);
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
  await runTask("run the benchmarks", () => main(Deno.args));
}

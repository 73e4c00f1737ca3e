/**
 * The scale group (`bench_scale.ts`): N runs at once in one host, for N = 50, 100 and 200, each
 * figure against its baseline measured by the same host before its burst.
 * @module
 */
import { measureScale, SCALE_SIZES, type ScaleSample } from "../bench_scale.ts";
import { summarize } from "./common.ts";
import { peakMemoryBare } from "./memory.ts";
import type { GroupContext, Report } from "./report.ts";

/** Bursts per size at most, whatever `--runs` says: a 200-run burst takes about half a minute. */
export const SCALE_MAX_REPS = 3;

/**
 * One row of a burst size: a baseline (`base`), a figure against the baseline keyed
 * `against` (a bare suffix: of the same size; `scale_...`: a key of its own), or a part.
 */
type RowSpec = [
  kind: "base" | "figure" | "part",
  suffix: string,
  name: string,
  pick: (s: ScaleSample, n: number) => number,
  unit: string,
  against?: string,
];

const ROWS: RowSpec[] = [
  ["base", "idle_rss_mib", "baseline: idle host RSS", (s) => s.idleRssMib, "MiB"],
  ["figure", "host_rss_mib", "host RSS, N runs live", (s) => s.liveRssMib, "MiB", "idle_rss_mib"],
  ["part", "host_rss_per_run_kib", "  host RSS per run (over idle)", (s) => s.rssPerRunKib, "KiB"],
  [
    "figure",
    "guest_rss_mib",
    "RSS of one guest (median)",
    (s) => s.guestRssMib,
    "MiB",
    "scale_bare_rss_mib",
  ],
  ["part", "guests", "  guest processes seen", (s) => s.guests, ""],
  ["part", "guests_rss_mib", "  all guests together", (s) => s.guestsRssMib, "MiB"],
  [
    "base",
    "idle_loop_p99_ms",
    "baseline: idle host event-loop delay p99",
    (s) => s.idleLoopP99Ms,
    "ms",
  ],
  [
    "figure",
    "loop_p99_ms",
    "event-loop delay p99, burst and hold",
    (s) => s.loopP99Ms,
    "ms",
    "idle_loop_p99_ms",
  ],
  ["part", "loop_max_ms", "  event-loop delay max", (s) => s.loopMaxMs, "ms"],
  [
    "base",
    "single_live_ms",
    "baseline: one run, start() -> first call",
    (s) => s.singleLiveMs,
    "ms",
  ],
  [
    "figure",
    "admit_last_ms",
    "burst -> last run admitted (start() returned)",
    (s) => s.admitLastMs,
    "ms",
    "single_live_ms",
  ],
  [
    "figure",
    "live_last_ms",
    "burst -> last run's first call",
    (s) => s.liveLastMs,
    "ms",
    "single_live_ms",
  ],
  ["part", "live_per_run_ms", "  per run", (s, n) => s.liveLastMs / n, "ms"],
  ["part", "burst_cpu_per_run_ms", "  host CPU per run, burst", (s) => s.burstCpuPerRunMs, "ms"],
  [
    "part",
    "hold_cpu_per_run_ms_s",
    "  host CPU per live run, hold",
    (s) => s.holdCpuPerRunMsPerS,
    "ms/s",
  ],
  ["part", "burst_reads_per_run", "  ledger reads per run, burst", (s) => s.burstReadsPerRun, ""],
  [
    "part",
    "burst_commits_per_run",
    "  ledger commits per run, burst",
    (s) => s.burstCommitsPerRun,
    "",
  ],
  [
    "part",
    "burst_conflicts_per_run",
    "  of them lost to a check",
    (s) => s.burstConflictsPerRun,
    "",
  ],
  [
    "part",
    "hold_reads_per_run_s",
    "  ledger reads per live run, hold",
    (s) => s.holdReadsPerRunPerS,
    "/s",
  ],
  [
    "part",
    "hold_commits_per_run_s",
    "  ledger commits per live run, hold",
    (s) => s.holdCommitsPerRunPerS,
    "/s",
  ],
  [
    "base",
    "idle_read_p99_ms",
    "baseline: GET /api/workflow/{run_id} p99, idle host",
    (s) => s.idleReadP99Ms,
    "ms",
  ],
  [
    "figure",
    "read_p99_ms",
    "GET /api/workflow/{run_id} p99, burst and hold",
    (s) => s.readP99Ms,
    "ms",
    "idle_read_p99_ms",
  ],
  ["part", "read_p50_ms", "  p50", (s) => s.readP50Ms, "ms"],
  [
    "base",
    "idle_status_p99_ms",
    "baseline: GET /api/status p99, idle host",
    (s) => s.idleStatusP99Ms,
    "ms",
  ],
  [
    "figure",
    "status_p99_ms",
    "GET /api/status p99, burst and hold",
    (s) => s.statusP99Ms,
    "ms",
    "idle_status_p99_ms",
  ],
  ["part", "status_p50_ms", "  p50", (s) => s.statusP50Ms, "ms"],
  ["part", "reads", "  reads of both", (s) => s.reads, "requests"],
];

/** The scale group's rows for one burst size. */
function reportSize(report: Report, n: number, samples: ScaleSample[]): void {
  const key = (suffix: string) => suffix.startsWith("scale_") ? suffix : `scale_${n}_${suffix}`;
  for (const [kind, suffix, name, pick, unit, against] of ROWS) {
    const value = summarize(samples.map((sample) => pick(sample, n)));
    const label = kind === "part" ? name : `scale ${n}: ${name.replace("N runs", `${n} runs`)}`;
    if (kind === "base") report.baseline(key(suffix), label, value, unit);
    else if (kind === "part") report.part(key(suffix), label, value, unit);
    else report.figure(key(suffix), label, value, unit, key(against ?? ""));
  }
}

/** The scale group, measured after the repetitions: each size in fresh hosts, one at a time. */
export async function reportScale(report: Report, context: GroupContext): Promise<void> {
  if (!context.only.has("scale")) return;
  const empty = `${context.root}/scale_empty.js`;
  await Deno.writeTextFile(empty, "");
  const bare: number[] = [];
  const bySize = new Map<number, ScaleSample[]>(SCALE_SIZES.map((n) => [n, []]));
  const reps = Math.min(context.args.runs, SCALE_MAX_REPS);
  for (let rep = 0; rep < reps; rep++) {
    bare.push((await peakMemoryBare(empty)) / 1024);
    for (const n of SCALE_SIZES) {
      console.error(`bench: scale, ${n} runs at once (${rep + 1}/${reps})`);
      bySize.get(n)?.push(await measureScale(context.root, n));
    }
  }
  report.baseline(
    "scale_bare_rss_mib",
    "baseline: peak RSS of a bare deno run (empty file)",
    summarize(bare),
    "MiB",
  );
  for (const [n, samples] of bySize) reportSize(report, n, samples);
}

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

/** The scale group's rows for one burst size. */
function reportSize(report: Report, n: number, samples: ScaleSample[]): void {
  const stat = (pick: (s: ScaleSample) => number) => summarize(samples.map(pick));
  const key = (name: string) => `scale_${n}_${name}`;
  report.baseline(
    key("idle_rss_mib"),
    `scale ${n}: baseline: idle host RSS`,
    stat((s) => s.idleRssMib),
    "MiB",
  );
  report.figure(
    key("host_rss_mib"),
    `scale ${n}: host RSS, ${n} runs live`,
    stat((s) => s.liveRssMib),
    "MiB",
    key("idle_rss_mib"),
  );
  report.part(
    key("host_rss_per_run_kib"),
    "  host RSS per run (over idle)",
    stat((s) => s.rssPerRunKib),
    "KiB",
  );
  report.figure(
    key("guest_rss_mib"),
    `scale ${n}: RSS of one guest (median)`,
    stat((s) => s.guestRssMib),
    "MiB",
    "scale_bare_rss_mib",
  );
  report.part(key("guests"), "  guest processes seen", stat((s) => s.guests), "");
  report.part(key("guests_rss_mib"), "  all guests together", stat((s) => s.guestsRssMib), "MiB");
  report.baseline(
    key("idle_loop_p99_ms"),
    `scale ${n}: baseline: idle host event-loop delay p99`,
    stat((s) => s.idleLoopP99Ms),
    "ms",
  );
  report.figure(
    key("loop_p99_ms"),
    `scale ${n}: event-loop delay p99, burst and hold`,
    stat((s) => s.loopP99Ms),
    "ms",
    key("idle_loop_p99_ms"),
  );
  report.part(key("loop_max_ms"), "  event-loop delay max", stat((s) => s.loopMaxMs), "ms");
  report.baseline(
    key("single_live_ms"),
    `scale ${n}: baseline: one run, start() -> first call`,
    stat((s) => s.singleLiveMs),
    "ms",
  );
  report.figure(
    key("admit_last_ms"),
    `scale ${n}: burst -> last run admitted (start() returned)`,
    stat((s) => s.admitLastMs),
    "ms",
    key("single_live_ms"),
  );
  report.figure(
    key("live_last_ms"),
    `scale ${n}: burst -> last run's first call`,
    stat((s) => s.liveLastMs),
    "ms",
    key("single_live_ms"),
  );
  report.part(key("live_per_run_ms"), "  per run", stat((s) => s.liveLastMs / n), "ms");
  report.part(
    key("burst_cpu_per_run_ms"),
    "  host CPU per run, burst",
    stat((s) => s.burstCpuPerRunMs),
    "ms",
  );
  report.part(
    key("hold_cpu_per_run_ms_s"),
    "  host CPU per live run, hold",
    stat((s) => s.holdCpuPerRunMsPerS),
    "ms/s",
  );
  report.baseline(
    key("idle_read_p99_ms"),
    `scale ${n}: baseline: GET /api/workflow/{run_id} p99, idle host`,
    stat((s) => s.idleReadP99Ms),
    "ms",
  );
  report.figure(
    key("read_p99_ms"),
    `scale ${n}: GET /api/workflow/{run_id} p99, burst and hold`,
    stat((s) => s.readP99Ms),
    "ms",
    key("idle_read_p99_ms"),
  );
  report.part(key("read_p50_ms"), "  p50", stat((s) => s.readP50Ms), "ms");
  report.baseline(
    key("idle_status_p99_ms"),
    `scale ${n}: baseline: GET /api/status p99, idle host`,
    stat((s) => s.idleStatusP99Ms),
    "ms",
  );
  report.figure(
    key("status_p99_ms"),
    `scale ${n}: GET /api/status p99, burst and hold`,
    stat((s) => s.statusP99Ms),
    "ms",
    key("idle_status_p99_ms"),
  );
  report.part(key("status_p50_ms"), "  p50", stat((s) => s.statusP50Ms), "ms");
  report.part(key("reads"), "  reads of both", stat((s) => s.reads), "requests");
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

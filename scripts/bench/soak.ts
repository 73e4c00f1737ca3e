/**
 * The soak group (`bench_soak.ts`): the real dashboard process under a steady load, and
 * whether its memory stayed flat.
 * @module
 */
import { FLAT_RATIO, measureSoak } from "../bench_soak.ts";
import { round } from "./common.ts";
import type { GroupContext, Report } from "./report.ts";

/** The soak group, once, last (the longest); a failure breaks the bench. */
export async function reportSoak(report: Report, context: GroupContext): Promise<void> {
  // The soak, once, last: it is the longest.
  if (context.only.has("soak")) {
    console.error(`bench: soak of ${context.args.soakS} s`);
    const soak = await measureSoak(context.root, context.args.soakS);
    const window = soak.durationS / soak.rssMib.length;
    const per = window === 60 ? "minute" : `${round(window, 1)} s window`;
    for (const [w, mib] of soak.rssMib.entries()) {
      const name = `soak: host RSS, ${per} ${w + 1} (median)`;
      if (w === 1) report.baseline("soak_rss_window_2_mib", name, round(mib), "MiB");
      else if (w === soak.rssMib.length - 1) {
        report.figure(
          `soak_rss_window_${w + 1}_mib`,
          `${name}, against ${per} 2`,
          round(mib),
          "MiB",
          "soak_rss_window_2_mib",
          `<= ${FLAT_RATIO}x`,
        );
      } else report.part(`soak_rss_window_${w + 1}_mib`, name, round(mib), "MiB");
    }
    report.part("soak_rss_first_mib", "  first sample", round(soak.rssFirstMib), "MiB");
    report.part("soak_rss_last_mib", "  last sample", round(soak.rssLastMib), "MiB");
    report.part("soak_runs", "  runs, each succeeded with its result", soak.runs, "runs");
    report.part("soak_reads", "  reads (autocannon)", soak.reads, "requests");
    report.part("soak_read_p50_ms", "  read latency p50", round(soak.readP50Ms), "ms");
    report.part("soak_read_p99_ms", "  read latency p99", round(soak.readP99Ms), "ms");
    report.part("soak_subscribers", "  event-stream subscriptions", soak.subscribers, "");
    report.part("soak_events", "  events delivered, none lost or repeated", soak.events, "events");
    report.part(
      "soak_delivery_p50_ms",
      "  recorded -> delivered p50",
      round(soak.deliveryP50Ms),
      "ms",
    );
    report.part(
      "soak_delivery_p99_ms",
      "  recorded -> delivered p99",
      round(soak.deliveryP99Ms),
      "ms",
    );
    const flat = soak.rssRatio <= FLAT_RATIO;
    console.error(
      `bench: soak RSS ${flat ? "stayed flat" : "GREW"}: ${per} ${soak.rssMib.length} / ` +
        `${per} 2 = ${round(soak.rssRatio, 3)} (flat: <= ${FLAT_RATIO})`,
    );
    if (soak.failures.length > 0) {
      console.error(soak.failures.join("\n"));
      context.broken.push(`the soak saw ${soak.failures.length} failures`);
    }
  }
}

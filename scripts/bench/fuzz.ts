/**
 * The fuzz group (`bench_fuzz.ts`): the longer fuzz battery, with its seed.
 * @module
 */
import { measureFuzz, randomSeed } from "../bench_fuzz.ts";
import { repoRoot, round } from "./common.ts";
import type { GroupContext, Report } from "./report.ts";

/** The fuzz group, once: the longer fuzz battery; a failure breaks the bench. */
export async function reportFuzz(report: Report, context: GroupContext): Promise<void> {
  // The longer fuzz battery, once.
  if (context.only.has("fuzz")) {
    const seed = context.args.fuzzSeed ?? randomSeed();
    const scale = context.args.fuzzScale;
    console.error(
      `bench: fuzz battery x${scale}, seed ${seed} (replay: SVC_FUZZ_SEED=${seed} ` +
        `SVC_FUZZ_SCALE=${scale} deno test -A test/fuzz_entries_test.ts)`,
    );
    const fuzz = await measureFuzz(repoRoot(), { scale, seed });
    report.part("fuzz_seed", `fuzz battery x${scale}: seed`, fuzz.seed, "");
    report.part("fuzz_requests", "  requests fuzzed", fuzz.total, "requests");
    for (const [server, count] of Object.entries(fuzz.requests)) {
      report.part(`fuzz_requests_${server}`, `    ${server}`, count, "requests");
    }
    report.part("fuzz_seconds", "  time", round(fuzz.seconds, 1), "s");
    report.part("fuzz_failed_tests", "  failed tests (of 4)", fuzz.failed, "tests");
    if (fuzz.failure !== undefined) {
      console.error(fuzz.failure);
      context.broken.push(`the fuzz battery failed at seed ${seed}, scale ${scale}`);
    }
  }
}

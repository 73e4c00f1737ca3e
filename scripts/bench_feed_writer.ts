/**
 * The writer side of the event-feed latency benchmark (`scripts/bench.ts`): a run whose script
 * logs numbered lines spaced out in time, started through the composition root as every surface
 * starts one. `bench.ts` uses it in its own process (the same-process baseline) and runs this
 * file as a child process (the cross-process measurement):
 *
 *     deno run --allow-read --allow-write --allow-run --allow-env scripts/bench_feed_writer.ts <home>
 *
 * The child opens the services of `<home>`, starts the run, prints one JSON line
 * `{"run_id": "..."}` on standard output, waits for the run's end and exits 0 when it succeeded.
 * @module
 */
import { openServices, type Services } from "../src/services/mod.ts";

/** Lines the script logs: each one is one narration event of the run's feed. */
export const FEED_TICKS = 60;
/** Prefix of those lines, so that the reader measures them and no other event. */
export const TICK_PREFIX = "tick ";
/** Pause before the first line, in ms: time for a reader in another process to attach. */
export const ATTACH_PAUSE_MS = 400;

/**
 * The script: a pause, then the lines, 15 to 30 ms apart (uneven, so that the events do not
 * keep one phase against a reader's polling period).
 */
export const FEED_SCRIPT = [
  `const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));`,
  `await sleep(${ATTACH_PAUSE_MS});`,
  `for (let i = 0; i < ${FEED_TICKS}; i++) {`,
  `  log("${TICK_PREFIX}" + i);`,
  `  await sleep(15 + (i % 4) * 5);`,
  `}`,
  `return ${FEED_TICKS};`,
  ``,
].join("\n");

/** The owner of the benchmark's runs. */
export const FEED_CALLER = { owner: "local" };

/** Starts the feed run on open services; resolves with its id once it is recorded. */
export async function startFeedRun(services: Services): Promise<string> {
  const started = await services.runs.start({
    script: FEED_SCRIPT,
    filename: "bench_feed.js",
    fake_dispatch: true,
    timeout: 30,
  }, FEED_CALLER);
  return started.run_id;
}

async function main(args: string[]): Promise<number> {
  const [home] = args;
  if (!home || args.length !== 1) {
    console.error("usage: bench_feed_writer.ts <home>");
    return 2;
  }
  await using services = await openServices({ home });
  const runId = await startFeedRun(services);
  console.log(JSON.stringify({ run_id: runId }));
  const status = await services.runs.wait(runId, FEED_CALLER);
  if (status.state !== "succeeded" || status.result !== FEED_TICKS) {
    console.error(`the feed run ended '${status.state}' with ${JSON.stringify(status.result)}`);
    return 1;
  }
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}

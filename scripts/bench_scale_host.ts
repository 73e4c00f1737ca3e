/**
 * The host of the scale benchmark (`bench_scale.ts`), in a process of its own: the dashboard
 * over fresh services in `SVC_HOME` (whose `config.json` lifts `admission.host_live_guests` to
 * the burst's size), one token, and the fake provider at a slow latency. It prints one JSON
 * line per phase on standard output while the benchmark reads the dashboard meanwhile:
 *
 * 1. `{"phase":"listening","port":P}`; one run alone, timed from `start()` to its first
 *    `agent()` call (the baseline of the burst's admission), then `{"phase":"quiet",...}` with
 *    that run's id (the benchmark reads it) and an idle while;
 * 2. `{"phase":"burst",...}`: RSS and event-loop delay of the idle host; N runs are started at
 *    once, each waiting on slow fake calls;
 * 3. `{"phase":"live",...}` once every run's first call is in flight (so every guest is up),
 *    with the time to admit the last run (its `start()` returned) and to its first call, and
 *    the host's CPU time over the burst; a steady hold, then `{"phase":"held",...}` with the
 *    host's RSS and its CPU time over the hold;
 * 4. `{"phase":"done",...}`: the event-loop delay of the burst and the hold, after every run
 *    is cancelled, has ended, and the services are closed.
 *
 * Usage: `bench_scale_host.ts <N> <fake latency ms> <hold ms>`.
 * @module
 */
import process from "node:process";
import { createDispatcher, type Dispatcher } from "../src/dispatch/mod.ts";
import { serveDashboard } from "../src/http/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { limited } from "./bench_limit.ts";
import { LedgerOps } from "./bench_scale_ledger_ops.ts";

/** The token the benchmark reads the dashboard with. */
export const SCALE_TOKEN = "scale-token-0123456789abcdef";

/** The caller of every run: the host's own (local), so only the host-wide cap applies. */
const LOCAL = { owner: "local" };

/** How long the host idles before the burst (idle figures, the reader's baseline), ms. */
export const IDLE_MS = 2000;

/** Period of the event-loop delay probe, ms. */
const PROBE_MS = 10;

/** How long every run may wait for the others to be admitted and live, ms. */
const BURST_LIMIT_MS = 120_000;

/**
 * A run of the burst: its first call marks it live; later calls keep it waiting until it is
 * cancelled (bounded by its count, and by the run's timeout).
 */
export const SCALE_SCRIPT = `await agent("first");
for (let i = 0; i < 1000; i++) await agent("next " + i);
return "done";
`;

/** The run's timeout, s: the bench cancels every run long before. */
const RUN_TIMEOUT_S = 600;

/** Event-loop delay: how late each `PROBE_MS` timer fired, ms, while `running`. */
class LoopProbe {
  samples: number[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  start(): void {
    const tick = (due: number) => {
      this.#timer = setTimeout(() => {
        const now = performance.now();
        this.samples.push(Math.max(0, now - due));
        tick(now + PROBE_MS);
      }, PROBE_MS);
    };
    tick(performance.now() + PROBE_MS);
  }

  /** The samples since the last take, and a fresh start. */
  take(): number[] {
    const taken = this.samples;
    this.samples = [];
    return taken;
  }

  stop(): void {
    clearTimeout(this.#timer);
  }
}

/** The fake dispatcher, counting first calls: each resolves the waiter of that count. */
function countingDispatcher(latencyMs: number) {
  const inner = createDispatcher({ fakeLatencyMs: latencyMs });
  let firsts = 0;
  const waiters = new Map<number, () => void>();
  const dispatcher: Dispatcher = {
    providers: () => inner.providers(),
    status: (request) => inner.status(request),
    admit: (options, context) => inner.admit(options, context),
    dispatch(input, context) {
      if (input.prompt === "first") {
        firsts++;
        waiters.get(firsts)?.();
        waiters.delete(firsts);
      }
      return inner.dispatch(input, context);
    },
  };
  /** Resolves once `count` first calls have reached the dispatcher. */
  const firstCalls = (count: number): Promise<void> =>
    count <= firsts ? Promise.resolve() : new Promise((resolve) => waiters.set(count, resolve));
  return { dispatcher, firstCalls };
}

/** The host's CPU time so far (user and system), ms. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

function emit(line: Record<string, unknown>): void {
  console.log(JSON.stringify(line));
}

function start(services: Services) {
  return services.runs.start({
    script: SCALE_SCRIPT,
    filename: "scale.js",
    fake_dispatch: true,
    timeout: RUN_TIMEOUT_S,
  }, LOCAL);
}

/** The burst: `n` runs at once; ms to the last `start()` and to the last first call. */
async function burst(
  services: Services,
  firstCalls: (count: number) => Promise<void>,
  seen: number,
  n: number,
): Promise<{ runIds: string[]; admitLastMs: number; liveLastMs: number }> {
  const t0 = performance.now();
  let admitLastMs = 0;
  const runIds = await Promise.all(Array.from({ length: n }, async () => {
    const status = await start(services);
    admitLastMs = Math.max(admitLastMs, performance.now() - t0);
    return status.run_id;
  }));
  await limited("the burst's first calls", firstCalls(seen + n), BURST_LIMIT_MS);
  return { runIds, admitLastMs, liveLastMs: performance.now() - t0 };
}

async function main(n: number, latencyMs: number, holdMs: number): Promise<void> {
  const ops = new LedgerOps();
  ops.install();
  const { dispatcher, firstCalls } = countingDispatcher(latencyMs);
  const services = await openServices({ home: Deno.env.get("SVC_HOME")!, dispatcher });
  const server = await serveDashboard(services, {
    port: 0,
    auth: {
      required: true,
      requireOwner: false,
      tokens: [{ token: SCALE_TOKEN, owner: "local" }],
      allowedOrigins: [],
    },
  });
  const probe = new LoopProbe();
  probe.start();
  emit({ phase: "listening", port: Number(new URL(server.url).port) });
  // One run alone: its start to its first call is what admitting one run costs here.
  const t0 = performance.now();
  const single = await start(services);
  await firstCalls(1);
  const singleLiveMs = performance.now() - t0;
  await services.runs.cancel(single.run_id, LOCAL);
  await services.runs.wait(single.run_id, LOCAL);
  probe.take();
  emit({ phase: "quiet", runId: single.run_id });
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  emit({
    phase: "burst",
    rssKb: Deno.memoryUsage().rss / 1024,
    loopMs: probe.take(),
    singleLiveMs,
  });
  ops.take();
  const cpuBefore = cpuMs();
  const { runIds, admitLastMs, liveLastMs } = await burst(services, firstCalls, 1, n);
  const cpuLive = cpuMs();
  emit({
    phase: "live",
    rssKb: Deno.memoryUsage().rss / 1024,
    admitLastMs,
    liveLastMs,
    burstCpuMs: cpuLive - cpuBefore,
    burstOps: ops.take(),
  });
  const held = performance.now();
  await new Promise((resolve) => setTimeout(resolve, holdMs));
  const rssHeldKb = Deno.memoryUsage().rss / 1024;
  const loopMs = probe.take();
  const holdCpuMs = cpuMs() - cpuLive;
  emit({
    phase: "held",
    rssKb: rssHeldKb,
    holdCpuMs,
    holdS: (performance.now() - held) / 1000,
    holdOps: ops.take(),
  });
  probe.stop();
  await Promise.all(runIds.map((id) => services.runs.cancel(id, LOCAL)));
  await Promise.all(runIds.map((id) => services.runs.wait(id, LOCAL)));
  await server.close();
  await services[Symbol.asyncDispose]();
  emit({ phase: "done", loopMs });
}

if (import.meta.main) {
  const [n, latency, hold] = Deno.args.map(Number);
  await main(n ?? 50, latency ?? 2000, hold ?? 5000);
}

/**
 * The soak of `deno task bench` (group `soak`): the real `svc dashboard` process (launcher and
 * host) under a steady mix for a long while (10 minutes by default, `--soak-s`), its host's
 * resident memory sampled all along:
 *
 * - a workflow run started every second (at most {@linkcode RUNS_IN_FLIGHT} at once), each
 *   with two subscribers of its event stream (one dropping its connection every few events
 *   and reconnecting with `Last-Event-ID`);
 * - {@linkcode GENERAL_SUBSCRIBERS} subscribers of the general stream connected all along,
 *   plus one more every two seconds that follows `?from=now` for ten seconds and leaves;
 * - authenticated reads from autocannon at a steady rate.
 *
 * RSS is reported per tenth of the duration (per minute at the default): the median of that
 * window's samples. It is judged flat when the last window's median is within
 * {@linkcode FLAT_RATIO} of the second window's (the first is the warm-up: code compiled,
 * caches filled). The soak fails when a read fails, a run does not succeed with its result, or
 * a subscriber's events differ from the stream the server holds.
 * @module
 */
import {
  cannon,
  type CannonResult,
  hostPidOf,
  LOAD_TOKEN,
  percentile,
  type ReceivedEvent,
  rssOf,
  type ServedDashboard,
  startServedDashboard,
  Subscriber,
} from "../test/load_helpers.ts";

/** The default duration, in seconds. */
export const SOAK_DEFAULT_S = 600;
/** Runs executing at once, at most. */
const RUNS_IN_FLIGHT = 4;
/** A run is started this often (when fewer than {@linkcode RUNS_IN_FLIGHT} execute). */
const RUN_EVERY_MS = 1000;
/** Subscribers of the general stream kept connected for the whole soak. */
const GENERAL_SUBSCRIBERS = 50;
/** A short-lived general subscriber comes this often, and stays this long. */
const CHURN_EVERY_MS = 2000;
const CHURN_STAY_MS = 10_000;
/** Reads per second, over this many connections. */
const READ_RATE = 100;
const READ_CONNECTIONS = 4;
/** Sequential calls of a run, and the fake provider's latency. */
const STEPS = 4;
const FAKE_LATENCY_MS = 20;
/** RSS sampling period, at most: a window holds at least four samples. */
const SAMPLE_EVERY_MS = 5000;
/** Windows the duration is cut into for the RSS report. */
const WINDOWS = 10;
/** Last window's median RSS over the second's, at most, for "flat". */
export const FLAT_RATIO = 1.1;

const SCRIPT = `
const out = [];
for (let i = 0; i < ${STEPS}; i++) {
  log("step " + i);
  out.push(await agent("soak " + args.n + "." + i));
}
return out.join("|");
`;

function expected(n: number): string {
  return Array.from({ length: STEPS }, (_, i) => `fake response to: soak ${n}.${i}`).join("|");
}

/** What the soak measured. */
export interface SoakFigures {
  durationS: number;
  /** Median host RSS of each window, MiB. */
  rssMib: number[];
  /** Last window's median over the second's. */
  rssRatio: number;
  /** Host RSS at the first and the last sample, MiB. */
  rssFirstMib: number;
  rssLastMib: number;
  runs: number;
  reads: number;
  readP50Ms: number;
  readP99Ms: number;
  subscribers: number;
  events: number;
  deliveryP50Ms: number;
  deliveryP99Ms: number;
  /** Everything that went wrong; empty when the soak held. */
  failures: string[];
}

const auth = { authorization: `Bearer ${LOAD_TOKEN}` };

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function median(values: number[]): number {
  return percentile(values, 50);
}

/** The events of an ended run's stream, read whole from the server. */
async function wholeStream(url: string, runId: string): Promise<ReceivedEvent[]> {
  const reader = new Subscriber(`${url}/api/workflow/${runId}/events`, { token: LOAD_TOKEN });
  await reader.start();
  return reader.events;
}

function same(a: readonly ReceivedEvent[], b: readonly ReceivedEvent[]): boolean {
  const shape = (events: readonly ReceivedEvent[]) =>
    JSON.stringify(events.map((e) => [e.id, e.event, e.data]));
  return shape(a) === shape(b);
}

/** Runs the soak for `durationS` seconds with its data directory under `root`. */
export async function measureSoak(root: string, durationS: number): Promise<SoakFigures> {
  const home = await Deno.makeTempDir({ dir: root, prefix: "soak-" });
  const server = await startServedDashboard(home, { fakeLatencyMs: FAKE_LATENCY_MS });
  try {
    return await soak(server, durationS);
  } finally {
    await server.stop();
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}

async function soak(server: ServedDashboard, durationS: number): Promise<SoakFigures> {
  const failures: string[] = [];
  const fail = (what: string) => {
    if (failures.length < 50) failures.push(what);
  };
  const hostPid = await hostPidOf(server.pid);
  if (hostPid === undefined) throw new Error("the dashboard's host process was not found");
  const durationMs = durationS * 1000;
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  const over = () => elapsed() >= durationMs;
  const samples: Array<{ at: number; kb: number }> = [];
  const deliveryMs: number[] = [];
  let events = 0;
  let subscribers = 0;
  let runs = 0;
  const account = (s: Subscriber, what: string) => {
    subscribers++;
    events += s.events.length;
    for (const e of s.events) deliveryMs.push(e.receivedAt - Date.parse(String(e.data.at)));
    for (const f of s.failures) fail(`${what}: ${f}`);
    if (s.unnamed.length > 0) fail(`${what}: unexpected ${s.unnamed.join(", ")}`);
  };

  const general = Array.from(
    { length: GENERAL_SUBSCRIBERS },
    () => new Subscriber(`${server.url}/api/events`, { token: LOAD_TOKEN }),
  );
  for (const s of general) s.start();

  const sampling = (async () => {
    while (!over()) {
      const { ownKb } = await rssOf(hostPid);
      if (ownKb > 0) samples.push({ at: elapsed(), kb: ownKb });
      await sleep(Math.min(SAMPLE_EVERY_MS, durationMs / WINDOWS / 4));
    }
  })();

  const latencies: number[] = [];
  const readIds: string[] = [];
  const reads = new Promise<CannonResult>((resolve, reject) => {
    let next = 0;
    const ids = readIds;
    const instance = cannon({
      url: server.url,
      connections: READ_CONNECTIONS,
      duration: durationS,
      overallRate: READ_RATE,
      timeout: 30,
      headers: auth,
      requests: [
        { method: "GET", path: "/api/status" },
        { method: "GET", path: "/api/workflow?limit=20" },
        {
          method: "GET",
          path: "/api/status",
          setupRequest: (r) => ({
            ...r,
            path: ids.length === 0 ? "/api/status" : `/api/workflow/${ids[next++ % ids.length]}`,
          }),
        },
      ],
    }, (error, result) => error ? reject(error) : resolve(result));
    instance.on("response", (_c, _s, _b, ms) => latencies.push(ms));
  });

  const churn = (async () => {
    const leaving: Promise<void>[] = [];
    while (!over()) {
      const s = new Subscriber(`${server.url}/api/events?from=now`, { token: LOAD_TOKEN });
      s.start();
      leaving.push(sleep(CHURN_STAY_MS).then(() => s.stop()).then(() => account(s, "churn")));
      await sleep(CHURN_EVERY_MS);
    }
    await Promise.all(leaving);
  })();

  const runIds: string[] = [];
  const inFlight = new Set<Promise<void>>();
  const follow = async (n: number, runId: string) => {
    const pair = [
      new Subscriber(`${server.url}/api/workflow/${runId}/events`, {
        token: LOAD_TOKEN,
        dropEvery: 3,
      }),
      new Subscriber(`${server.url}/api/workflow/${runId}/events`, { token: LOAD_TOKEN }),
    ];
    await Promise.all(pair.map((s) => s.start()));
    const whole = await wholeStream(server.url, runId);
    for (const [k, s] of pair.entries()) {
      account(s, `run ${runId}, subscriber ${k}`);
      if (!same(s.events, whole)) fail(`run ${runId}, subscriber ${k}: events differ`);
    }
    const response = await fetch(`${server.url}/api/workflow/${runId}`, { headers: auth });
    const status = await response.json();
    if (status.state !== "succeeded" || status.result !== expected(n)) {
      fail(`run ${runId}: ${status.state} ${JSON.stringify(status.error ?? status.result)}`);
    }
  };
  while (!over()) {
    const tick = sleep(RUN_EVERY_MS);
    if (inFlight.size < RUNS_IN_FLIGHT) {
      const n = runs++;
      const response = await fetch(`${server.url}/api/workflow/run`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ script: SCRIPT, fake_dispatch: true, args: { n } }),
      });
      const body = await response.json();
      if (response.status !== 202) {
        fail(`start: ${response.status} ${JSON.stringify(body)}`);
      } else {
        runIds.push(body.run_id);
        readIds.push(body.run_id);
        const done: Promise<void> = follow(n, body.run_id).catch((error) => fail(String(error)))
          .finally(() => inFlight.delete(done));
        inFlight.add(done);
      }
    }
    await tick;
  }
  await Promise.all(inFlight);
  await churn;
  await sampling;
  const read = await reads;

  // Every general subscriber reaches the head, and holds what a fresh reader from the start gets.
  const probe = new Subscriber(`${server.url}/api/events?from=now`, {
    token: LOAD_TOKEN,
    isLast: (e) => e.event === "ready",
  });
  await probe.start();
  const head = probe.lastId;
  for (let i = 0; i < 600 && !general.every((s) => s.lastId === head); i++) await sleep(50);
  const fresh = new Subscriber(`${server.url}/api/events`, {
    token: LOAD_TOKEN,
    isLast: (e) => e.id === head,
  });
  await fresh.start();
  await Promise.all(general.map((s) => s.stop()));
  for (const [k, s] of general.entries()) {
    account(s, `general ${k}`);
    if (!same(s.events, fresh.events)) fail(`general ${k}: events differ from a fresh read`);
  }
  const succeeded = new Set(
    fresh.events.filter((e) => e.data.state === "succeeded").map((e) => String(e.data.id)),
  );
  const missing = runIds.filter((id) => !succeeded.has(id));
  if (missing.length > 0) fail(`${missing.length} runs' ends are not in the general stream`);
  const code = await server.stop();
  if (code !== 0) fail(`the dashboard exited with ${code}`);

  if (read.errors > 0 || read.non2xx > 0) {
    fail(`reads: ${read.errors} errors, statuses ${JSON.stringify(read.statusCodeStats)}`);
  }
  const windowMs = durationMs / WINDOWS;
  const rssMib = Array.from({ length: WINDOWS }, (_, w) => {
    const inside = samples.filter((s) => s.at >= w * windowMs && s.at < (w + 1) * windowMs);
    return median(inside.map((s) => s.kb / 1024));
  });
  return {
    durationS,
    rssMib,
    rssRatio: (rssMib.at(-1) ?? NaN) / (rssMib[1] ?? NaN),
    rssFirstMib: (samples[0]?.kb ?? NaN) / 1024,
    rssLastMib: (samples.at(-1)?.kb ?? NaN) / 1024,
    runs: runIds.length,
    reads: read["2xx"],
    readP50Ms: percentile(latencies, 50),
    readP99Ms: percentile(latencies, 99),
    subscribers,
    events,
    deliveryP50Ms: percentile(deliveryMs, 50),
    deliveryP99Ms: percentile(deliveryMs, 99),
    failures,
  };
}

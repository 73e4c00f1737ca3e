/**
 * The load test: the real `svc dashboard` process (launcher and host, as `deno task dashboard`
 * starts it) with the fake provider at some latency, 50 workflow runs started through the API
 * and executing, 200 subscribers of the general event stream connected all along plus two
 * subscribers per run (one of them dropping its connection every few events and reconnecting
 * with `Last-Event-ID`, as a browser does), and authenticated reads from autocannon meanwhile.
 *
 * Asserted: no read failed or answered anything but 2xx; every subscriber got exactly the
 * events the ledger holds for what it followed (none lost, none twice, ids increasing, nothing
 * reset); every run succeeded with its expected result. Latencies are printed, not asserted.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { endsStream, type RunEvent } from "../src/ledger/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { tempDir } from "./helpers.ts";
import {
  cannon,
  type CannonResult,
  LOAD_OWNER,
  LOAD_TOKEN,
  percentile,
  type ReceivedEvent,
  startServedDashboard,
  Subscriber,
} from "./load_helpers.ts";

/** Runs started through the API. */
const RUNS = 50;
/** Subscribers of the general stream, connected before the first run and kept to the end. */
const GLOBAL_SUBSCRIBERS = 200;
/** A per-run subscriber of this index (of two) drops its connection every few events. */
const DROP_EVERY = 3;
/** Sequential `agent()` calls of each run. */
const STEPS = 5;
/** Latency of the fake provider, ms. */
const FAKE_LATENCY_MS = 40;
/** Reads per autocannon round; rounds go on while runs execute (at least one, at most 40). */
const READS_PER_ROUND = 500;
const MAX_ROUNDS = 40;
/** Connections of the read load. */
const READ_CONNECTIONS = 8;
/** The whole test's limit: it fails rather than hangs. */
const LIMIT_MS = 120_000;

const SCRIPT = `
phase("load");
const out = [];
for (let i = 0; i < ${STEPS}; i++) {
  log("step " + i + " of run " + args.n);
  out.push(await agent("item " + args.n + "." + i, { label: "step " + i }));
}
return { n: args.n, out };
`;

/** What run `n` returns. */
function expectedResult(n: number): unknown {
  return {
    n,
    out: Array.from({ length: STEPS }, (_, i) => `fake response to: item ${n}.${i}`),
  };
}

/** What the read load saw over all its rounds. */
interface ReadFigures {
  rounds: number;
  ok: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statuses: Record<string, number>;
  latenciesMs: number[];
}

/**
 * Rounds of autocannon reads of `GET /api/status`, `GET /api/workflow?limit=20` and
 * `GET /api/workflow/{run_id}` (the run ids known so far, in turn) until `busy()` says the runs
 * are over.
 */
async function readLoad(
  url: string,
  options: { runIds: string[]; busy: () => boolean },
): Promise<ReadFigures> {
  const figures: ReadFigures = {
    rounds: 0,
    ok: 0,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    statuses: {},
    latenciesMs: [],
  };
  let next = 0;
  const runPath = () => {
    const ids = options.runIds;
    return ids.length === 0 ? "/api/status" : `/api/workflow/${ids[next++ % ids.length]}`;
  };
  do {
    const result = await new Promise<CannonResult>((resolve, reject) => {
      const instance = cannon({
        url,
        connections: READ_CONNECTIONS,
        amount: READS_PER_ROUND,
        timeout: 30,
        headers: { authorization: `Bearer ${LOAD_TOKEN}` },
        requests: [
          { method: "GET", path: "/api/status" },
          { method: "GET", path: "/api/workflow?limit=20" },
          { method: "GET", path: "/api/status", setupRequest: (r) => ({ ...r, path: runPath() }) },
        ],
      }, (error, result) => error ? reject(error) : resolve(result));
      instance.on("response", (_client, _status, _bytes, ms) => figures.latenciesMs.push(ms));
    });
    figures.rounds++;
    figures.ok += result["2xx"];
    figures.errors += result.errors;
    figures.timeouts += result.timeouts;
    figures.non2xx += result.non2xx;
    for (const [status, { count }] of Object.entries(result.statusCodeStats)) {
      figures.statuses[status] = (figures.statuses[status] ?? 0) + count;
    }
  } while (options.busy() && figures.rounds < MAX_ROUNDS);
  return figures;
}

/** Ids of the processes whose command line names `dir` (a host or guest left behind would). */
async function processesUnder(dir: string): Promise<string[]> {
  // The directory comes through the environment, so that this shell's own argv does not name it.
  const script = `for f in /proc/[0-9]*/cmdline; do
    line=$(tr '\\0' ' ' < "$f" 2>/dev/null) || continue
    case "$line" in *"$DIR"*) echo "\${f#/proc/}";; esac
  done`;
  const output = await new Deno.Command("bash", {
    args: ["-c", script],
    env: { DIR: dir },
    stdout: "piped",
    stderr: "null",
  }).output();
  return new TextDecoder().decode(output.stdout).split("\n").filter(Boolean);
}

/** Rejects after `ms`: every wait of the test ends. */
async function within<T>(what: string, promise: Promise<T>, ms = LIMIT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves once `check()` holds, polling; rejects after the limit. */
async function until(what: string, check: () => boolean): Promise<void> {
  await within(
    what,
    (async () => {
      while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
    })(),
  );
}

/** Ids strictly increase along the events (`a.b` ids compare part by part). */
function assertIncreasing(events: readonly ReceivedEvent[], what: string): void {
  const parts = (id: string) => id.split(".").map(Number);
  for (let i = 1; i < events.length; i++) {
    const a = parts(events[i - 1]!.id);
    const b = parts(events[i]!.id);
    const later = b.every((v, k) => v >= (a[k] ?? -1)) && b.some((v, k) => v > (a[k] ?? -1));
    assert.ok(later, `${what}: id ${events[i]!.id} follows ${events[i - 1]!.id}`);
  }
}

/** What a subscriber received, in the form the ledger's items are compared in. */
function received(subscriber: Subscriber): Array<[string, string, unknown]> {
  return subscriber.events.map((e) => [e.id, e.event, e.data]);
}

/** A value as it goes over the wire (JSON drops what is undefined). */
function wire(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value));
}

Deno.test({
  name:
    "under 50 executing runs, 300 event-stream subscribers and a read load, no read fails and every subscriber gets exactly the ledger's events",
  // autocannon (run under Deno's Node compatibility) leaves a timer of its own behind.
  sanitizeOps: false,
  async fn() {
    await using home = await tempDir("svc-load-");
    const server = await startServedDashboard(home.path, { fakeLatencyMs: FAKE_LATENCY_MS });
    const started = performance.now();
    let open = 0;
    let peakOpen = 0;
    const counted = {
      onOpen: () => {
        open++;
        peakOpen = Math.max(peakOpen, open);
      },
      onClose: () => open--,
    };
    const globals: Subscriber[] = [];
    const perRun = new Map<string, Subscriber[]>();
    const runIds: string[] = [];
    let runsOver = false;
    try {
      // The general stream's subscribers, all connected before the first run starts.
      for (let i = 0; i < GLOBAL_SUBSCRIBERS; i++) {
        const subscriber = new Subscriber(`${server.url}/api/events`, {
          token: LOAD_TOKEN,
          ...counted,
        });
        globals.push(subscriber);
        subscriber.start();
      }
      await until("every general subscriber connecting", () => open >= GLOBAL_SUBSCRIBERS);

      const reads = readLoad(server.url, { runIds, busy: () => !runsOver });
      const runEnds: Promise<void>[] = [];
      for (let n = 0; n < RUNS; n++) {
        const response = await fetch(`${server.url}/api/workflow/run`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${LOAD_TOKEN}`,
            "content-type": "application/json",
          },
          body: JSON.stringify({ script: SCRIPT, fake_dispatch: true, args: { n } }),
        });
        const body = await response.json();
        assert.equal(response.status, 202, JSON.stringify(body));
        const runId = String(body.run_id);
        runIds.push(runId);
        const subscribers = [0, 1].map((k) =>
          new Subscriber(`${server.url}/api/workflow/${runId}/events`, {
            token: LOAD_TOKEN,
            ...(k === 0 ? { dropEvery: DROP_EVERY } : {}),
            ...counted,
          })
        );
        perRun.set(runId, subscribers);
        runEnds.push(...subscribers.map((s) => s.start()));
      }
      await within("every run's stream ending", Promise.all(runEnds));
      runsOver = true;
      const load = await within("the read load ending", reads);

      // Every run succeeded with what its script returns.
      for (const [n, runId] of runIds.entries()) {
        const response = await fetch(`${server.url}/api/workflow/${runId}`, {
          headers: { authorization: `Bearer ${LOAD_TOKEN}` },
        });
        const status = await response.json();
        assert.equal(status.state, "succeeded", JSON.stringify(status.error ?? status.state));
        assert.deepEqual(status.result, expectedResult(n));
        assert.equal(status.journal.calls, STEPS);
      }

      // The general stream's head now; every general subscriber must reach it.
      const probe = new Subscriber(`${server.url}/api/events?from=now`, {
        token: LOAD_TOKEN,
        isLast: (event) => event.event === "ready",
      });
      await within("the head of the general stream", probe.start());
      const head = probe.lastId;
      assert.ok(head, "the ready event carries the head");
      await until(
        "every general subscriber reaching the head",
        () => globals.every((s) => s.lastId === head),
      );
      await Promise.all(globals.map((s) => s.stop()));
      const elapsedS = (performance.now() - started) / 1000;
      assert.equal(await server.stop(), 0, server.lines.join("\n"));
      assert.deepEqual(await processesUnder(home.path), [], "no process of the host is left");

      // The reads: none failed.
      assert.equal(load.errors, 0, `read errors: ${JSON.stringify(load)}`);
      assert.equal(load.non2xx, 0, `answers: ${JSON.stringify(load.statuses)}`);
      assert.ok(load.ok >= READS_PER_ROUND, `${load.ok} reads`);

      // The ledger, read directly once the server is gone: what every subscriber must have got.
      const services = await openServices({
        home: `${home.path}/.svc`,
        dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
      });
      const caller = { owner: LOAD_OWNER };
      let delivered = 0;
      let reconnects = 0;
      const deliveryMs: number[] = [];
      const measure = (s: Subscriber) => {
        delivered += s.events.length;
        reconnects += s.connections - 1;
        for (const e of s.events) deliveryMs.push(e.receivedAt - Date.parse(String(e.data.at)));
      };
      try {
        for (const [runId, subscribers] of perRun) {
          const items = [];
          for await (
            const item of services.events.follow({ kind: "run", id: runId }, caller, {
              follow: false,
            })
          ) items.push(item);
          const last = items.at(-1);
          assert.ok(last && endsStream(last.event), `run ${runId}'s stream has ended`);
          const expected = items.map((item) => [
            String(item.seq),
            (item.event as RunEvent).type,
            wire(item.event),
          ]);
          for (const [k, subscriber] of subscribers.entries()) {
            const what = `run ${runId}, subscriber ${k}`;
            assert.deepEqual(subscriber.failures, [], what);
            assert.deepEqual(subscriber.unnamed, [], `${what}: no reset`);
            assertIncreasing(subscriber.events, what);
            assert.deepEqual(received(subscriber), expected, what);
            measure(subscriber);
          }
        }
        const activity = [];
        for await (const item of services.events.activity(caller, { follow: false })) {
          activity.push(item);
        }
        assert.equal(
          activity.filter((a) => a.state === "succeeded").length,
          RUNS,
          "the activity stream holds every run's end",
        );
        const expected = activity.map((item) => [`${item.seq}.-1`, item.kind, wire(item)]);
        assert.equal(head, `${activity.at(-1)!.seq}.-1`);
        for (const [k, subscriber] of globals.entries()) {
          const what = `general subscriber ${k}`;
          assert.deepEqual(subscriber.failures, [], what);
          assert.deepEqual(subscriber.unnamed, [], `${what}: no reset`);
          assertIncreasing(subscriber.events, what);
          assert.deepEqual(received(subscriber), expected, what);
          measure(subscriber);
        }
      } finally {
        await services.close();
      }
      assert.ok(peakOpen >= GLOBAL_SUBSCRIBERS, `${peakOpen} subscribers at once`);
      const ms = (v: number) => `${v.toFixed(0)} ms`;
      console.log(
        `load: ${RUNS} runs succeeded; ${load.ok} reads in ${load.rounds} rounds ` +
          `(${READ_CONNECTIONS} connections), 0 errors, 0 non-2xx, latency p50 ` +
          `${ms(percentile(load.latenciesMs, 50))}, p99 ${ms(percentile(load.latenciesMs, 99))}; ` +
          `${GLOBAL_SUBSCRIBERS + 2 * RUNS} subscribers (${peakOpen} connected at once, ` +
          `${reconnects} reconnections), ${delivered} events delivered, none lost or repeated, ` +
          `delivery p50 ${ms(percentile(deliveryMs, 50))}, p99 ${ms(percentile(deliveryMs, 99))}; ${
            elapsedS.toFixed(1)
          } s`,
      );
    } finally {
      runsOver = true;
      await Promise.all([...globals, ...[...perRun.values()].flat()].map((s) => s.stop()));
      await server.stop();
    }
  },
});

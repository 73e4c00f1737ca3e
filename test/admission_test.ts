/**
 * Admission control (docs/SECURITY.md, "Capacity"): the host's live-guest cap with a bounded,
 * fair queue behind it, remote owners' caps on live and queued runs, tasks and event streams
 * (429 with Retry-After beyond them), and the longest timeout a remote caller may ask for.
 */
import assert from "node:assert/strict";
import { type Config, defaultConfig } from "../src/config/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { dashboardApp } from "../src/http/mod.ts";
import type { Caller } from "../src/ledger/mod.ts";
import { openServices, STATUS_COUNTS_TTL_MS } from "../src/services/mod.ts";
import { startDashboard, TOKENS, TWO_OWNERS } from "./dashboard_helpers.ts";
import { connectHttp, errorText } from "./mcp_helpers.ts";
import { eventually } from "./daemon_helpers.ts";
import { denoPlatform } from "../src/platform/deno.ts";
import { setPlatform } from "../src/platform/mod.ts";
import { LOCAL, tempDir, testManager } from "./helpers.ts";

/** A run that never ends by itself: its one call waits a minute on the fake provider. */
const NEVER_ENDING = `await agent("wait");\nreturn "late";`;

/** The configuration with these admission caps. */
function withCaps(caps: Partial<Config["admission"]>): Config {
  const config = defaultConfig();
  return { ...config, admission: { ...config.admission, ...caps } };
}

/** Open services over a temp home with `config`, a fake provider slow enough to never answer, and the dashboard app. */
async function dashboard(config: Config) {
  const home = await tempDir("svc-admission-");
  const services = await openServices({
    home: home.path,
    config,
    dispatcher: createDispatcher({ fakeLatencyMs: 60_000 }),
  });
  const app = dashboardApp(services, { auth: TWO_OWNERS });
  const call = (path: string, token: string, body?: unknown) =>
    app.fetch(
      new Request(`http://127.0.0.1${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
  return {
    services,
    call,
    async [Symbol.asyncDispose]() {
      await services.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

Deno.test("a remote owner's runs beyond its live cap queue with their place, beyond its queued cap get 429 with Retry-After, and another owner still starts at once", async () => {
  await using t = await dashboard(
    withCaps({ owner_live_runs: 2, owner_queued_runs: 2, retry_after_s: 7 }),
  );
  const answers = await Promise.all(
    Array.from(
      { length: 5 },
      () => t.call("/api/workflow/run", TOKENS.alice, { script: NEVER_ENDING }),
    ),
  );
  const replies = await Promise.all(answers.map(async (r) => ({ r, body: await r.json() })));
  const bodies = replies.map((x) => x.body);
  const accepted = replies.filter(({ r }) => r.status === 202).map((x) => x.body);
  const [refused, ...more] = replies.filter(({ r }) => r.status === 429);
  assert.equal(accepted.length, 4, JSON.stringify(bodies));
  const waiting = accepted.filter((b) => b.queue_position !== undefined);
  assert.equal(waiting.length, 2, "two run, two wait in the queue");
  // Each answer gives the place at that moment; read now, the places are 1 and 2.
  const places = await Promise.all(
    waiting.map(async (
      b,
    ) => (await (await t.call(`/api/workflow/${b.run_id}`, TOKENS.alice)).json())),
  );
  assert.deepEqual(places.map((p) => [p.state, p.queue_position]).sort(), [
    ["queued", 1],
    ["queued", 2],
  ]);
  assert.ok(refused && more.length === 0);
  assert.equal(refused.r.headers.get("retry-after"), "7");
  assert.equal(refused.body.error.code, "rate_limited");
  assert.match(
    refused.body.error.message,
    /^Cannot start the run: owner 'alice' has 2 live runs and 2 queued, the most allowed/,
  );

  // Bob is not held up by Alice's flood: his run starts at once, ahead of her queue.
  const bob = await t.call("/api/workflow/run", TOKENS.bob, { script: NEVER_ENDING });
  assert.equal(bob.status, 202);
  assert.equal((await bob.json()).queue_position, undefined);

  const report = await (await t.call("/api/status", TOKENS.alice)).json();
  assert.deepEqual(report.admission.owner_live, { used: 2, cap: 2 });
  assert.deepEqual(report.admission.owner_queued, { used: 2, cap: 2 });
  assert.deepEqual(report.admission.host_live, { used: 3, cap: 32 });
  assert.deepEqual(report.admission.host_queued, { used: 2, cap: 200 });
});

Deno.test("at the host's live cap a run queues, and starts and finishes when a slot frees, owners taking turns", async () => {
  await using t = await testManager({
    fakeLatencyMs: 60_000,
    admission: { hostLiveGuests: 1 },
  });
  const alice: Caller = { owner: "alice", remote: true };
  const bob: Caller = { owner: "bob", remote: true };
  const blocker = await t.manager.start({ script: NEVER_ENDING }, LOCAL);
  assert.equal(blocker.queue_position, undefined);
  const a1 = await t.manager.start({ script: "return 'a1';" }, alice);
  const a2 = await t.manager.start({ script: "return 'a2';" }, alice);
  const b1 = await t.manager.start({ script: "return 'b1';" }, bob);
  assert.deepEqual([a1.queue_position, a2.queue_position, b1.queue_position], [1, 2, 2]);
  // Bob's first run goes before Alice's second: owners take turns.
  assert.equal((await t.manager.get(a2.run_id, alice))?.queue_position, 3);
  assert.equal((await t.manager.get(b1.run_id, bob))?.queue_position, 2);

  await t.manager.cancel(blocker.run_id, LOCAL);
  const ends = await Promise.all([
    t.manager.wait(a1.run_id, alice),
    t.manager.wait(b1.run_id, bob),
    t.manager.wait(a2.run_id, alice),
  ]);
  assert.deepEqual(ends.map((s) => [s.state, s.result]), [
    ["succeeded", "a1"],
    ["succeeded", "b1"],
    ["succeeded", "a2"],
  ]);
  const started = ends.map((s) => s.started_at!);
  assert.deepEqual([...started].sort(), started, "started in the fair order: a1, b1, a2");
});

Deno.test("/api/status counts the caller's queued and running runs from the queue and the active runs, and never another owner's", async () => {
  await using t = await dashboard(withCaps({ host_live_guests: 1 }));
  const start = async (token: string) => {
    const answer = await t.call("/api/workflow/run", token, { script: NEVER_ENDING });
    assert.equal(answer.status, 202);
    return String((await answer.json()).run_id);
  };
  const running = await start(TOKENS.alice);
  await start(TOKENS.alice);
  await start(TOKENS.bob);
  const active = async (token: string) => (await (await t.call("/api/status", token)).json()).runs;
  assert.deepEqual(await active(TOKENS.alice), { active: { running: 1, queued: 1 } });
  assert.deepEqual(await active(TOKENS.bob), { active: { queued: 1 } });
  // A run of Alice's that ended is counted no more; her queued run has taken its slot.
  await t.services.runs.cancel(running, { owner: "alice" });
  await t.services.runs.wait(running, { owner: "alice" });
  await new Promise((resolve) => setTimeout(resolve, STATUS_COUNTS_TTL_MS));
  assert.deepEqual(await active(TOKENS.alice), { active: { running: 1 } });
  assert.deepEqual(await active(TOKENS.bob), { active: { queued: 1 } });
});

Deno.test("an active run whose ledger entry predates owners in active entries is still counted for its owner alone", async () => {
  await using t = await testManager({ fakeLatencyMs: 60_000 });
  const alice: Caller = { owner: "alice", remote: true };
  const run = await t.manager.start({ script: NEVER_ENDING }, alice);
  const counts = async (caller: Caller) => await t.manager.activeCounts(caller);
  assert.deepEqual(await counts(alice), { queued: 0, running: 1 });
  // The entry as an earlier version wrote it: the host, no owner.
  const kv = await Deno.openKv(`${t.home}/svc.kv`);
  try {
    const key = ["active", run.run_id];
    const entry = await kv.get<Uint8Array>(key);
    const { host_id, pid } = JSON.parse(new TextDecoder().decode(entry.value!));
    await kv.set(key, new TextEncoder().encode(JSON.stringify({ host_id, pid })));
  } finally {
    kv.close();
  }
  assert.deepEqual(await counts(alice), { queued: 0, running: 1 });
  assert.deepEqual(await counts({ owner: "bob", remote: true }), { queued: 0, running: 0 });
  assert.deepEqual(await counts({ owner: "root", admin: true }), { queued: 0, running: 1 });
  await t.manager.cancel(run.run_id, alice);
  await t.manager.wait(run.run_id, alice);
  assert.deepEqual(await counts(alice), { queued: 0, running: 0 });
});

/**
 * The race that hung concurrent hostile runs when a started run's record left the admission's
 * turn: a queued run waited in admission from its decision on, but its record (script and input
 * files, then a commit) came later; a slot freed in between was handed to it, the ledger had no
 * queued run to claim, and the failed claim forgot it. Recorded a moment later, it sat in the
 * queue with no one waiting to start it, its caller's wait never ended. Recording other runs
 * beside it only widened that window. Here the queued run's script write is held until the
 * slot has freed and been handed on, so the window is hit every time.
 */
Deno.test("a slot that frees while a queued run is still being recorded is not lost on it: the run starts once recorded", async () => {
  await using t = await testManager({
    fakeLatencyMs: 60_000,
    admission: { hostLiveGuests: 1 },
  });
  const blocker = await t.manager.start({ script: NEVER_ENDING }, LOCAL);
  let reached!: () => void;
  const atGate = new Promise<void>((resolve) => reached = resolve);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => open = resolve);
  setPlatform({
    ...denoPlatform,
    async writeTextFile(path, text, options) {
      if (text.includes("queued-behind")) {
        reached();
        await gate;
      }
      return await denoPlatform.writeTextFile(path, text, options);
    },
  });
  try {
    const queuing = t.manager.start({ script: "return 'queued-behind';" }, LOCAL);
    await atGate;
    await t.manager.cancel(blocker.run_id, LOCAL);
    assert.equal((await t.manager.wait(blocker.run_id, LOCAL)).state, "cancelled");
    // The freed slot has been handed on (or kept free) before the record goes on.
    await eventually(
      async () => (await t.manager.admission(LOCAL)).host_live.used === 0 || undefined,
      {
        what: "the blocker's slot to free",
      },
    );
    open();
    const queued = await queuing;
    assert.equal(queued.state, "queued");
    const end = await t.manager.wait(queued.run_id, LOCAL, { signal: AbortSignal.timeout(20_000) })
      .catch((error) => assert.fail(`the queued run never ended: ${error}`));
    assert.deepEqual([end.state, end.result], ["succeeded", "queued-behind"]);
  } finally {
    open();
    setPlatform(denoPlatform);
  }
});

/**
 * A host with one live slot on `home` runs a never-ending run, queues `script` behind it and
 * closes: the queued run is left in the ledger. Returns its id.
 */
async function leaveQueuedRun(home: string, script: string): Promise<string> {
  await using t = await testManager({
    home,
    fakeLatencyMs: 60_000,
    admission: { hostLiveGuests: 1 },
  });
  await t.manager.start({ script: NEVER_ENDING }, LOCAL);
  const queued = await t.manager.start({ script }, LOCAL);
  assert.equal(queued.queue_position, 1);
  return queued.run_id;
}

Deno.test("a queued run is kept in the ledger when its host closes, and a later host runs it", async () => {
  await using home = await tempDir("svc-admission-restart-");
  const queuedId = await leaveQueuedRun(home.path, "return 'kept';");
  await using later = await testManager({ home: home.path });
  assert.equal((await later.manager.get(queuedId, LOCAL))?.state, "queued");
  assert.ok(await later.manager.work(queuedId));
  const end = await later.manager.wait(queuedId, LOCAL);
  assert.deepEqual([end.state, end.result], ["succeeded", "kept"]);
});

Deno.test("a server opened again takes up the runs left queued when no daemon is alive; a one-shot command does not", async () => {
  await using home = await tempDir("svc-admission-adopt-");
  const queuedId = await leaveQueuedRun(home.path, "return 'taken up';");
  const open = (adoptQueuedRuns: boolean) =>
    openServices({
      home: home.path,
      config: defaultConfig(),
      ledgerUrl: null,
      dispatcher: createDispatcher({ config: defaultConfig() }),
      adoptQueuedRuns,
    });
  {
    await using command = await open(false);
    assert.equal((await command.runs.get(queuedId, LOCAL))?.state, "queued");
  }
  await using server = await open(true);
  const end = await eventually(async () => {
    const status = await server.runs.get(queuedId, LOCAL);
    return status?.state === "succeeded" ? status : undefined;
  }, { what: "the server to run the queued run" });
  assert.equal(end.result, "taken up");
});

Deno.test("command-line callers pass the per-owner caps but count toward the host's live cap", async () => {
  await using t = await testManager({
    fakeLatencyMs: 60_000,
    admission: { hostLiveGuests: 3, ownerLiveRuns: 1, ownerQueuedRuns: 0 },
  });
  const runs = [];
  for (let i = 0; i < 3; i++) runs.push(await t.manager.start({ script: NEVER_ENDING }, LOCAL));
  assert.deepEqual(runs.map((r) => r.queue_position), [undefined, undefined, undefined]);
  const fourth = await t.manager.start({ script: NEVER_ENDING }, LOCAL);
  assert.equal(fourth.queue_position, 1, "the host is full: the fourth waits");
  await assert.rejects(
    t.manager.start({ script: NEVER_ENDING }, { owner: "alice", remote: true }),
    (error: unknown) =>
      error instanceof SvcError && error.code === "rate_limited" && error.retryAfterS === 30,
  );
});

Deno.test("a remote caller's timeout above the operator's maximum is refused, and one without a timeout gets at most the maximum", async () => {
  await using t = await dashboard(withCaps({ max_remote_timeout_s: 60 }));
  const refused = await t.call("/api/workflow/run", TOKENS.alice, {
    script: "return 1;",
    timeout: 61,
  });
  assert.equal(refused.status, 400);
  const body = await refused.json();
  assert.equal(body.error.code, "invalid_argument");
  assert.match(
    body.error.message,
    /^Cannot start the run: a timeout of 61 s is more than the 60 s/,
  );
  const started = await (await t.call("/api/workflow/run", TOKENS.alice, { script: "return 1;" }))
    .json();
  assert.ok(started.run_id, JSON.stringify(started));
  const status = await t.services.runs.wait(started.run_id, { owner: "alice" });
  assert.equal(status.timeout, 60);
  const local = await t.services.runs.start({ script: "return 1;", timeout: 7200 }, LOCAL);
  assert.equal(local.timeout, 7200, "the operator's own runs are not bounded");
});

Deno.test("a remote owner's event streams beyond its cap get 429 with Retry-After, and a closed one frees its slot", async () => {
  await using t = await dashboard(withCaps({ owner_event_streams: 2, retry_after_s: 5 }));
  const first = await t.call("/api/events", TOKENS.alice);
  const second = await t.call("/api/events", TOKENS.alice);
  assert.deepEqual([first.status, second.status], [200, 200]);
  const third = await t.call("/api/events", TOKENS.alice);
  assert.equal(third.status, 429);
  assert.equal(third.headers.get("retry-after"), "5");
  assert.equal((await third.json()).error.code, "rate_limited");
  const bob = await t.call("/api/events", TOKENS.bob);
  assert.equal(bob.status, 200, "another owner's streams are counted apart");
  const report = await (await t.call("/api/status", TOKENS.alice)).json();
  assert.deepEqual(report.admission.owner_streams, { used: 2, cap: 2 });
  await first.body!.cancel();
  const again = await t.call("/api/events", TOKENS.alice);
  assert.equal(again.status, 200);
  for (const response of [second, bob, again]) await response.body!.cancel();
});

Deno.test("a remote owner's dispatches beyond its live task cap get 429; the operator's do not", async () => {
  await using t = await dashboard(withCaps({ owner_live_tasks: 1 }));
  const first = await t.call("/api/dispatch", TOKENS.alice, { prompt: "wait" });
  assert.equal(first.status, 202, await first.clone().text());
  const second = await t.call("/api/dispatch", TOKENS.alice, { prompt: "wait" });
  assert.equal(second.status, 429);
  assert.equal((await second.json()).error.code, "rate_limited");
  await t.services.tasks.start({ prompt: "wait" }, { owner: "alice" });
  const report = await (await t.call("/api/status", TOKENS.alice)).json();
  assert.deepEqual(report.admission.owner_tasks, { used: 2, cap: 1 });
});

Deno.test("over /mcp a run beyond a remote owner's caps is a tool error carrying rate_limited", async () => {
  const config = withCaps({ owner_live_runs: 1, owner_queued_runs: 0 });
  await using d = await startDashboard({ port: true, fakeLatencyMs: 60_000, config });
  await using mcp = await connectHttp(d.url, { token: TOKENS.alice });
  const first = await mcp.call("svc_workflow", { script: NEVER_ENDING });
  assert.notEqual(first.isError, true, JSON.stringify(first.content));
  const second = await mcp.call("svc_workflow", { script: NEVER_ENDING });
  assert.equal(second.isError, true);
  assert.match(
    errorText(second),
    /^Cannot start the run: owner 'alice' has 1 live runs and 0 queued, the most allowed .*\(code: rate_limited\)$/,
  );
});

Deno.test("runs started at once under the live cap are recorded side by side, not one after another in the admission's turn", async () => {
  await using home = await tempDir();
  await using t = await testManager({ home: home.path, fakeLatencyMs: 0 });
  let writing = 0;
  let most = 0;
  // The real files, each script's write held a little so that records that may overlap do.
  setPlatform({
    ...denoPlatform,
    async writeTextFile(path, text, options) {
      if (!path.endsWith("/.script.js.tmp")) {
        return await denoPlatform.writeTextFile(path, text, options);
      }
      most = Math.max(most, ++writing);
      try {
        await new Promise((resolve) => setTimeout(resolve, 30));
        return await denoPlatform.writeTextFile(path, text, options);
      } finally {
        writing--;
      }
    },
  });
  let started;
  try {
    started = await Promise.all(
      Array.from({ length: 6 }, (_, i) => t.manager.start({ script: `return ${i};` }, LOCAL)),
    );
  } finally {
    setPlatform(denoPlatform);
  }
  const ends = await Promise.all(started.map((run) => t.manager.wait(run.run_id, LOCAL)));
  assert.deepEqual(
    ends.map((end) => [end.state, end.result]),
    [0, 1, 2, 3, 4, 5].map((i) => [
      "succeeded",
      i,
    ]),
  );
  assert.ok(most > 1, `records written at once: ${most}`);
});

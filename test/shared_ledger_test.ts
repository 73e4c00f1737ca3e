/**
 * Many hosts, one ledger: `svc dashboard` and `svc daemon` processes, each with its own
 * SVC_HOME, sharing one real Postgres database through SVC_LEDGER_URL.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import type { RunStatus, TaskStatus } from "../src/ledger/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { fixture, LOCAL, tempDir } from "./helpers.ts";
import { eventually, startDaemonProcess } from "./daemon_helpers.ts";
import { type HostProcess, startHostProcess } from "./host_process.ts";
import { tokenClient } from "./token_client.ts";
import { startPostgres } from "./pg_server.ts";

const TOKEN = "shared-ledger-token-0123456789";
const TWO_CALLS = await Deno.readTextFile(fixture("daemon/two_calls.js"));

/** A home for one host: its token, its configuration. */
async function home(prefix: string, config: unknown = {}) {
  const dir = await tempDir(prefix);
  await Deno.writeTextFile(`${dir.path}/dashboard.token`, TOKEN, { mode: 0o600 });
  await Deno.writeTextFile(`${dir.path}/config.json`, JSON.stringify(config));
  return dir;
}

function api(host: HostProcess) {
  return tokenClient(host.url, TOKEN);
}

/** Reads SSE `event:` names and data until the stream ends. */
async function sseEvents(response: Response): Promise<Array<{ event: string; data: string }>> {
  const out: Array<{ event: string; data: string }> = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  while (true) {
    const { done, value } = await reader.read();
    if (done) return out;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event && data) out.push({ event, data });
    }
  }
}

async function sharedServices(url: string, dir: string): Promise<Services> {
  return await openServices({
    home: dir,
    ledgerUrl: url,
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  });
}

Deno.test("a run started through host A's dashboard is listed, watched over SSE and cancelled from host B's", async () => {
  await using pg = await startPostgres();
  const url = await pg.database();
  await using homeA = await home("svc-shared-a-");
  await using homeB = await home("svc-shared-b-");
  const env = { SVC_LEDGER_URL: url, SVC_FAKE_LATENCY_MS: "100" };
  await using a = await startHostProcess(homeA.path, "dashboard", { env });
  await using b = await startHostProcess(homeB.path, "dashboard", { env });
  const script = `for (let i = 0; i < 100; i++) await agent("step " + i, { label: "s" + i });`;
  const started = await api(a).json("/api/workflow/run", { script, fake_dispatch: true });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = String(started.body.run_id);

  const listed = await api(b).json("/api/workflow");
  const runs = listed.body.runs as Array<{ run_id: string }>;
  assert.ok(runs.some((run) => run.run_id === runId), JSON.stringify(listed.body));
  const status = await api(b).json("/api/status");
  const hosts = status.body.hosts as Array<{ host_id: string; alive: boolean }>;
  assert.equal((status.body.ledger as { backend: string }).backend, "postgres");
  // Host A holds a run, so its heartbeat is in the shared ledger (B lists itself alive anyway).
  const aId = ((await api(a).json("/api/status")).body.host as { id: string }).id;
  assert.ok(hosts.some((host) => host.host_id === aId && host.alive), JSON.stringify(hosts));

  const watching = api(b).request(`/api/workflow/${runId}/events`).then(sseEvents);
  await eventually(async () => {
    const journal = await api(b).json(`/api/workflow/${runId}/journal`);
    return ((journal.body.entries as unknown[] | undefined)?.length ?? 0) >= 3 ? true : undefined;
  }, { what: "three calls journaled, seen from host B" });
  const cancel = await api(b).json(`/api/workflow/${runId}/cancel`, {});
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
  const events = await watching;
  const states = events.filter((e) => e.event === "state").map((e) => JSON.parse(e.data).state);
  assert.deepEqual(states.at(-1), "cancelled", JSON.stringify(states));
  assert.ok(events.filter((e) => e.event === "call").length >= 3);
  const end = await api(a).json(`/api/workflow/${runId}`);
  assert.equal(end.body.state, "cancelled");
  assert.equal(end.body.host_id ?? null, null);
});

Deno.test("two daemons drain one queue of 100 items, one killed with SIGKILL halfway: none runs twice, none is lost", async () => {
  await using pg = await startPostgres();
  const url = await pg.database();
  const config = { daemon: { concurrency: 4 } };
  await using homeA = await home("svc-drain-a-", config);
  await using homeB = await home("svc-drain-b-", config);
  await using homeQ = await home("svc-drain-q-");
  const env = { SVC_LEDGER_URL: url, SVC_FAKE_LATENCY_MS: "60" };
  await using queuer = await sharedServices(url, homeQ.path);
  const ids = { runs: [] as string[], tasks: [] as string[] };
  for (let i = 0; i < 50; i++) {
    const run = await queuer.runs.enqueue(
      { script: TWO_CALLS, args: { i }, fake_dispatch: true },
      LOCAL,
    );
    ids.runs.push(run.run_id);
    ids.tasks.push(
      (await queuer.tasks.enqueue({ prompt: `task ${i}`, fake_dispatch: true }, LOCAL)).task_id,
    );
  }
  await using steady = await startDaemonProcess(homeA.path, { env });
  const victim = await startDaemonProcess(homeB.path, { env });
  const ended = async () => {
    const runs = await Promise.all(ids.runs.map((id) => queuer.runs.get(id, LOCAL)));
    const tasks = await Promise.all(ids.tasks.map((id) => queuer.tasks.get(id, LOCAL)));
    return { runs: runs as RunStatus[], tasks: tasks as TaskStatus[] };
  };
  const open = (all: Array<RunStatus | TaskStatus>) =>
    all.filter((item) => item.state === "queued" || item.state === "running").length;
  await eventually(async () => {
    const { runs, tasks } = await ended();
    return open([...runs, ...tasks]) <= 50 ? true : undefined;
  }, { timeoutMs: 60_000, what: "half the queue to end" });
  assert.equal(await victim.stop("SIGKILL"), 137);
  const done = await eventually(async () => {
    const all = await ended();
    return open([...all.runs, ...all.tasks]) === 0 ? all : undefined;
  }, { timeoutMs: 90_000, what: "the rest of the queue to end on the other daemon" });
  let interrupted = 0;
  for (const run of done.runs) {
    const states: string[] = [];
    for await (const item of queuer.runs.events(run.run_id, LOCAL, { follow: false })) {
      if (item.event.type === "state") states.push(item.event.state);
    }
    // Claimed once: at most one `running` (none when the kill fell between the claim and it).
    const running = states.filter((s) => s === "running").length;
    assert.ok(
      running === 1 || (running === 0 && run.state === "interrupted"),
      `${run.run_id}: ${states}`,
    );
    assert.ok(["succeeded", "interrupted"].includes(run.state), `${run.run_id}: ${run.state}`);
    if (run.state === "interrupted") interrupted++;
  }
  for (const task of done.tasks) {
    const states: string[] = [];
    for await (const item of queuer.tasks.events(task.task_id, LOCAL, { follow: false })) {
      if (!item.event.approval && !item.event.progress) states.push(item.event.state);
    }
    const running = states.filter((s) => s === "running").length;
    assert.ok(
      running === 1 || (running === 0 && task.state === "interrupted"),
      `${task.task_id}: ${states}`,
    );
    assert.ok(["succeeded", "interrupted"].includes(task.state), `${task.task_id}: ${task.state}`);
    if (task.state === "interrupted") interrupted++;
  }
  assert.deepEqual(await queuer.ledger.listQueue(), [], "nothing left in the queue");
  // Both daemons worked: the steady one claimed only part of the queue.
  const claimed = ((await steady.health()).worker as { claimed: number }).claimed;
  assert.ok(claimed > 0 && claimed < 100, `the steady daemon claimed ${claimed}`);
  // Interrupted runs resume to the uncrashed result, on any host.
  for (const run of done.runs.filter((r) => r.state === "interrupted")) {
    const resumed = await queuer.runs.resume(run.run_id, LOCAL, { fake_dispatch: true });
    const end = await queuer.runs.wait(resumed.run_id, LOCAL);
    assert.equal(end.state, "succeeded", JSON.stringify(end.error));
    assert.deepEqual(end.result, {
      args: { i: ids.runs.indexOf(run.run_id) },
      first: (end.result as { first: number }).first,
      second: (end.result as { second: number }).second,
    });
  }
  console.log(
    `drain: 100 items, ${interrupted} interrupted by the kill, ${claimed} claimed by the steady daemon`,
  );
  assert.ok(steady.pid > 0);
});

Deno.test("the scheduler fires once per slot with three daemons on one shared ledger", async () => {
  await using pg = await startPostgres();
  const url = await pg.database();
  const config = {
    automations: {
      tick: {
        cron: "* * * * * *",
        workflow: "echo-args",
        args: { from: "config" },
        fake_dispatch: true,
      },
    },
  };
  const homes = await Promise.all([0, 1, 2].map((i) => home(`svc-sched-${i}-`, config)));
  for (const dir of homes) {
    await Deno.mkdir(`${dir.path}/workflows`);
    await Deno.copyFile(fixture("daemon/echo_args.js"), `${dir.path}/workflows/echo-args.js`);
  }
  const env = { SVC_LEDGER_URL: url };
  const daemons = await Promise.all(homes.map((dir) => startDaemonProcess(dir.path, { env })));
  await using reader = await home("svc-sched-reader-");
  await using services = await sharedServices(url, reader.path);
  try {
    const health = await Promise.all(daemons.map((d) => d.health()));
    const modes = health.map((h) => (h.scheduler as { mode: string }).mode).sort();
    assert.equal(modes.filter((m) => m === "leader").length <= 1, true, modes.join());
    await eventually(async () => {
      const runs = await services.runs.list(LOCAL);
      return runs.length >= 5 ? runs : undefined;
    }, { timeoutMs: 30_000, what: "five slots to fire" });
  } finally {
    for (const daemon of daemons) await daemon.stop();
    for (const dir of homes) await dir[Symbol.asyncDispose]();
  }
  const runs = await services.runs.list(LOCAL);
  const slots = runs.map((run) => run.trigger?.kind === "automation" ? run.trigger.slot : "")
    .filter(Boolean).sort();
  assert.equal(slots.length, runs.length);
  assert.equal(new Set(slots).size, slots.length, `a slot fired twice: ${slots.join(", ")}`);
});

Deno.test("the database restarted mid-run: the run ends interrupted with a clear error, then resumes to the uncrashed result", async () => {
  await using pg = await startPostgres();
  const url = await pg.database();
  await using homeA = await home("svc-restart-");
  const env = { SVC_LEDGER_URL: url, SVC_FAKE_LATENCY_MS: "150" };
  await using host = await startHostProcess(homeA.path, "dashboard", { env });
  const script = `
    const out = [];
    for (let i = 0; i < 30; i++) out.push(await agent("step " + i, { label: "s" + i }));
    return out.length;
  `;
  const started = await api(host).json("/api/workflow/run", { script, fake_dispatch: true });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = String(started.body.run_id);
  await eventually(async () => {
    const journal = await api(host).json(`/api/workflow/${runId}/journal`);
    return ((journal.body.entries as unknown[] | undefined)?.length ?? 0) >= 2 ? true : undefined;
  }, { what: "two calls journaled" });
  await pg.stop();
  // While the database is down, a read of the ledger is answered clearly, without a stack or
  // the driver's words.
  const down = await api(host).json("/api/workflow");
  assert.equal(down.status, 503, JSON.stringify(down.body));
  assert.match(JSON.stringify(down.body), /the database cannot be reached/);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await pg.start();
  const end = await eventually(async () => {
    const status = await api(host).json(`/api/workflow/${runId}`).catch(() => undefined);
    const state = status?.body.state;
    return state !== undefined && state !== "running" && state !== "queued"
      ? status!.body
      : undefined;
  }, { timeoutMs: 60_000, what: "the run to end" });
  if (end.state === "interrupted") {
    assert.match(
      JSON.stringify(end.error),
      /Cannot write the ledger: the database cannot be reached/,
    );
    // Right after the restart a request may still meet a connection the server closed: that is
    // answered 503 `unavailable`, which a client retries.
    const resumed = await eventually(async () => {
      const answer = await api(host).json(`/api/workflow/${runId}/resume`, {});
      return answer.status === 503 ? undefined : answer;
    }, { timeoutMs: 30_000, what: "the resume to be answered" });
    assert.equal(resumed.status, 202, JSON.stringify(resumed.body));
    const again = await eventually(async () => {
      const status = await api(host).json(`/api/workflow/${resumed.body.run_id}`);
      return status.body.state === "succeeded" ? status.body : undefined;
    }, { timeoutMs: 60_000, what: "the resumed run to succeed" });
    assert.equal(again.result, 30);
  } else {
    // The database came back before the run needed it: the run went on.
    assert.equal(end.state, "succeeded", JSON.stringify(end));
    assert.equal(end.result, 30);
  }
});

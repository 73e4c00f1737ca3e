/**
 * An owner's live-run cap (`admission.owner_live_runs`) holds across every process sharing a
 * ledger, not per process: a dashboard and an A2A server on one KV file, two dashboards on one
 * KV file, two dashboards of two homes on one Postgres database. The ledger holds the count: a
 * run's record takes its owner's slot, its end gives it back, and a host that died leaves its
 * runs' slots to the host that finds its runs interrupted. Over the cap a run queues, and over
 * the owner's queued cap too it is refused with the same answers as ever: HTTP 429
 * `rate_limited`, A2A JSON-RPC -32059.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { callerOf, openServices, type Services } from "../src/services/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { newId } from "../src/ledger/mod.ts";
import { newTaskStatus } from "../src/tasks/mod.ts";
import { eventually } from "./daemon_helpers.ts";
import { tempDir } from "./helpers.ts";
import { type HostProcess, startHostProcess } from "./host_process.ts";
import { type PgServer, postgresBin, startPostgres } from "./pg_server.ts";
import { TaskState } from "@a2a-js/sdk";
import { asTask, sdkClient, sendRequest, userMessage } from "./a2a_helpers.ts";

const TOKENS = { alice: "alice-token-0123456789abcdef", bob: "bob-token-0123456789abcdef00" };

/** A run that stays live until cancelled: its one call waits on the slow fake provider. */
const HOLD = `await agent("hold");\nreturn "held";`;

/** The environment of every host of a test: the owners' tokens, a fake provider that waits. */
function hostEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    SVC_DASHBOARD_OWNER_TOKENS: `alice:${TOKENS.alice},bob:${TOKENS.bob}`,
    SVC_FAKE_LATENCY_MS: "600000",
    ...extra,
  };
}

/** Writes the admission caps and the `hold` workflow (for A2A) into `home`. */
async function prepareHome(home: string, admission: Record<string, number>): Promise<void> {
  await Deno.writeTextFile(`${home}/config.json`, JSON.stringify({ admission }));
  await Deno.mkdir(`${home}/workflows`, { recursive: true });
  await Deno.writeTextFile(`${home}/workflows/hold.js`, HOLD);
}

/** A JSON request of `token` to `host`; the answer's status and body. */
async function api(
  host: HostProcess,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> & { error?: { code: string } } }> {
  const response = await fetch(`${host.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

/** Starts a run of `HOLD` for `token` on `host`. */
function startRun(host: HostProcess, token: string) {
  return api(host, "/api/workflow/run", token, { script: HOLD, fake_dispatch: true });
}

/** Waits until run `runId`, read through `host`, is in `state`. */
async function stateOf(host: HostProcess, runId: string, state: string): Promise<void> {
  await eventually(async () => {
    const { body } = await api(host, `/api/workflow/${runId}`, TOKENS.alice);
    return body.state === state ? true : undefined;
  }, { what: `run ${runId} to be ${state}`, timeoutMs: 60_000 });
}

/** Waits until `host`'s status counts `used` live runs of alice, every host's. */
async function aliceLive(host: HostProcess, used: number): Promise<void> {
  await eventually(async () => {
    const { body } = await api(host, "/api/status", TOKENS.alice);
    const live = (body.admission as { owner_live: { used: number } }).owner_live.used;
    return live === used ? true : undefined;
  }, { what: `alice to have ${used} live runs`, timeoutMs: 60_000 });
}

/** What names the `hold` workflow in an A2A message, run on the fake provider. */
const HOLD_METADATA = { "svc.workflow": "hold", "svc.fake_dispatch": true };

/** An A2A send of `token`'s owner naming the `hold` workflow, through the SDK: its task. */
async function sendHold(a2a: HostProcess, token: string) {
  const client = await sdkClient(a2a.url, token);
  const task = asTask(
    await client.sendMessage(
      sendRequest(userMessage("hold", { metadata: HOLD_METADATA }), { returnImmediately: true }),
    ),
  );
  assert.notEqual(task.status?.state, TaskState.TASK_STATE_REJECTED, JSON.stringify(task.status));
  return task;
}

/** A raw A2A `SendMessage` naming the `hold` workflow; the JSON-RPC answer. */
async function sendHoldRaw(a2a: HostProcess, token: string) {
  const response = await fetch(`${a2a.url}/a2a`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "A2A-Version": "1.0",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: {
        message: {
          messageId: crypto.randomUUID(),
          role: "ROLE_USER",
          parts: [{ text: "hold" }],
          metadata: HOLD_METADATA,
        },
        configuration: { returnImmediately: true },
      },
    }),
  });
  return await response.json() as {
    result?: { task?: { status?: { state?: string } } };
    error?: { code: number; message: string; data?: unknown };
  };
}

Deno.test("a dashboard and an A2A server on one KV file hold one owner's live cap together: the third run is refused by either, and a run that ends frees its slot", async () => {
  await using home = await tempDir("svc-caps-kv-");
  await prepareHome(home.path, { owner_live_runs: 2, owner_queued_runs: 0, retry_after_s: 7 });
  await using dashboard = await startHostProcess(home.path, "dashboard", { env: hostEnv() });
  await using a2a = await startHostProcess(home.path, "a2a-server", { env: hostEnv() });

  const first = await startRun(dashboard, TOKENS.alice);
  const second = await startRun(dashboard, TOKENS.alice);
  assert.deepEqual([first.status, second.status], [202, 202]);
  assert.deepEqual([first.body.queue_position, second.body.queue_position], [undefined, undefined]);
  await aliceLive(dashboard, 2);

  // The A2A server runs none of alice's, yet her cap is full: its send is the JSON-RPC error.
  const refused = await sendHoldRaw(a2a, TOKENS.alice);
  assert.equal(refused.error?.code, -32059, JSON.stringify(refused));
  assert.deepEqual(refused.error?.data, { retry_after_s: 7 });
  assert.match(refused.error!.message, /owner 'alice' has 2 live runs and 0 queued/);
  // Bob's cap is his own.
  await sendHold(a2a, TOKENS.bob);

  // One of alice's runs ends: its slot is free on every host, and the A2A server takes it.
  const cancelled = await api(
    dashboard,
    `/api/workflow/${first.body.run_id}/cancel`,
    TOKENS.alice,
    {},
  );
  assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
  await stateOf(dashboard, first.body.run_id as string, "cancelled");
  await aliceLive(dashboard, 1);
  await sendHold(a2a, TOKENS.alice);
  await aliceLive(dashboard, 2);

  // Now the A2A server's run counts on the dashboard: the dashboard's next one is refused.
  const third = await startRun(dashboard, TOKENS.alice);
  assert.equal(third.status, 429, JSON.stringify(third.body));
  assert.equal(third.body.error?.code, "rate_limited");
});

Deno.test("two dashboards on one KV file: a run beyond the owner's cap queues on the other, starts when a slot frees, and a crashed host's slots free once the next host finds its runs interrupted", async () => {
  await using home = await tempDir("svc-caps-queue-");
  await prepareHome(home.path, { owner_live_runs: 2, owner_queued_runs: 5 });
  const crashing = await startHostProcess(home.path, "dashboard", { env: hostEnv() });
  try {
    await using other = await startHostProcess(home.path, "dashboard", { env: hostEnv() });
    const runs = [await startRun(crashing, TOKENS.alice), await startRun(crashing, TOKENS.alice)];
    assert.deepEqual(runs.map((r) => r.body.queue_position), [undefined, undefined]);
    await aliceLive(crashing, 2);

    const third = await startRun(other, TOKENS.alice);
    assert.equal(third.status, 202);
    assert.equal(third.body.state, "queued");
    assert.equal(third.body.queue_position, 1, "alice's two live runs are on the other host");
    await api(crashing, `/api/workflow/${runs[0]!.body.run_id}/cancel`, TOKENS.alice, {});
    await stateOf(other, third.body.run_id as string, "running");

    const fourth = await startRun(other, TOKENS.alice);
    assert.equal(fourth.body.state, "queued");
    // The host of alice's other live run dies without a word: its slot is not freed by it.
    await crashing.stop("SIGKILL");
    assert.equal(
      (await api(other, `/api/workflow/${fourth.body.run_id}`, TOKENS.alice)).body.state,
      "queued",
    );
    // The next host to open the ledger finds the run interrupted, and its slot goes with it.
    await using next = await startHostProcess(home.path, "dashboard", { env: hostEnv() });
    await stateOf(next, runs[1]!.body.run_id as string, "interrupted");
    await stateOf(other, fourth.body.run_id as string, "running");
    await aliceLive(next, 2);
  } finally {
    await crashing.stop("SIGKILL");
  }
});

/** Starts a dispatch task of `token`'s owner on `host` (fake provider, so it waits). */
function dispatch(host: HostProcess, token: string) {
  return api(host, "/api/dispatch", token, { prompt: "hold", fake_dispatch: true });
}

/** Waits until task `taskId`, read through `host`, is in `state`. */
async function taskState(host: HostProcess, taskId: string, state: string): Promise<void> {
  await eventually(async () => {
    const { body } = await api(host, `/api/dispatch/${taskId}`, TOKENS.alice);
    return body.state === state ? true : undefined;
  }, { what: `task ${taskId} to be ${state}`, timeoutMs: 60_000 });
}

/** A raw A2A `SendMessage` that is a dispatch (it names no workflow); the JSON-RPC answer. */
async function sendDispatchRaw(a2a: HostProcess, token: string) {
  const response = await fetch(`${a2a.url}/a2a`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "A2A-Version": "1.0",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 2,
      method: "SendMessage",
      params: {
        message: {
          messageId: crypto.randomUUID(),
          role: "ROLE_USER",
          parts: [{ text: "hold" }],
          metadata: { "svc.fake_dispatch": true },
        },
        configuration: { returnImmediately: true },
      },
    }),
  });
  return await response.json() as { error?: { code: number; message: string; data?: unknown } };
}

Deno.test("a dashboard and an A2A server on one KV file hold one owner's live task cap together, and a crashed host's task frees its slot once found interrupted", async () => {
  await using home = await tempDir("svc-caps-tasks-");
  await prepareHome(home.path, { owner_live_tasks: 1, retry_after_s: 7 });
  const crashing = await startHostProcess(home.path, "dashboard", { env: hostEnv() });
  try {
    await using a2a = await startHostProcess(home.path, "a2a-server", { env: hostEnv() });
    const first = await dispatch(crashing, TOKENS.alice);
    assert.equal(first.status, 202, JSON.stringify(first.body));
    await taskState(crashing, first.body.task_id as string, "running");

    const refused = await sendDispatchRaw(a2a, TOKENS.alice);
    assert.equal(refused.error?.code, -32059, JSON.stringify(refused));
    assert.deepEqual(refused.error?.data, { retry_after_s: 7 });
    assert.match(refused.error!.message, /owner 'alice' has 1 live tasks, the most allowed/);
    assert.equal((await sendDispatchRaw(a2a, TOKENS.bob)).error, undefined, "bob's cap is his own");
    assert.equal((await dispatch(crashing, TOKENS.alice)).status, 429);

    // Its host dies with the task running: the next host to open the ledger frees its slot.
    await crashing.stop("SIGKILL");
    await using next = await startHostProcess(home.path, "dashboard", { env: hostEnv() });
    await taskState(next, first.body.task_id as string, "interrupted");
    const again = await dispatch(next, TOKENS.alice);
    assert.equal(again.status, 202, JSON.stringify(again.body));
    await taskState(next, again.body.task_id as string, "running");
    // And a task that ends frees its slot too.
    await api(next, `/api/dispatch/${again.body.task_id}/cancel`, TOKENS.alice, {});
    await taskState(next, again.body.task_id as string, "cancelled");
    assert.equal((await sendDispatchRaw(a2a, TOKENS.alice)).error, undefined);
  } finally {
    await crashing.stop("SIGKILL");
  }
});

Deno.test("a task slot of a host that died before its task began is freed by the next recovery, and a task it left in the queue keeps its slot", async () => {
  await using home = await tempDir("svc-caps-task-slots-");
  await using services = await openServices({
    home: home.path,
    dispatcher: createDispatcher({}),
  });
  const { ledger } = services;
  // A host with no record is a dead one; its pid names no process here.
  const dead = { id: newId("host"), pid: 2 ** 22 + 1 };
  const task = (prompt: string) =>
    newTaskStatus({
      owner: "alice",
      prompt,
      options: {},
      label: null,
      timeout: 60,
      fake_dispatch: true,
      schema_attempts: 1,
    });
  const orphan = task("never began");
  const waiting = task("waits for a worker");
  assert.ok(await ledger.createTask(orphan, { host: dead }));
  assert.ok(await ledger.createTask(waiting, { host: dead, queue: true }));
  assert.equal(await ledger.countOwnerTasks("alice"), 2);
  await services.tasks.recover();
  assert.equal(await ledger.countOwnerTasks("alice"), 1, "the queued task keeps its slot");
  const claimed = await services.tasks.claim(waiting.task_id);
  assert.ok(claimed);
  assert.equal((await claimed.done).state, "succeeded");
  assert.equal(await ledger.countOwnerTasks("alice"), 0, "its end gave the slot back");
});

let server: PgServer | undefined;

Deno.test({
  name:
    "two dashboards of two homes on one Postgres ledger hold one owner's live caps (runs, tasks) together",
  ignore: postgresBin() === undefined,
  async fn() {
    server ??= await startPostgres();
    const url = await server.database();
    await using homeA = await tempDir("svc-caps-pg-a-");
    await using homeB = await tempDir("svc-caps-pg-b-");
    const caps = { owner_live_runs: 2, owner_queued_runs: 0, owner_live_tasks: 1 };
    await prepareHome(homeA.path, caps);
    await prepareHome(homeB.path, caps);
    const env = hostEnv({ SVC_LEDGER_URL: url });
    await using a = await startHostProcess(homeA.path, "dashboard", { env });
    await using b = await startHostProcess(homeB.path, "dashboard", { env });
    const runs = [await startRun(a, TOKENS.alice), await startRun(a, TOKENS.alice)];
    assert.deepEqual(runs.map((r) => r.status), [202, 202]);
    await aliceLive(a, 2);
    const refused = await startRun(b, TOKENS.alice);
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.equal(refused.body.error?.code, "rate_limited");
    assert.equal((await startRun(b, TOKENS.bob)).status, 202, "bob's cap is his own");

    await api(a, `/api/workflow/${runs[0]!.body.run_id}/cancel`, TOKENS.alice, {});
    await stateOf(b, runs[0]!.body.run_id as string, "cancelled");
    await aliceLive(b, 1);
    const taken = await startRun(b, TOKENS.alice);
    assert.equal(taken.status, 202, JSON.stringify(taken.body));
    assert.equal(taken.body.queue_position, undefined);
    assert.equal((await startRun(a, TOKENS.alice)).status, 429);

    // Her dispatch tasks too: one live on a, and b refuses the next.
    const task = await dispatch(a, TOKENS.alice);
    assert.equal(task.status, 202, JSON.stringify(task.body));
    const second = await dispatch(b, TOKENS.alice);
    assert.equal(second.status, 429, JSON.stringify(second.body));
    assert.equal(second.body.error?.code, "rate_limited");
  },
});

/** Two hosts on one ledger in this process: two handles on one KV file, or one database. */
async function twoHosts(
  url: string | null,
  homes: [string, string],
  caps: { ownerQueuedRuns?: number } = {},
): Promise<[Services, Services]> {
  const open = (home: string) =>
    openServices({
      home,
      ledgerUrl: url,
      dispatcher: createDispatcher({ fakeLatencyMs: 600_000 }),
      runs: { admission: { ownerLiveRuns: 3, ownerQueuedRuns: caps.ownerQueuedRuns ?? 0 } },
    });
  return [await open(homes[0]), await open(homes[1])];
}

/** Starts `n` runs of alice at once, alternately on `a` and `b`; how many were admitted. */
async function race(a: Services, b: Services, n: number): Promise<number> {
  const alice = callerOf("alice", { remote: true });
  const outcomes = await Promise.allSettled(
    Array.from(
      { length: n },
      (_, i) => (i % 2 ? b : a).runs.start({ script: HOLD, fake_dispatch: true }, alice),
    ),
  );
  for (const outcome of outcomes) {
    if (outcome.status === "rejected") {
      assert.ok(
        outcome.reason instanceof SvcError && outcome.reason.code === "rate_limited",
        String(outcome.reason),
      );
    }
  }
  return outcomes.filter((o) => o.status === "fulfilled").length;
}

Deno.test("runs of one owner started at once on two hosts of one KV file never pass its live cap", async () => {
  await using home = await tempDir("svc-caps-race-");
  const [a, b] = await twoHosts(null, [home.path, home.path]);
  try {
    assert.equal(await race(a, b, 12), 3);
    assert.equal(await a.ledger.countOwnerLive("alice"), 3);
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test("a run queued for want of a slot another host holds is started by the host that queued it, once that slot frees", async () => {
  await using home = await tempDir("svc-caps-look-");
  // Neither host takes up the other's queued runs: only the queuing host can start it.
  const [a, b] = await twoHosts(null, [home.path, home.path], { ownerQueuedRuns: 5 });
  try {
    const alice = callerOf("alice", { remote: true });
    const held = [];
    for (let i = 0; i < 3; i++) {
      held.push(await a.runs.start({ script: HOLD, fake_dispatch: true }, alice));
    }
    assert.deepEqual(held.map((r) => r.queue_position), [undefined, undefined, undefined]);
    const queued = await b.runs.start({ script: HOLD, fake_dispatch: true }, alice);
    assert.equal(queued.queue_position, 1);
    await a.runs.cancel(held[0]!.run_id, alice);
    assert.equal((await a.runs.wait(held[0]!.run_id, alice)).state, "cancelled");
    await eventually(async () => {
      const status = await b.runs.get(queued.run_id, alice);
      return status?.state === "running" ? true : undefined;
    }, { what: "the queued run to start on the host that queued it", timeoutMs: 30_000 });
    assert.equal(await a.ledger.countOwnerLive("alice"), 3);
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test({
  name:
    "runs of one owner started at once on two hosts of one Postgres ledger never pass its live cap",
  ignore: postgresBin() === undefined,
  async fn() {
    server ??= await startPostgres();
    const url = await server.database();
    await using homeA = await tempDir("svc-caps-race-pg-a-");
    await using homeB = await tempDir("svc-caps-race-pg-b-");
    const [a, b] = await twoHosts(url, [homeA.path, homeB.path]);
    try {
      assert.equal(await race(a, b, 12), 3);
      assert.equal(await b.ledger.countOwnerLive("alice"), 3);
    } finally {
      await a.close();
      await b.close();
    }
  },
});

Deno.test("postgres: stop the owner caps suite's server", async () => {
  await server?.[Symbol.asyncDispose]();
  server = undefined;
});

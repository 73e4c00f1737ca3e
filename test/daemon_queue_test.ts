import assert from "node:assert/strict";
import { openServices, type Services } from "../src/services/mod.ts";
import type { RunStatus, TaskStatus } from "../src/ledger/mod.ts";
import { fixture, LOCAL, scriptedProvider, tempDir } from "./helpers.ts";
import { eventually, startDaemonProcess, startTestDaemon } from "./daemon_helpers.ts";
import { claudeProvider, createDispatcher } from "../src/dispatch/mod.ts";

const SCRIPT = await Deno.readTextFile(fixture("daemon/two_calls.js"));

async function writeConfig(home: string, concurrency: number): Promise<void> {
  await Deno.writeTextFile(`${home}/config.json`, JSON.stringify({ daemon: { concurrency } }));
}

/** Queues `n` runs and `n` tasks through services of this (non-daemon) process. */
async function queueWork(
  services: Services,
  n: number,
): Promise<{ runs: string[]; tasks: string[] }> {
  const runs: string[] = [];
  const tasks: string[] = [];
  for (let i = 0; i < n; i++) {
    const run = await services.runs.enqueue(
      { script: SCRIPT, args: { i }, fake_dispatch: true },
      LOCAL,
    );
    assert.equal(run.state, "queued");
    runs.push(run.run_id);
    const task = await services.tasks.enqueue({ prompt: `task ${i}`, fake_dispatch: true }, LOCAL);
    tasks.push(task.task_id);
  }
  return { runs, tasks };
}

/** The states a run's feed went through. */
async function runStates(services: Services, runId: string): Promise<string[]> {
  const states: string[] = [];
  for await (const item of services.runs.events(runId, LOCAL, { follow: false })) {
    if (item.event.type === "state") states.push(item.event.state);
  }
  return states;
}

async function taskStates(services: Services, taskId: string): Promise<string[]> {
  const states: string[] = [];
  for await (const item of services.tasks.events(taskId, LOCAL, { follow: false })) {
    if (!item.event.approval && !item.event.progress) states.push(item.event.state);
  }
  return states;
}

async function ended(services: Services, ids: { runs: string[]; tasks: string[] }) {
  return await eventually(async () => {
    const runs = await Promise.all(ids.runs.map((id) => services.runs.get(id, LOCAL)));
    const tasks = await Promise.all(ids.tasks.map((id) => services.tasks.get(id, LOCAL)));
    const all = [...runs, ...tasks];
    const open = all.filter((item) => !item || item.state === "queued" || item.state === "running");
    return open.length === 0
      ? { runs: runs as RunStatus[], tasks: tasks as TaskStatus[] }
      : undefined;
  }, { timeoutMs: 60_000, what: "every queued item to end" });
}

Deno.test("two daemons on one SVC_HOME share the queue: every run and task runs once, on one of them", async () => {
  await using home = await tempDir("svc-daemons-");
  await writeConfig(home.path, 2);
  const env = { SVC_FAKE_LATENCY_MS: "150" };
  await using a = await startDaemonProcess(home.path, { env });
  await using b = await startDaemonProcess(home.path, { env });
  await using services = await openServices({ home: home.path });
  const ids = await queueWork(services, 6);
  const { runs, tasks } = await ended(services, ids);
  for (const run of runs) {
    assert.equal(run.state, "succeeded", JSON.stringify(run.error));
    assert.deepEqual(await runStates(services, run.run_id), ["queued", "running", "succeeded"]);
    // Each call is journaled once: two calls, two entries.
    const journal = await services.runs.journal(run.run_id, LOCAL);
    assert.deepEqual(journal.map((entry) => entry.seq), [1, 2]);
  }
  for (const task of tasks) {
    assert.equal(task.state, "succeeded");
    assert.deepEqual(await taskStates(services, task.task_id), ["queued", "running", "succeeded"]);
  }
  // Both claimed work, and together exactly the 12 items queued.
  const claimed = await Promise.all([a, b].map(async (d) => {
    const health = await d.health();
    return (health.worker as { claimed: number }).claimed;
  }));
  assert.equal(claimed[0]! + claimed[1]!, 12, `claims: ${claimed.join(" + ")}`);
  assert.ok(claimed[0]! > 0 && claimed[1]! > 0, `both daemons worked: ${claimed.join(" + ")}`);
  assert.deepEqual(await services.ledger.listQueue(), []);
});

Deno.test("a daemon killed with SIGKILL leaves its items interrupted; another daemon finishes the queue and an interrupted run resumes", async () => {
  await using home = await tempDir("svc-daemon-kill-");
  await writeConfig(home.path, 2);
  await using services = await openServices({ home: home.path });
  const first = await startDaemonProcess(home.path, { env: { SVC_FAKE_LATENCY_MS: "60000" } });
  const ids = await queueWork(services, 2);
  // The first daemon takes two items (its concurrency) and is killed while they run.
  const taken = await eventually(async () => {
    const running = [
      ...(await Promise.all(ids.runs.map((id) => services.runs.get(id, LOCAL)))),
      ...(await Promise.all(ids.tasks.map((id) => services.tasks.get(id, LOCAL)))),
    ].filter((item): item is RunStatus | TaskStatus => item?.state === "running");
    return running.length === 2 ? running : undefined;
  }, { what: "the first daemon to run two items" });
  assert.equal(await first.stop("SIGKILL"), 137);
  await using second = await startDaemonProcess(home.path, { env: { SVC_FAKE_LATENCY_MS: "20" } });
  const { runs, tasks } = await ended(services, ids);
  const killed = new Set(taken.map((item) => "run_id" in item ? item.run_id : item.task_id));
  for (const item of [...runs, ...tasks]) {
    const id = "run_id" in item ? item.run_id : item.task_id;
    assert.equal(item.state, killed.has(id) ? "interrupted" : "succeeded", `${id}: ${item.state}`);
  }
  const states = [
    ...(await Promise.all(runs.map((run) => runStates(services, run.run_id)))),
    ...(await Promise.all(tasks.map((task) => taskStates(services, task.task_id)))),
  ];
  // Nothing ran twice: one `running` per item, and the killed ones were not re-queued.
  for (const list of states) assert.equal(list.filter((s) => s === "running").length, 1);
  assert.equal(((await second.health()).worker as { claimed: number }).claimed, 2);
  // An interrupted run resumes from its journal to the result an uncrashed run returns.
  const interrupted = runs.find((run) => run.state === "interrupted");
  if (interrupted) {
    const resumed = await services.runs.resume(interrupted.run_id, LOCAL, { fake_dispatch: true });
    const done = await services.runs.wait(resumed.run_id, LOCAL);
    const reference = runs.find((run) => run.state === "succeeded");
    assert.equal(done.state, "succeeded");
    assert.deepEqual(Object.keys(done.result as object), ["args", "first", "second"]);
    if (reference) {
      assert.equal(
        (done.result as { first: number }).first,
        (reference.result as { first: number }).first,
      );
    }
  }
});

Deno.test("one of two daemons killed with SIGKILL again and again: no queued item runs twice, none is lost", async () => {
  const seed = Number(Deno.env.get("SVC_CHAOS_SEED") ?? 20261123);
  console.log(`daemon chaos seed ${seed}`);
  let state = seed >>> 0;
  // A linear congruential generator is plenty for the kill moments.
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 4294967296;
  await using home = await tempDir("svc-daemon-chaos-");
  await writeConfig(home.path, 2);
  const env = { SVC_FAKE_LATENCY_MS: "150" };
  await using steady = await startDaemonProcess(home.path, { env });
  await using services = await openServices({ home: home.path });
  const ids = await queueWork(services, 16);
  const kills = 6;
  for (let i = 0; i < kills; i++) {
    const victim = await startDaemonProcess(home.path, { env });
    await new Promise((resolve) => setTimeout(resolve, 150 + Math.floor(next() * 500)));
    assert.equal(await victim.stop("SIGKILL"), 137);
  }
  const { runs, tasks } = await ended(services, ids);
  const items = [
    ...runs.map((run) => ({
      id: run.run_id,
      state: run.state,
      feed: runStates(services, run.run_id),
    })),
    ...tasks.map((task) => ({
      id: task.task_id,
      state: task.state,
      feed: taskStates(services, task.task_id),
    })),
  ];
  let interrupted = 0;
  for (const item of items) {
    const states = await item.feed;
    // Claimed once: one `running`, never a second claim after a kill.
    assert.equal(states.filter((s) => s === "running").length, 1, `${item.id}: ${states}`);
    assert.ok(
      item.state === "succeeded" || item.state === "interrupted",
      `${item.id}: ${item.state}`,
    );
    if (item.state === "interrupted") interrupted++;
  }
  assert.deepEqual(await services.ledger.listQueue(), [], "nothing left in the queue");
  // An interrupted run resumes to exactly what an uncrashed run of the same script returns.
  for (const run of runs.filter((r) => r.state === "interrupted")) {
    const args = { i: ids.runs.indexOf(run.run_id) };
    const resumed = await services.runs.resume(run.run_id, LOCAL, { fake_dispatch: true });
    const done = await services.runs.wait(resumed.run_id, LOCAL);
    const uncrashed = await services.runs.wait(
      (await services.runs.start({ script: SCRIPT, args, fake_dispatch: true }, LOCAL)).run_id,
      LOCAL,
    );
    assert.equal(done.state, "succeeded", JSON.stringify(done.error));
    assert.deepEqual(done.result, uncrashed.result);
  }
  console.log(`daemon chaos: ${kills} kills, ${items.length} items, ${interrupted} interrupted`);
  assert.ok(interrupted > 0, "no kill hit an item in flight");
  assert.ok(steady.pid > 0);
});

Deno.test("a queued task naming a provider is claimed only by a daemon where that provider is configured", async () => {
  await using home = await tempDir("svc-daemon-provider-");
  const special = () => scriptedProvider("special", () => ({ output: "from special" }));
  await using queuer = await openServices({
    home: home.path,
    dispatcher: createDispatcher({ providers: [special()] }),
  });
  const lacking = await startTestDaemon(home.path);
  try {
    const task = await queuer.tasks.enqueue(
      { prompt: "needs special", provider: "special" },
      LOCAL,
    );
    const plain = await queuer.tasks.enqueue({ prompt: "any host", fake_dispatch: true }, LOCAL);
    assert.equal((await queuer.tasks.wait(plain.task_id, LOCAL)).state, "succeeded");
    // Many polls later the daemon without the provider has still left it queued.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await queuer.tasks.get(task.task_id, LOCAL))?.state, "queued");
    assert.deepEqual((await queuer.ledger.listQueue()).map((item) => item.provider), ["special"]);
    await using having = await startTestDaemon(home.path, { providers: [special()] });
    const end = await queuer.tasks.wait(task.task_id, LOCAL);
    assert.equal(end.state, "succeeded", JSON.stringify(end.error));
    assert.equal(end.provider, "special");
    assert.equal((await having.daemon.health()).worker.claimed, 1);
    assert.equal((await lacking.daemon.health()).worker.claimed, 1);
  } finally {
    await lacking[Symbol.asyncDispose]();
  }
});

Deno.test("a daemon claims a task for a harness whose version flag is slow without waiting for its probe", async () => {
  await using home = await tempDir("svc-daemon-slow-probe-");
  const tool = `${home.path}/claude`;
  const result = JSON.stringify({
    type: "result",
    subtype: "success",
    is_error: false,
    result: "claimed at once",
    session_id: "s1",
    total_cost_usd: 0,
    usage: { input_tokens: 1, output_tokens: 1 },
  });
  await Deno.writeTextFile(
    tool,
    `#!/usr/bin/env bash\nif [ "$1" = --version ]; then sleep 4; echo '1.0.0'; exit 0; fi\necho '${result}'\n`,
  );
  await Deno.chmod(tool, 0o755);
  const provider = claudeProvider({ command: tool, scratchRoot: home.path });
  await using queuer = await openServices({ home: home.path });
  await using _daemon = await startTestDaemon(home.path, { providers: [provider] });
  const started = Date.now();
  const task = await queuer.tasks.enqueue({ prompt: "hi", provider: "claude" }, LOCAL);
  const end = await queuer.tasks.wait(task.task_id, LOCAL);
  const took = Date.now() - started;
  assert.equal(end.state, "succeeded", JSON.stringify(end.error));
  assert.ok(took < 3_500, `the task waited ${took} ms for the version probe`);
  // The probe ends by itself (and the test leaves no process behind).
  assert.equal((await provider.probe!()).version, "1.0.0");
});

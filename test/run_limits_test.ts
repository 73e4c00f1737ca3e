/**
 * A run's limits: the specification's defaults (200 agent() calls, 8 at once), raised or
 * lowered by the script's meta or the run's options, never above the operator's ceiling.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { LOCAL, narration, testManager } from "./helpers.ts";

/** A script that makes `n` calls one after another and counts the ones that got an answer. */
function calls(meta: string, n: number): string {
  return `export const meta = ${meta};
    let answered = 0;
    for (let i = 0; i < ${n}; i++) if (await agent("call " + i) !== null) answered++;
    return answered;`;
}

Deno.test("a script's meta.maxAgents and meta.concurrency set the run's limits", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script: calls(`{ name: "few", maxAgents: 3, concurrency: 2 }`, 5),
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.limits, { max_agents: 3, concurrency: 2 });
  assert.equal(status.result, 3, "the calls past the limit return null");
  assert.deepEqual(narration(status, "warning"), [], "known meta fields: no warning");
});

Deno.test("without meta or options a run keeps the specification's defaults, 200 and 8", async () => {
  await using t = await testManager({ maxAgents: undefined, concurrency: undefined });
  const run = await t.manager.start({ script: "return 1" }, LOCAL);
  assert.deepEqual((await t.manager.wait(run.run_id, LOCAL)).limits, {
    max_agents: 200,
    concurrency: 8,
  });
});

Deno.test("meta over the operator's ceiling is clamped to it with a narrated warning; a bad value is ignored with one", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script: calls(`{ name: "many", maxAgents: 5000, concurrency: 100 }`, 1),
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.limits, { max_agents: 1000, concurrency: 64 });
  assert.deepEqual(narration(status, "warning"), [
    "meta.maxAgents 5000 is over the operator's ceiling of 1000 agent() calls: the run gets 1000",
    "meta.concurrency 100 is over the operator's ceiling of 64 simultaneous calls: the run gets 64",
  ]);
  const bad = await t.manager.start({
    script: calls(`{ name: "bad", maxAgents: "lots", concurrency: 0 }`, 1),
  }, LOCAL);
  const badStatus = await t.manager.wait(bad.run_id, LOCAL);
  assert.deepEqual(badStatus.limits, { max_agents: 200, concurrency: 8 });
  assert.deepEqual(narration(badStatus, "warning"), [
    "meta.maxAgents must be a whole number above 0: ignored",
    "meta.concurrency must be a whole number above 0: ignored",
  ]);
});

Deno.test("the run's options win over its meta, under the operator's ceiling", async () => {
  await using t = await testManager({ admission: { maxRunAgents: 4, maxRunConcurrency: 2 } });
  const run = await t.manager.start({
    script: calls(`{ name: "m", maxAgents: 2, concurrency: 1 }`, 6),
    max_agents: 10,
    concurrency: 2,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.limits, { max_agents: 4, concurrency: 2 });
  assert.equal(status.result, 4);
  assert.deepEqual(narration(status, "warning"), [
    "the run's max_agents 10 is over the operator's ceiling of 4 agent() calls: the run gets 4",
  ]);
  // A ceiling below the defaults lowers them, silently: it is the operator's own choice.
  const plain = await t.manager.start({ script: "return 1" }, LOCAL);
  const plainStatus = await t.manager.wait(plain.run_id, LOCAL);
  assert.deepEqual(plainStatus.limits, { max_agents: 4, concurrency: 2 });
  assert.deepEqual(narration(plainStatus, "warning"), []);
});

Deno.test("the configuration's admission.max_run_agents and max_run_concurrency are the ceiling of runs over HTTP", async () => {
  await using d = await startDashboard({
    config: ConfigSchema.parse({ admission: { max_run_agents: 300, max_run_concurrency: 4 } }),
  });
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: {
      script: calls(`{ name: "big", maxAgents: 250, concurrency: 12 }`, 1),
      fake_dispatch: true,
    },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  await d.services.runs.wait(String(started.body.run_id), { owner: "alice" });
  const status = await d.json(`/api/workflow/${started.body.run_id}`, { token: TOKENS.alice });
  assert.deepEqual(status.body.limits, { max_agents: 250, concurrency: 4 });
  assert.throws(
    () => ConfigSchema.parse({ admission: { max_run_agents: 1001 } }),
    /max_run_agents/,
  );
});

Deno.test("a run queued behind a full host narrates its clamped limits when it starts", async () => {
  await using t = await testManager({ fakeLatencyMs: 300, admission: { hostLiveGuests: 1 } });
  const first = await t.manager.start({ script: `return await agent("slow");` }, LOCAL);
  const queued = await t.manager.start({
    script: calls(`{ name: "many", maxAgents: 5000 }`, 1),
  }, LOCAL);
  assert.equal(queued.state, "queued");
  await t.manager.wait(first.run_id, LOCAL);
  const status = await t.manager.wait(queued.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.limits, { max_agents: 1000, concurrency: 8 });
  assert.deepEqual(narration(status, "warning"), [
    "meta.maxAgents 5000 is over the operator's ceiling of 1000 agent() calls: the run gets 1000",
  ]);
});

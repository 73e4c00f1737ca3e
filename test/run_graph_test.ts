/**
 * A run as a graph: the run graph service over real runs (the Deno guest, the run manager, the
 * fake provider, the KV ledger), with `parallel()`, `pipeline()`, a sub-workflow, a resumed run
 * and a call still running.
 */
import assert from "node:assert/strict";
import { RunGraph } from "../src/services/mod.ts";
import type { DagNode, RunDag } from "../src/schemas/mod.ts";
import { LOCAL, testManager, untilEvent } from "./helpers.ts";

const SUB = `await agent("sub a", { label: "sub-a" });
return await agent("sub b", { label: "sub-b" });`;

/** One call, two parallel() thunks, a pipeline() of 2 items by 2 stages, a sub-workflow, one last call. */
function script(last: string): string {
  return `phase("Plan");
const first = await agent("first", { label: "first" });
phase("Work");
const pair = await parallel([
  () => agent("left", { label: "left" }),
  () => agent("right", { label: "right" }),
]);
const piped = await pipeline(["x", "y"],
  (item) => agent("draft " + item, { label: "draft-" + item }),
  (draft, item) => agent("review " + item, { label: "review-" + item, phase: "Review" }),
);
const sub = await workflow("sub");
return [first, pair, piped, sub, await agent(${JSON.stringify(last)}, { label: "last" })];`;
}

function shape(dag: RunDag): string[] {
  return dag.nodes.map((n) =>
    `${"  ".repeat(n.depth)}${n.kind} ${n.position ?? "-"} ${n.label ?? ""}`.trimEnd()
  );
}

function byLabel(dag: RunDag, label: string): DagNode {
  const node = dag.nodes.find((n) => n.label === label);
  assert.ok(node, `no node labelled ${label}`);
  return node;
}

Deno.test("the graph of a run: steps, parallel() branches, pipeline() items and stages, a sub-workflow", async () => {
  await using t = await testManager();
  await Deno.mkdir(`${t.home}/workflows`, { recursive: true });
  await Deno.writeTextFile(`${t.home}/workflows/sub.js`, SUB);
  const graph = new RunGraph({ runs: t.manager, ledger: t.ledger });
  const run = await t.manager.start({ script: script("last") }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const dag = await graph.dag(run.run_id, LOCAL);
  assert.deepEqual(shape(dag), [
    "run -",
    "  call 0 first",
    "  parallel 1",
    "    branch 1.0",
    "      call 1.0.0 left",
    "    branch 1.1",
    "      call 1.1.0 right",
    "  pipeline 2",
    "    item 2.0",
    "      stage 2.0.0",
    "        call 2.0.0.0.0 draft-x",
    "      stage 2.0.1",
    "        call 2.0.1.0.0 review-x",
    "    item 2.1",
    "      stage 2.1.0",
    "        call 2.1.0.0.0 draft-y",
    "      stage 2.1.1",
    "        call 2.1.1.0.0 review-y",
    "  workflow 3",
    "    call 3.0.0 sub-a",
    "    call 3.0.1 sub-b",
    "  call 4 last",
  ]);
  const root = dag.nodes[0]!;
  assert.equal(root.state, "succeeded");
  assert.equal(root.calls, 10);
  assert.deepEqual(dag.calls, { total: 10, shown: 10, omitted: 0, running: 0, replayed: 0 });
  assert.equal(dag.live_from, null);
  // Phases: the narrated one, or the call's own option.
  assert.equal(byLabel(dag, "first").phase, "Plan");
  assert.equal(byLabel(dag, "left").phase, "Work");
  assert.equal(byLabel(dag, "review-y").phase, "Review");
  const left = byLabel(dag, "left");
  assert.equal(left.provider, "fake");
  assert.ok(left.started_at && left.ended_at && left.started_at <= left.ended_at);
  // A group sums its calls.
  const pipelineNode = dag.nodes.find((n) => n.kind === "pipeline")!;
  assert.equal(pipelineNode.calls, 4);
  assert.equal(pipelineNode.phase, null, "its calls are in two phases");
  assert.equal(
    root.usage.input_tokens,
    dag.nodes.filter((n) => n.kind === "call").reduce((sum, n) => sum + n.usage.input_tokens, 0),
  );
  // Every parent comes before its children.
  const seen = new Set<string>();
  for (const node of dag.nodes) {
    if (node.parent !== null) assert.ok(seen.has(node.parent), `${node.id} before its parent`);
    seen.add(node.id);
  }
});

Deno.test("a resumed run's graph shows what replayed, from which run, and where live execution began", async () => {
  await using t = await testManager();
  await Deno.mkdir(`${t.home}/workflows`, { recursive: true });
  await Deno.writeTextFile(`${t.home}/workflows/sub.js`, SUB);
  const graph = new RunGraph({ runs: t.manager, ledger: t.ledger });
  const first = await t.manager.start({ script: script("last") }, LOCAL);
  await t.manager.wait(first.run_id, LOCAL);
  const second = await t.manager.start({
    script: script("last, changed"),
    resume_from: first.run_id,
  }, LOCAL);
  assert.equal((await t.manager.wait(second.run_id, LOCAL)).state, "succeeded");
  const dag = await graph.dag(second.run_id, LOCAL);
  assert.equal(dag.resumed_from, first.run_id);
  assert.equal(dag.calls.replayed, 9);
  const calls = dag.nodes.filter((n) => n.kind === "call");
  for (const call of calls.filter((n) => n.label !== "last")) {
    assert.equal(call.state, "replayed", call.label ?? "");
    assert.equal(call.replayed_from, first.run_id);
    assert.equal(call.live_start, false);
  }
  const last = byLabel(dag, "last");
  assert.equal(last.state, "succeeded");
  assert.equal(last.live_start, true);
  assert.deepEqual(dag.live_from, { seq: last.seq, position: "4", at: last.started_at });
  assert.equal(dag.nodes.find((n) => n.kind === "parallel")!.state, "replayed");
  assert.equal(dag.nodes[0]!.state, "succeeded");
});

Deno.test("a call running now is in the graph with its label and phase; another owner finds no run", async () => {
  await using t = await testManager({ fakeLatencyMs: 60_000 });
  const graph = new RunGraph({ runs: t.manager, ledger: t.ledger });
  const run = await t.manager.start({
    script:
      `phase("Slow"); return await parallel([() => agent("a", { label: "slow-a" }), () => agent("b", { label: "slow-b" })]);`,
  }, LOCAL);
  let started = 0;
  await untilEvent(t.manager, run.run_id, (e) => e.type === "call_started" && ++started === 2);
  const dag = await graph.dag(run.run_id, LOCAL);
  assert.equal(dag.calls.running, 2);
  const node = byLabel(dag, "slow-b");
  assert.equal(node.state, "running");
  assert.equal(node.phase, "Slow");
  assert.equal(node.ended_at, null);
  assert.equal(node.position, "0.1.0");
  assert.equal(dag.nodes[0]!.state, "running");
  assert.equal(dag.nodes.find((n) => n.kind === "parallel")!.ended_at, null);
  await assert.rejects(
    graph.dag(run.run_id, { owner: "someone-else" }),
    (e: Error & { code?: string }) => e.code === "not_found",
  );
  await assert.rejects(
    graph.dag("run_0000000000nothere", LOCAL),
    (e: Error & { code?: string }) => e.code === "not_found",
  );
  await t.manager.cancel(run.run_id, LOCAL);
  const ended = await graph.dag(run.run_id, LOCAL);
  assert.equal(ended.calls.running, 0, "a run that ended has no running call");
});

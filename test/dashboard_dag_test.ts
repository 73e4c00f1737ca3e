/** `GET /api/workflow/{run_id}/dag` over the dashboard's app, in process: the owner's graph, 404 for others. */
import assert from "node:assert/strict";
import { RunDagSchema } from "../src/schemas/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";

Deno.test("GET /api/workflow/{run_id}/dag answers the owner's run as a graph; another owner and an unknown id get 404", async () => {
  await using d = await startDashboard();
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: {
      script: `phase("Fan");
        const both = await parallel([() => agent("a", { label: "A" }), () => agent("b", { label: "B" })]);
        return [both, await agent("c", { label: "C" })];`,
      fake_dispatch: true,
    },
  });
  assert.equal(started.status, 202);
  const runId = String(started.body.run_id);
  await d.services.runs.wait(runId, { owner: "alice" });

  const { status, body } = await d.json(`/api/workflow/${runId}/dag`, { token: TOKENS.alice });
  assert.equal(status, 200);
  const dag = RunDagSchema.parse(body);
  assert.equal(dag.run_id, runId);
  assert.deepEqual(
    dag.nodes.map((n) => `${n.kind}:${n.label ?? n.position ?? "-"}:${n.state}`),
    [
      "run:-:succeeded",
      "parallel:0:succeeded",
      "branch:0.0:succeeded",
      "call:A:succeeded",
      "branch:0.1:succeeded",
      "call:B:succeeded",
      "call:C:succeeded",
    ],
  );
  assert.equal(dag.nodes.find((n) => n.label === "A")?.phase, "Fan");
  assert.equal(dag.max_calls, 500);

  const other = await d.json(`/api/workflow/${runId}/dag`, { token: TOKENS.bob });
  assert.equal(other.status, 404);
  assert.equal((other.body.error as { code: string }).code, "not_found");
  assert.doesNotMatch(JSON.stringify(other.body), /"label"/, "nothing of the run leaks");
  const unknown = await d.json("/api/workflow/run_0000000000nothere/dag", { token: TOKENS.alice });
  assert.equal(unknown.status, 404);
  const noToken = await d.request(`/api/workflow/${runId}/dag`, { token: undefined });
  assert.equal(noToken.status, 401);
  await noToken.body?.cancel();
});

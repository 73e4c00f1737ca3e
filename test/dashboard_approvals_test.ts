import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { readEvents, startDashboard, TOKENS } from "./dashboard_helpers.ts";

const ASK = ConfigSchema.parse({ sandbox: { full: "ask" } });

async function pending(d: Awaited<ReturnType<typeof startDashboard>>, token: string) {
  for (let i = 0; i < 500; i++) {
    const list = await d.json("/api/approvals?state=pending", { token });
    const approvals = list.body.approvals as Array<Record<string, string>>;
    if (approvals.length > 0) return approvals;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("no approval appeared");
}

Deno.test("a dispatch asking for full under ask waits in /api/approvals until its owner approves it over HTTP", async () => {
  await using d = await startDashboard({ config: ASK });
  const { status, body } = await d.json("/api/status", { token: TOKENS.alice });
  assert.equal(status, 200);
  assert.equal((body.kernel as { full: string }).full, "ask");
  const task = await d.json("/api/dispatch", {
    token: TOKENS.alice,
    body: { prompt: "deploy", sandbox: "full", fake_dispatch: true },
  });
  const taskId = String(task.body.task_id);
  const [approval] = await pending(d, TOKENS.alice);
  assert.equal(approval!.task_id, taskId);
  assert.equal(approval!.kind, "dispatch");
  // Bob neither sees it nor decides it.
  assert.deepEqual((await d.json("/api/approvals", { token: TOKENS.bob })).body.approvals, []);
  const bob = await d.json(`/api/tasks/${taskId}/approve`, { method: "POST", token: TOKENS.bob });
  assert.equal(bob.status, 404);
  const approved = await d.json(`/api/tasks/${taskId}/approve`, {
    token: TOKENS.alice,
    body: { reason: "release day" },
  });
  assert.equal(approved.status, 200, JSON.stringify(approved.body));
  assert.equal(approved.body.state, "approved");
  const events = await readEvents(
    await d.request(`/api/dispatch/${taskId}/events`, { token: TOKENS.alice }),
  );
  assert.ok(events.some((e) => e.event === "approval"), "the task's stream shows the approval");
  assert.equal((events.at(-1)?.data as { state: string }).state, "succeeded");
  const again = await d.json(`/api/tasks/${taskId}/deny`, { method: "POST", token: TOKENS.alice });
  assert.equal(again.status, 409, "deciding the other way afterwards is a conflict");
});

Deno.test("a run's full call under ask is denied over HTTP by its approval id: the script gets null", async () => {
  await using d = await startDashboard({ config: ASK });
  const run = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: {
      script: `const a = await agent("deploy", { sandbox: "full" }); return { a };`,
      sandbox_max: "full",
      fake_dispatch: true,
    },
  });
  const runId = String(run.body.run_id);
  const [approval] = await pending(d, TOKENS.alice);
  assert.equal(approval!.run_id, runId);
  const denied = await d.json(`/api/tasks/${approval!.approval_id}/deny`, {
    method: "POST",
    token: TOKENS.alice,
  });
  assert.equal(denied.body.state, "denied");
  const events = await readEvents(
    await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.alice }),
  );
  assert.ok(events.some((e) => e.event === "approval"));
  const status = await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice });
  assert.equal(status.body.state, "succeeded");
  assert.deepEqual(status.body.result, { a: null });
});

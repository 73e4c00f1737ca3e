import assert from "node:assert/strict";
import { FinishedRuns } from "../src/engine/finished_runs.ts";
import type { RunStatus } from "../src/engine/mod.ts";
import { readEvents, startDashboard, TOKENS } from "./dashboard_helpers.ts";

/** Starts a one-call run as Alice and follows it to its end. */
async function finishedRun(d: Awaited<ReturnType<typeof startDashboard>>): Promise<string> {
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `log("once"); return await agent("x");`, fake_dispatch: true },
  });
  const runId = String(started.body.run_id);
  await readEvents(await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.alice }));
  return runId;
}

Deno.test("a finished run read again answers what the ledger holds, and to its owner only", async () => {
  await using d = await startDashboard();
  const runId = await finishedRun(d);
  const first = await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice });
  const again = await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice });
  assert.equal(first.status, 200);
  assert.equal(first.body.state, "succeeded");
  assert.deepEqual(again.body, first.body);
  assert.equal((first.body.narration as Array<{ text: string }>)[0]?.text, "once");
  // Once kept, the run is still another owner's 404, like an unknown id, on every surface.
  const bob = await d.json(`/api/workflow/${runId}`, { token: TOKENS.bob });
  const unknown = await d.json("/api/workflow/run_01zzzzzzzzzzzzzzzz", { token: TOKENS.bob });
  assert.equal(bob.status, 404);
  assert.deepEqual(bob.body, {
    ...unknown.body,
    error: {
      ...(unknown.body.error as object),
      message: (unknown.body.error as { message: string }).message.replace(
        "run_01zzzzzzzzzzzzzzzz",
        runId,
      ),
    },
  });
  assert.equal(await d.services.runs.get(runId, { owner: "bob" }), undefined);
  assert.equal(await d.services.runs.getJson(runId, { owner: "bob" }), undefined);
  const text = await d.services.runs.getJson(runId, { owner: "alice" });
  assert.deepEqual(JSON.parse(text!), await d.services.runs.get(runId, { owner: "alice" }));
  // What one reader changes in its copy is not what the next one reads.
  const copy = await d.services.runs.get(runId, { owner: "alice" });
  copy!.state = "failed";
  copy!.narration.length = 0;
  const fresh = await d.services.runs.get(runId, { owner: "alice" });
  assert.equal(fresh!.state, "succeeded");
  assert.equal(fresh!.narration.length, 1);
});

function status(runId: string, state: RunStatus["state"], text = ""): RunStatus {
  return { run_id: runId, state, owner: "alice", narration: [{ text }] } as unknown as RunStatus;
}

Deno.test("the finished-run cache keeps ended runs only, within its bounds, least recently read out first", () => {
  const cache = new FinishedRuns({ maxEntries: 2, maxBytes: 16 * 1024 });
  cache.offer(status("run_a", "running"));
  cache.offer(status("run_b", "queued"));
  assert.equal(cache.size().entries, 0, "a run that may still change is not kept");
  cache.offer(status("run_a", "succeeded"));
  cache.offer(status("run_b", "failed"));
  assert.equal(cache.get("run_a")?.state, "succeeded");
  cache.offer(status("run_c", "cancelled"));
  assert.equal(cache.get("run_b"), undefined, "the least recently read went first");
  assert.equal(cache.get("run_a")?.state, "succeeded");
  assert.equal(cache.get("run_c")?.state, "cancelled");
  cache.offer(status("run_d", "succeeded", "x".repeat(2000)));
  assert.equal(cache.get("run_d"), undefined, "a status over a sixteenth of the bytes is not kept");
  assert.equal(cache.size().entries, 2);
  const bytes = new FinishedRuns({ maxEntries: 100, maxBytes: 16 * 1024 });
  for (let i = 0; i < 40; i++) bytes.offer(status(`run_${i}`, "succeeded", "y".repeat(900)));
  assert.ok(bytes.size().bytes <= 16 * 1024, `kept ${bytes.size().bytes} bytes`);
  assert.equal(bytes.get("run_0"), undefined);
  assert.equal(bytes.get("run_39")?.state, "succeeded");
});

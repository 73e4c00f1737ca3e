import assert from "node:assert/strict";
import { readEvents, startDashboard, type TestDashboard, TOKENS } from "./dashboard_helpers.ts";

const WORDS = `
  phase("words");
  const out = [];
  for (const word of args.words) out.push(await agent("say " + word, { label: word }));
  return { out, n: args.n };
`;

/** Follows a run's events to its end and returns its final status. */
async function finished(d: TestDashboard, runId: string): Promise<Record<string, unknown>> {
  await readEvents(await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.alice }));
  return (await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice })).body;
}

async function startWords(d: TestDashboard): Promise<string> {
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: {
      script: WORDS,
      filename: "words.js",
      args: { words: ["a", "b"], n: 2 },
      fake_dispatch: true,
      timeout: 600,
      budget_tokens: 50_000,
    },
  });
  assert.equal(started.status, 202);
  return String(started.body.run_id);
}

Deno.test("POST /api/workflow/{run_id}/resume answers 202 and the new run replays the source's calls with its args", async () => {
  await using d = await startDashboard();
  const sourceId = await startWords(d);
  const source = await finished(d, sourceId);
  assert.equal(source.state, "succeeded");

  // No body at all: everything is the source's.
  const resumed = await d.request(`/api/workflow/${sourceId}/resume`, {
    method: "POST",
    token: TOKENS.alice,
  });
  assert.equal(resumed.status, 202, await resumed.clone().text());
  const body = await resumed.json() as Record<string, string>;
  const runId = body.run_id!;
  assert.notEqual(runId, sourceId);
  assert.equal(body.status_url, `/api/workflow/${runId}`);
  assert.equal(body.events_url, `/api/workflow/${runId}/events`);
  const status = await finished(d, runId);
  assert.equal(status.state, "succeeded");
  assert.equal(status.resumed_from, sourceId);
  assert.deepEqual(status.result, source.result);
  assert.deepEqual(status.result, {
    out: ["fake response to: say a", "fake response to: say b"],
    n: 2,
  });
  for (const field of ["filename", "timeout", "fake_dispatch", "limits"]) {
    assert.deepEqual(status[field], source[field], field);
  }
  assert.equal((status.budget as { tokens: { cap: number } }).tokens.cap, 50_000);
  const journal = await d.json(`/api/workflow/${runId}/journal`, { token: TOKENS.alice });
  assert.deepEqual(
    (journal.body.entries as Array<{ label: string; outcome: string; replayed_from: string }>)
      .map((e) => [e.label, e.outcome, e.replayed_from]),
    [["a", "replayed", sourceId], ["b", "replayed", sourceId]],
  );

  // An empty object is no change either; a field it names is.
  const changed = await d.json(`/api/workflow/${sourceId}/resume`, {
    token: TOKENS.alice,
    body: { timeout: 90, budget_usd: 3 },
  });
  assert.equal(changed.status, 202);
  const second = await finished(d, String(changed.body.run_id));
  assert.equal(second.timeout, 90);
  assert.equal((second.budget as { usd: { cap: number } }).usd.cap, 3);
  assert.equal((second.budget as { tokens: { cap: number } }).tokens.cap, 50_000);
  const empty = await d.json(`/api/workflow/${sourceId}/resume`, {
    token: TOKENS.alice,
    body: {},
  });
  assert.equal(empty.status, 202);
  assert.equal((await finished(d, String(empty.body.run_id))).timeout, 600);
  // A client that declares JSON on every request and sends no body (a page's fetch wrapper).
  const declared = await d.request(`/api/workflow/${sourceId}/resume`, {
    method: "POST",
    token: TOKENS.alice,
    headers: { "content-type": "application/json" },
  });
  assert.equal(declared.status, 202, await declared.clone().text());
  await finished(d, String((await declared.json() as { run_id: string }).run_id));
  const operation = (d.server.app.openapi() as {
    paths: Record<string, { post: { requestBody: { required?: boolean } } }>;
  }).paths["/api/workflow/{run_id}/resume"]!.post;
  assert.notEqual(operation.requestBody.required, true, "the document says the body is optional");
});

Deno.test("GET /api/workflow/{run_id}/script answers the script, filename and args the run was started with", async () => {
  await using d = await startDashboard();
  const runId = await startWords(d);
  await finished(d, runId);
  const got = await d.json(`/api/workflow/${runId}/script`, { token: TOKENS.alice });
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, {
    run_id: runId,
    filename: "words.js",
    script: WORDS,
    args: { words: ["a", "b"], n: 2 },
  });
  // A run without args answers without them.
  const bare = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return 1;`, fake_dispatch: true },
  });
  const bareId = String(bare.body.run_id);
  await finished(d, bareId);
  const none = await d.json(`/api/workflow/${bareId}/script`, { token: TOKENS.alice });
  assert.deepEqual(none.body, { run_id: bareId, filename: "script.js", script: `return 1;` });
});

Deno.test("resume and script of another owner's run answer 404, a running run's resume 409, an unknown field 400", async () => {
  await using d = await startDashboard({ fakeLatencyMs: 60_000 });
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return await agent("slow");`, fake_dispatch: true },
  });
  const runId = String(started.body.run_id);
  for (const [method, path] of [["POST", "resume"], ["GET", "script"]]) {
    const bob = await d.json(`/api/workflow/${runId}/${path}`, { method, token: TOKENS.bob });
    assert.equal(bob.status, 404, `${method} ${path}`);
    assert.equal((bob.body.error as { code: string }).code, "not_found");
  }
  const busy = await d.json(`/api/workflow/${runId}/resume`, {
    method: "POST",
    token: TOKENS.alice,
  });
  assert.equal(busy.status, 409);
  assert.match(
    (busy.body.error as { message: string }).message,
    new RegExp(`^Cannot resume from run '${runId}': it is still (queued|running)$`),
  );
  const bad = await d.json(`/api/workflow/${runId}/resume`, {
    token: TOKENS.alice,
    body: { script: "return 2;" },
  });
  assert.equal(bad.status, 400);
  assert.match((bad.body.error as { message: string }).message, /script/);
  const list = await d.json("/api/workflow", { token: TOKENS.alice });
  assert.equal((list.body.runs as unknown[]).length, 1, "no run was started");
  await d.json(`/api/workflow/${runId}/cancel`, { method: "POST", token: TOKENS.alice });
  await finished(d, runId);
});

import assert from "node:assert/strict";
import { readEvents, startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { fixture, runCli } from "./helpers.ts";

Deno.test("POST /api/workflow/run answers 202 with a run id at once; the status then shows the result and the journal summary", async () => {
  await using d = await startDashboard();
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: {
      script: `phase("one"); log("hello"); const a = await agent("hi"); return { a, n: args.n };`,
      args: { n: 7, steps: 3 },
      fake_dispatch: true,
      owner_user_id: "bob",
    },
  });
  assert.equal(started.status, 202);
  const runId = String(started.body.run_id);
  assert.match(runId, /^run_/);
  assert.equal(started.body.status_url, `/api/workflow/${runId}`);
  // Follow it to its end over SSE, then read the status.
  const events = await readEvents(
    await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.alice }),
  );
  assert.equal(events.at(-1)?.event, "state");
  assert.equal((events.at(-1)?.data as { state: string }).state, "succeeded");
  const { status, body } = await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice });
  assert.equal(status, 200);
  assert.equal(body.owner, "alice", "the owner comes from the token, owner_user_id is ignored");
  assert.equal(body.state, "succeeded");
  assert.equal((body.result as { n: number }).n, 7);
  assert.deepEqual((body.journal as { calls: number; live: number }).calls, 1);
  const journal = await d.json(`/api/workflow/${runId}/journal`, { token: TOKENS.alice });
  assert.equal((journal.body.entries as unknown[]).length, 1);
  const list = await d.json("/api/workflow?limit=10", { token: TOKENS.alice });
  assert.deepEqual((list.body.runs as Array<{ run_id: string }>).map((r) => r.run_id), [runId]);
});

Deno.test("another owner's run, task and session answer 404 on every route that names them, like an unknown id", async () => {
  await using d = await startDashboard();
  const run = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return await agent("x");`, fake_dispatch: true },
  });
  const task = await d.json("/api/dispatch", {
    token: TOKENS.alice,
    body: { prompt: "hello", fake_dispatch: true },
  });
  assert.equal(task.status, 202);
  const session = await d.json("/api/sessions", { token: TOKENS.alice, body: { name: "pair" } });
  assert.equal(session.status, 201);
  const runId = String(run.body.run_id);
  const taskId = String(task.body.task_id);
  const sessionId = String(session.body.session_id);
  await readEvents(await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.alice }));
  await readEvents(await d.request(`/api/dispatch/${taskId}/events`, { token: TOKENS.alice }));

  const routes: Array<[string, string, string]> = [
    ["GET", `/api/workflow/${runId}`, "/api/workflow/run_01zzzzzzzzzzzzzzzz"],
    ["GET", `/api/workflow/${runId}/journal`, "/api/workflow/run_01zzzzzzzzzzzzzzzz/journal"],
    ["GET", `/api/workflow/${runId}/events`, "/api/workflow/run_01zzzzzzzzzzzzzzzz/events"],
    ["POST", `/api/workflow/${runId}/cancel`, "/api/workflow/run_01zzzzzzzzzzzzzzzz/cancel"],
    ["GET", `/api/workflow/${runId}/script`, "/api/workflow/run_01zzzzzzzzzzzzzzzz/script"],
    ["GET", `/api/dispatch/${taskId}`, "/api/dispatch/task_01zzzzzzzzzzzzzzzz"],
    ["GET", `/api/dispatch/${taskId}/events`, "/api/dispatch/task_01zzzzzzzzzzzzzzzz/events"],
    ["POST", `/api/dispatch/${taskId}/cancel`, "/api/dispatch/task_01zzzzzzzzzzzzzzzz/cancel"],
    ["GET", `/api/tasks/${taskId}`, "/api/tasks/task_01zzzzzzzzzzzzzzzz"],
    ["POST", `/api/tasks/${taskId}/cancel`, "/api/tasks/task_01zzzzzzzzzzzzzzzz/cancel"],
    ["GET", `/api/sessions/${sessionId}`, "/api/sessions/ses_01zzzzzzzzzzzzzzzz"],
    ["GET", `/api/sessions/pair`, "/api/sessions/nosuchname"],
  ];
  for (const [method, theirs, unknown] of routes) {
    const mine = await d.request(theirs, { method, token: TOKENS.alice });
    assert.equal(mine.status, 200, `alice ${method} ${theirs}`);
    await mine.body?.cancel();
    const bob = await d.json(theirs, { method, token: TOKENS.bob });
    const none = await d.json(unknown, { method, token: TOKENS.bob });
    assert.equal(bob.status, 404, `bob ${method} ${theirs}`);
    assert.equal(none.status, 404, `bob ${method} ${unknown}`);
    const shape = (body: Record<string, unknown>) => {
      const error = body.error as { code: string; message: string };
      return [
        error.code,
        error.message.replace(/(run|task|ses)_[0-9a-z]+|pair|nosuchname/g, "<id>"),
      ];
    };
    assert.deepEqual(shape(bob.body), shape(none.body), `${method} ${theirs}`);
  }
  // Listings are filtered by the token's owner.
  const listings: Array<[string, string]> = [
    ["/api/workflow", "runs"],
    ["/api/tasks", "tasks"],
    ["/api/sessions", "sessions"],
    ["/api/history", "calls"],
  ];
  for (const [path, key] of listings) {
    const bob = await d.json(path, { token: TOKENS.bob });
    assert.deepEqual(bob.body[key], [], `${path} for bob`);
    const alice = await d.json(path, { token: TOKENS.alice });
    assert.ok((alice.body[key] as unknown[]).length > 0, `${path} for alice`);
  }
  const usage = await d.json("/api/usage/summary", { token: TOKENS.bob });
  assert.equal(usage.body.calls, 0);
});

Deno.test("cancel of a run is idempotent over HTTP and the run ends cancelled", async () => {
  await using d = await startDashboard({ fakeLatencyMs: 5_000 });
  const run = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return await agent("slow");`, fake_dispatch: true },
  });
  const runId = String(run.body.run_id);
  const response = await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.alice });
  const seen = readEvents(response);
  // Wait until it runs, then cancel twice.
  while (
    (await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice })).body.state !== "running"
  ) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const first = await d.json(`/api/workflow/${runId}/cancel`, {
    method: "POST",
    token: TOKENS.alice,
  });
  const second = await d.json(`/api/workflow/${runId}/cancel`, {
    method: "POST",
    token: TOKENS.alice,
  });
  assert.equal(first.status, 200);
  assert.equal(second.status, 200);
  const events = await seen;
  assert.equal((events.at(-1)?.data as { state: string }).state, "cancelled");
  const third = await d.json(`/api/workflow/${runId}/cancel`, {
    method: "POST",
    token: TOKENS.alice,
  });
  assert.equal(third.status, 200);
  assert.equal(third.body.state, "cancelled", "cancelling an ended run answers its status");
});

Deno.test("a run started by `svc workflow run` in another process streams over HTTP from the same ledger", async () => {
  await using d = await startDashboard();
  const cli = runCli([
    "workflow",
    "run",
    fixture("paced.js"),
    "--fake-dispatch",
    "--args",
    '{"steps":4}',
  ], {
    home: d.home,
    env: { SVC_FAKE_LATENCY_MS: "150" },
  });
  // The CLI acts as `local`; the shared token (no owner) acts as local too.
  let runId: string | undefined;
  for (let i = 0; i < 500 && !runId; i++) {
    const list = await d.json("/api/workflow", { token: TOKENS.shared });
    runId = (list.body.runs as Array<{ run_id: string }>)[0]?.run_id;
    if (!runId) await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(runId, "the CLI's run shows on the dashboard");
  const events = await readEvents(
    await d.request(`/api/workflow/${runId}/events`, { token: TOKENS.shared }),
  );
  const result = await cli;
  assert.equal(result.code, 0, result.stderr);
  const ids = events.filter((e) => e.id !== undefined).map((e) => Number(e.id));
  assert.deepEqual(ids, ids.map((_, i) => i), "every event, in order, from 0");
  assert.equal((events.at(-1)?.data as { state: string }).state, "succeeded");
  assert.ok(
    events.some((e) => e.event === "call"),
    "the calls made in the other process are streamed",
  );
  // Another owner does not see it.
  assert.equal((await d.json(`/api/workflow/${runId}`, { token: TOKENS.bob })).status, 404);
});

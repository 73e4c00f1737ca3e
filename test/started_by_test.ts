/**
 * A run records what started it (`started_by`): the API, the run list, `svc workflow status`
 * and the composition for automations, webhooks, resumes and cards, bounded.
 */
import assert from "node:assert/strict";
import { STARTED_BY_CHARS, startedBy } from "../src/engine/run/mod.ts";
import { startDashboard, type TestDashboard, TOKENS } from "./dashboard_helpers.ts";
import { connectHttp, untilDone } from "./mcp_helpers.ts";
import { fixture, runCli, tempDir } from "./helpers.ts";

type Started = { via: string; text: string };

async function statusOf(d: TestDashboard, runId: string): Promise<Record<string, unknown>> {
  await d.services.runs.wait(runId, { owner: "alice" });
  return (await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice })).body;
}

Deno.test("started_by says which automation, webhook, resume and card, clipped", () => {
  const none = { resumed_from: null };
  assert.deepEqual(startedBy("cli", none), { via: "cli", text: "the command line" });
  assert.deepEqual(
    startedBy("daemon", {
      ...none,
      trigger: { kind: "automation", automation_id: "nightly", slot: "2026-01-01T00:00Z" },
    }).text,
    "automation nightly",
  );
  assert.equal(
    startedBy("daemon", { ...none, trigger: { kind: "webhook", hook: "gh", delivery_id: "d1" } })
      .text,
    "webhook gh",
  );
  assert.equal(
    startedBy("api", { resumed_from: "run_01abc", card_id: "12" }).text,
    "resume of run_01abc via the HTTP API for card 12",
  );
  const long = startedBy("daemon", {
    ...none,
    trigger: { kind: "automation", automation_id: "a".repeat(500), slot: "s" },
  });
  assert.ok(long.text.length <= STARTED_BY_CHARS);
});

Deno.test("a run started over HTTP, resumed, for a card and over MCP says so; another owner sees none of it", async () => {
  await using d = await startDashboard({ port: true });
  const made = await d.json("/api/board/write", {
    token: TOKENS.alice,
    body: { action: "new", mode: "apply", title: "a card" },
  });
  const card = String((made.body.card as { issue_id: string }).issue_id);
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return await agent("hi");`, fake_dispatch: true, card_id: card },
  });
  const runId = String(started.body.run_id);
  const first = await statusOf(d, runId);
  assert.deepEqual(first.started_by, { via: "api", text: `the HTTP API for card ${card}` });

  const resumed = await d.json(`/api/workflow/${runId}/resume`, { token: TOKENS.alice, body: {} });
  const second = await statusOf(d, String(resumed.body.run_id));
  assert.equal(
    (second.started_by as Started).text,
    `resume of ${runId} via the HTTP API`,
  );

  await using mcp = await connectHttp(d.url, { token: TOKENS.alice });
  const handle = (await mcp.ok("svc_workflow", { script: "return 1", fake_dispatch: true }))
    .handle as string;
  await untilDone(mcp, handle);
  assert.deepEqual((await statusOf(d, handle)).started_by, {
    via: "mcp",
    text: "a tool-protocol (MCP) client",
  });

  const listed = (await d.json("/api/workflow", { token: TOKENS.alice })).body.runs as Array<
    { run_id: string; started_by: Started }
  >;
  assert.equal(listed.find((r) => r.run_id === runId)?.started_by.via, "api");
  assert.deepEqual((await d.json("/api/workflow", { token: TOKENS.bob })).body.runs, []);
  assert.equal((await d.json(`/api/workflow/${runId}`, { token: TOKENS.bob })).status, 404);
});

Deno.test("svc workflow status shows that the command line started a run", async () => {
  await using home = await tempDir();
  const opts = { home: home.path };
  const run = await runCli(["workflow", "run", fixture("three_steps.js")], opts);
  assert.equal(run.code, 0, run.stderr);
  const [listed] = JSON.parse((await runCli(["workflow", "list", "--json"], opts)).stdout);
  const status = await runCli(["workflow", "status", String(listed.run_id)], opts);
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, /^started {3}by the command line$/m);
});

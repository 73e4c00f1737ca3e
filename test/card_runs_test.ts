import assert from "node:assert/strict";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";

type Dashboard = Awaited<ReturnType<typeof startDashboard>>;

async function newCard(d: Dashboard, token: string, title: string): Promise<string> {
  const made = await d.json("/api/board/write", {
    token,
    body: { action: "new", mode: "apply", title },
  });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  return String((made.body.card as { issue_id: string }).issue_id);
}

async function ended(d: Dashboard, token: string, runId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 1000; i++) {
    const { body } = await d.json(`/api/workflow/${runId}`, { token });
    if (!["queued", "running"].includes(String(body.state))) return body;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${runId} did not end`);
}

Deno.test("a run started from a card names it, and the card lists the run and logs it", async () => {
  await using d = await startDashboard();
  const card = await newCard(d, TOKENS.alice, "fix the flaky test");
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `await agent("look"); return "done";`, fake_dispatch: true, card_id: card },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = String(started.body.run_id);
  const run = await ended(d, TOKENS.alice, runId);
  assert.equal(run.card_id, card, "the run names its card");
  assert.equal(run.state, "succeeded");

  const shown = await d.json(`/api/board/${card}`, { token: TOKENS.alice });
  const links = shown.body.runs as Array<{ run_id: string; by: string }>;
  assert.deepEqual(links.map((l) => [l.run_id, l.by]), [[runId, "alice"]]);
  const log = shown.body.log as Array<{ action: string; message?: string }>;
  assert.ok(
    log.some((e) => e.action === "log" && e.message?.includes(runId)),
    "the card's history",
  );
  assert.equal(shown.body.state, "new", "a run changes no card state");

  const second = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `throw new Error("nope");`, fake_dispatch: true, card_id: card },
  });
  await ended(d, TOKENS.alice, String(second.body.run_id));
  const runs = await d.json(`/api/board/${card}/runs`, { token: TOKENS.alice });
  assert.equal(runs.status, 200, JSON.stringify(runs.body));
  const listed = runs.body.runs as Array<{ run_id: string; state: string; calls: number }>;
  assert.deepEqual(listed.map((r) => [r.run_id, r.state]), [
    [String(second.body.run_id), "failed"],
    [runId, "succeeded"],
  ]);
  assert.equal(listed[1]!.calls, 1);
});

Deno.test("a run may link only a card its owner may see; another owner reads no card's runs", async () => {
  await using d = await startDashboard();
  const card = await newCard(d, TOKENS.alice, "alice's card");
  const bob = await d.json("/api/workflow/run", {
    token: TOKENS.bob,
    body: { script: `return 1;`, fake_dispatch: true, card_id: card },
  });
  assert.equal(bob.status, 404, JSON.stringify(bob.body));
  assert.deepEqual((await d.json("/api/workflow", { token: TOKENS.bob })).body.runs, []);
  const unknown = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return 1;`, fake_dispatch: true, card_id: "999" },
  });
  assert.equal(unknown.status, 404, "an unknown card answers as another owner's");
  const malformed = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return 1;`, fake_dispatch: true, card_id: "../1" },
  });
  assert.equal(malformed.status, 400);
  assert.match(JSON.stringify(malformed.body), /card_id/);
  assert.equal((await d.json(`/api/board/${card}/runs`, { token: TOKENS.bob })).status, 404);
  assert.equal((await d.json("/api/board/abc/runs", { token: TOKENS.alice })).status, 404);
  const card2 = await d.json(`/api/board/${card}`, { token: TOKENS.alice });
  assert.equal(card2.body.runs, undefined, "no run was linked by the refused requests");
});

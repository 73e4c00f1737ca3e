/** `GET /api/costs` names the runs that spent, by day and by hour, for their owner only. */
import assert from "node:assert/strict";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { COST_TOP_RUNS, costBreakdown } from "../src/services/cost_breakdown.ts";
import type { CallRecord } from "../src/ledger/mod.ts";

function record(id: string, at: string, cost: number | null): CallRecord {
  return {
    at,
    source: "run",
    id,
    seq: 1,
    owner: "o",
    provider: "p",
    model: null,
    outcome: "live",
    duration_ms: 1,
    usage: { input_tokens: 1, output_tokens: 2 },
    cost_usd: cost,
  };
}

Deno.test("the breakdown names each day's dearest runs, sums the rest, and covers the last hours", () => {
  const now = Date.parse("2026-03-02T12:30:00Z");
  const calls: CallRecord[] = [];
  for (let i = 0; i < COST_TOP_RUNS + 3; i++) {
    calls.push(record(`run_${String(i).padStart(2, "0")}`, "2026-03-02T11:05:00Z", i));
  }
  calls.push(record("run_old", "2026-02-20T09:00:00Z", 100));
  calls.push(record("run_x", "2026-03-02T12:10:00Z", null));
  const { by_run, by_hour } = costBreakdown(calls, now);
  assert.deepEqual(by_run.map((d) => d.day), ["2026-03-02", "2026-02-20"]);
  const today = by_run[0]!;
  assert.equal(today.runs.length, COST_TOP_RUNS);
  assert.equal(today.runs[0]!.id, `run_${COST_TOP_RUNS + 2}`, "the dearest first");
  assert.deepEqual(today.others, { runs: 4, calls: 4, cost_usd: 0 + 1 + 2 });
  assert.deepEqual(by_hour.map((h) => h.hour), ["2026-03-02T12:00Z", "2026-03-02T11:00Z"]);
  assert.equal(by_hour[0]!.runs[0]!.unmetered_calls, 1);
  assert.equal(by_hour[1]!.runs.length, 5);
});

Deno.test("GET /api/costs answers by_run and by_hour with the caller's own runs only", async () => {
  await using d = await startDashboard();
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: `return await agent("hi");`, fake_dispatch: true },
  });
  const runId = String(started.body.run_id);
  await d.services.runs.wait(runId, { owner: "alice" });
  const mine = await d.json("/api/costs", { token: TOKENS.alice });
  assert.equal(mine.status, 200);
  const byRun = mine.body.by_run as Array<{ runs: Array<{ id: string }> }>;
  assert.deepEqual(byRun[0]?.runs.map((r) => r.id), [runId]);
  const byHour = mine.body.by_hour as Array<{ runs: Array<{ id: string }>; calls: number }>;
  assert.equal(byHour[0]?.calls, 1);
  assert.equal(byHour[0]?.runs[0]?.id, runId);
  const theirs = await d.json("/api/costs", { token: TOKENS.bob });
  assert.deepEqual(theirs.body.by_run, []);
  assert.deepEqual(theirs.body.by_hour, []);
});

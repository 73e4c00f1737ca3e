/**
 * Every view of the call log reports the same figures (docs/COUNTS.md): a mix of answered,
 * failed, refused and replayed calls and a task, read through `/api/usage/summary`,
 * `/api/stats`, `/api/costs`, `/api/pulse` and `svc history`.
 */
import assert from "node:assert/strict";
import { SvcError } from "../src/errors/mod.ts";
import { callKind, callRow, NO_PROVIDER_ROW, REPLAYED_ROW } from "../src/dispatch/mod.ts";
import { startDashboard, type TestDashboard, TOKENS } from "./dashboard_helpers.ts";
import { runCli } from "./helpers.ts";
import { recordingProvider } from "./providers.ts";

const MIX = `
  await agent("one", { provider: "fake" });
  await agent("two", { provider: "priced" });
  await agent("three", { provider: "flaky" });
  await agent("four");
  return "done";
`;

async function ended(d: TestDashboard, runId: string): Promise<Record<string, unknown>> {
  await d.services.runs.wait(runId, { owner: "alice" });
  return (await d.json(`/api/workflow/${runId}`, { token: TOKENS.alice })).body;
}

type Figures = {
  calls: number;
  failed: number;
  replayed: number;
  refused: number;
  cost_usd: number;
  tokens: number;
};

function figures(s: Record<string, unknown>): Figures {
  const usage = s.usage as { input_tokens: number; output_tokens: number };
  return {
    calls: s.calls as number,
    failed: s.failed as number,
    replayed: s.replayed as number,
    refused: s.refused as number,
    cost_usd: s.cost_usd as number,
    tokens: usage.input_tokens + usage.output_tokens,
  };
}

function sum<T>(rows: readonly T[], of: (row: T) => number): number {
  return Math.round(rows.reduce((n, row) => n + of(row), 0) * 1e6) / 1e6;
}

Deno.test("each outcome is one kind and one by-provider row", () => {
  assert.equal(callKind("live"), "answered");
  assert.equal(callKind("succeeded"), "answered");
  assert.equal(callKind("timeout"), "failed");
  assert.equal(callKind("cancelled"), "failed");
  assert.equal(callKind("skipped"), "refused");
  assert.equal(callRow({ outcome: "replayed", provider: "fake" }), REPLAYED_ROW);
  assert.equal(callRow({ outcome: "skipped", provider: null }), NO_PROVIDER_ROW);
  assert.equal(callRow({ outcome: "failed", provider: null }), NO_PROVIDER_ROW);
  assert.equal(callRow({ outcome: "failed", provider: "flaky" }), "flaky");
});

Deno.test("the usage summary, stats, costs, pulse and svc history agree on a mix of calls", async () => {
  const flaky = recordingProvider("flaky", {
    answer: () => Promise.reject(new SvcError("internal", "Cannot dispatch to flaky: it failed")),
  });
  const priced = recordingProvider("priced", {
    answer: (request) =>
      Promise.resolve({
        output: `priced: ${request.prompt}`,
        usage: { input_tokens: 100, output_tokens: 200 },
        cost_usd: 0.25,
        provider: "priced",
        model: null,
      }),
  });
  await using d = await startDashboard({ providers: [flaky, priced] });
  // Three calls allowed: the fourth is refused before dispatch.
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: MIX, max_agents: 3 },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const sourceId = String(started.body.run_id);
  assert.equal((await ended(d, sourceId)).state, "succeeded");
  // The resume replays the two answered calls, asks the failed one again, is refused the fourth.
  const resumed = await d.json(`/api/workflow/${sourceId}/resume`, {
    token: TOKENS.alice,
    body: {},
  });
  assert.equal(resumed.status, 202, JSON.stringify(resumed.body));
  await ended(d, String(resumed.body.run_id));
  const task = await d.json("/api/dispatch", {
    token: TOKENS.alice,
    body: { prompt: "a task", fake_dispatch: true },
  });
  assert.ok(task.status < 300, JSON.stringify(task.body));
  await d.services.tasks.wait(String(task.body.task_id), { owner: "alice" });

  const summary = (await d.json("/api/usage/summary", { token: TOKENS.alice })).body;
  const expected: Figures = {
    calls: 9,
    failed: 2,
    replayed: 2,
    refused: 2,
    cost_usd: 0.25,
    tokens: figures(summary).tokens,
  };
  assert.deepEqual(figures(summary), expected, JSON.stringify(summary));
  assert.equal(summary.answered, 3, "one, two and the task");
  // The resume's replayed prefix is one record of the call log, counted as its two calls.
  const log = (await d.json("/api/history", { token: TOKENS.alice })).body;
  const replays = (log.calls as Array<{ outcome: string; seq: number; count?: number }>)
    .filter((c) => c.outcome === "replayed");
  assert.deepEqual(replays.map((c) => [c.seq, c.count]), [[1, 2]], JSON.stringify(log.calls));
  assert.equal((log.calls as unknown[]).length, 8, "nine calls in eight records");

  type Row = {
    provider: string;
    calls: number;
    failed: number;
    cost_usd: number;
    usage: { input_tokens: number; output_tokens: number };
  };
  const rows = summary.by_provider as Row[];
  assert.deepEqual(
    rows.map((r) => [r.provider, r.calls, r.failed]),
    [[REPLAYED_ROW, 2, 0], [NO_PROVIDER_ROW, 2, 0], ["fake", 2, 0], ["flaky", 2, 2], [
      "priced",
      1,
      0,
    ]].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );
  assert.equal(sum(rows, (r) => r.calls), expected.calls, "the rows sum to the calls");
  assert.equal(sum(rows, (r) => r.failed), expected.failed, "and to the failed ones");
  assert.equal(sum(rows, (r) => r.cost_usd), expected.cost_usd);
  assert.equal(
    sum(rows, (r) => r.usage.input_tokens + r.usage.output_tokens),
    expected.tokens,
  );
  type Day = { calls: number; cost_usd: number; providers: Array<{ calls: number }> };
  const days = summary.by_day as Day[];
  assert.equal(sum(days, (day) => day.calls), expected.calls);
  for (const day of days) assert.equal(sum(day.providers, (p) => p.calls), day.calls);

  const stats = (await d.json("/api/stats", { token: TOKENS.alice })).body;
  assert.deepEqual(figures(stats.calls as Record<string, unknown>), expected, "stats");

  const costs = (await d.json("/api/costs", { token: TOKENS.alice })).body;
  assert.equal(costs.cost_usd, expected.cost_usd);
  assert.deepEqual(
    (costs.by_provider as Row[]).map((r) => [r.provider, r.calls]),
    rows.map((r) => [r.provider, r.calls]),
  );
  type Spend = { calls: number; cost_usd: number; input_tokens: number; output_tokens: number };
  const byRun = costs.by_run as Array<{ runs: Spend[]; others: { calls: number } }>;
  assert.equal(
    sum(byRun, (day) => sum(day.runs, (r) => r.calls) + day.others.calls),
    expected.calls,
    "the runs and the task of each day sum to the calls",
  );
  const byHour = costs.by_hour as Spend[];
  assert.equal(sum(byHour, (h) => h.calls), expected.calls);
  assert.equal(sum(byHour, (h) => h.cost_usd), expected.cost_usd);
  assert.equal(sum(byHour, (h) => h.input_tokens + h.output_tokens), expected.tokens);

  const pulse = (await d.json("/api/pulse", { token: TOKENS.alice })).body;
  const day = (pulse.spend as { day: Record<string, number> }).day;
  assert.deepEqual(
    [day.calls, day.failed, day.replayed, day.refused, day.cost_usd, day.tokens],
    [expected.calls, expected.failed, expected.replayed, expected.refused, 0.25, expected.tokens],
    "the pulse's day",
  );

  const cli = await runCli(["history", "--json"], { home: d.home, env: { SVC_OWNER: "alice" } });
  assert.equal(cli.code, 0, cli.stderr);
  const fromCli = JSON.parse(cli.stdout).summary;
  assert.deepEqual(figures(fromCli), expected, "svc history");
  assert.deepEqual(fromCli.by_provider, summary.by_provider);
  const text = await runCli(["history"], { home: d.home, env: { SVC_OWNER: "alice" } });
  assert.match(text.stdout, /^9 calls: 3 answered, 2 failed, 2 replayed, 2 refused;/);
  assert.match(text.stdout, / 1-2 +\S+ +replayed /, "the replayed record's seqs as a range");

  // Bob's views count none of Alice's calls.
  const bob = (await d.json("/api/usage/summary", { token: TOKENS.bob })).body;
  assert.equal(bob.calls, 0);
  assert.deepEqual(bob.by_provider, []);
});

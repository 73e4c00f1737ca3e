import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { narration, runScript, scriptedProvider, testManager } from "./helpers.ts";

// A 40-character prompt costs 10 input tokens; the fake's answer adds 15 output tokens: 25 a call.
const PROMPT_40 = "p".repeat(40);
const CALL_TOKENS = 25;

Deno.test("the 201st agent() call returns null and the run records AgentLimitExceeded once", async () => {
  const status = await runScript(`
    const results = await parallel(Array.from({ length: 205 }, (_, i) => () => agent("call " + i)));
    return { ok: results.filter((r) => r !== null).length, nulls: results.filter((r) => r === null).length };
  `);
  assert.deepEqual(status.result, { ok: 200, nulls: 5 });
  const conditions = status.conditions.filter((c) => c.type === "AgentLimitExceeded");
  assert.equal(conditions.length, 1);
  assert.match(
    conditions[0]!.message,
    /limit of 200 agent\(\) calls; call #201 and later return null/,
  );
  assert.deepEqual([status.journal.live, status.journal.skipped], [200, 5]);
});

Deno.test("a per-provider semaphore is shared by every run, so one fan-out cannot take the whole quota", async () => {
  const provider = scriptedProvider("capped", () => ({ output: "ok", delayMs: 20 }));
  await using t = await testManager({
    dispatcher: createDispatcher({ providers: [provider], concurrency: { capped: 3 } }),
  });
  const script =
    `return (await parallel(Array.from({ length: 12 }, () => () => agent("x", { provider: "capped" })))).length;`;
  const runs = await Promise.all([t.manager.start({ script }), t.manager.start({ script })]);
  const ends = await Promise.all(runs.map((run) => t.manager.wait(run.run_id)));
  assert.deepEqual(ends.map((s) => s.result), [12, 12]);
  assert.equal(provider.calls, 24);
  assert.equal(provider.maxActive, 3, "never more than the provider's 3 permits across both runs");
});

Deno.test("without estimates the budget's overshoot stays within concurrency times the largest call", async () => {
  const cap = 60;
  const status = await runScript(
    `const r = await parallel(Array.from({ length: 20 }, () => () => agent("${PROMPT_40}")));
     return { answered: r.filter((x) => x !== null).length, spent: budget.spent(), total: budget.total, remaining: budget.remaining() };`,
    { budget_tokens: cap },
    { fakeLatencyMs: 20 },
  );
  const result = status.result as {
    answered: number;
    spent: number;
    total: number;
    remaining: number;
  };
  assert.equal(result.total, cap);
  // The first wave of 8 was admitted while nothing was committed, and calls that took a freed
  // permit saw only part of it committed: the cap is passed, by a bounded amount.
  assert.ok(result.answered >= 8, `${result.answered} calls answered`);
  assert.equal(result.spent, result.answered * CALL_TOKENS);
  assert.ok(result.spent > cap, "the gate is bounded, not exact");
  assert.ok(result.spent <= cap + 8 * CALL_TOKENS, `overshoot ${result.spent - cap} is too large`);
  assert.equal(result.remaining, 0);
  const exceeded = status.conditions.filter((c) => c.type === "BudgetExceeded");
  assert.equal(exceeded.length, 1, "recorded once");
  assert.match(
    exceeded[0]!.message,
    /^the budget of 60 tokens is reached: \d+ committed, \d+ reserved/,
  );
  assert.equal(exceeded[0]!.data?.first_refused_call, result.answered + 1);
  assert.deepEqual([status.journal.live, status.journal.skipped], [
    result.answered,
    20 - result.answered,
  ]);
  assert.equal(status.state, "succeeded");
});

Deno.test("with an estimate no smaller than the largest call the budget is never passed", async () => {
  const cap = 110;
  const status = await runScript(
    `const r = await parallel(Array.from({ length: 20 }, () => () => agent("${PROMPT_40}", { estimate: ${CALL_TOKENS} })));
     return r.filter((x) => x !== null).length;`,
    { budget_tokens: cap },
    { fakeLatencyMs: 20 },
  );
  assert.equal(status.result, 4, "four calls of 25 fit in 110; a fifth could pass it");
  assert.equal(status.budget.spent, 4 * CALL_TOKENS);
  assert.ok(status.budget.spent <= cap);
  assert.deepEqual(status.budget.tokens, { cap, committed: 100, reserved: 0 });
  assert.equal(status.conditions.filter((c) => c.type === "BudgetExceeded").length, 1);
});

Deno.test("a currency budget counts the providers' costs", async () => {
  await using t = await testManager({
    dispatcher: createDispatcher({ fakeLatencyMs: 0, fakeCostUsd: 0.25 }),
  });
  const run = await t.manager.start({
    script:
      `const out = []; for (let i = 0; i < 6; i++) out.push(await agent("c" + i)); return { out, spent: budget.spent(), unit: budget.unit };`,
    budget_usd: 1,
  });
  const status = await t.manager.wait(run.run_id);
  const result = status.result as { out: unknown[]; spent: number; unit: string };
  assert.deepEqual(result.out.map((x) => x !== null), [true, true, true, true, false, false]);
  assert.equal(result.spent, 1);
  assert.equal(result.unit, "usd");
  assert.equal(status.budget.total, 1);
  assert.equal(status.journal.usage.cost_usd, 1);
});

Deno.test("a call whose cost is unknown is unmetered, not free", async () => {
  const provider = scriptedProvider("unmetered", () => ({ output: "ok", costUsd: null }));
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const run = await t.manager.start({
    script: `return await agent("x", { provider: "unmetered" });`,
  });
  const status = await t.manager.wait(run.run_id);
  assert.equal(status.journal.usage.cost_usd, null);
  assert.equal((await t.manager.journal(run.run_id))[0]!.cost_usd, null);
});

Deno.test("budget.spent() and remaining() follow committed usage", async () => {
  const status = await runScript(
    `const before = [budget.spent(), budget.remaining()];
     await agent("${PROMPT_40}");
     return { before, after: [budget.spent(), budget.remaining()] };`,
    { budget_tokens: 1000 },
  );
  assert.deepEqual(status.result, { before: [0, 1000], after: [CALL_TOKENS, 1000 - CALL_TOKENS] });
});

Deno.test("a failed call is narrated and journaled with its reason", async () => {
  const status = await runScript(
    `return await agent("x", { provider: "missing", label: "lost" });`,
  );
  assert.deepEqual(narration(status, "call"), [
    "agent call #1 (lost) failed: Cannot dispatch: unknown provider 'missing' (configured: fake)",
  ]);
  assert.equal(status.journal.failed, 1);
});

import assert from "node:assert/strict";
import { defaultConfig } from "../src/config/mod.ts";
import {
  createDispatcher,
  type DispatchResult,
  type Provider,
  SpentFailure,
} from "../src/dispatch/mod.ts";
import { LOCAL, narration, runScript, scriptedProvider, testManager } from "./helpers.ts";

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
  const runs = await Promise.all([
    t.manager.start({ script }, LOCAL),
    t.manager.start({ script }, LOCAL),
  ]);
  const ends = await Promise.all(runs.map((run) => t.manager.wait(run.run_id, LOCAL)));
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
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
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
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.journal.usage.cost_usd, null);
  assert.equal((await t.manager.journal(run.run_id, LOCAL))[0]!.cost_usd, null);
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

/** Bytes of every value in the run's KV file, and how many values: what the ledger really holds. */
async function ledgerBytes(home: string): Promise<{ values: number; bytes: number }> {
  const kv = await Deno.openKv(`${home}/svc.kv`);
  try {
    let values = 0;
    let bytes = 0;
    for await (const entry of kv.list<Uint8Array>({ prefix: [] })) {
      values++;
      bytes += entry.value.length;
    }
    return { values, bytes };
  } finally {
    kv.close();
  }
}

// An invalid schema: compiling it throws a TypeError in the script, so a call over a limit
// that returns null proves that its schema was never compiled.
const BAD_SCHEMA = `{ type: "no such type" }`;

Deno.test("5,000 calls refused at the agent limit compile no schema and grow the ledger by a bounded amount", async () => {
  // Past the default of 1000 refused calls the run would stop: here the ledger's bound is tested.
  await using t = await testManager({ maxAgents: 2, maxRefusedCalls: 10_000 });
  const run = await t.manager.start({
    script: `await agent("a"); await agent("b");
      let nulls = 0;
      for (let i = 0; i < 5000; i++) {
        if (await agent("over " + i, { schema: ${BAD_SCHEMA}, label: "l".repeat(200) }) === null) nulls++;
      }
      return nulls;`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", status.error?.message);
  assert.equal(status.result, 5000);
  assert.equal(status.calls.skipped, 5000);
  assert.equal(status.calls.total, 5002);
  assert.deepEqual(
    [status.journal.calls, status.journal.live, status.journal.skipped, status.journal.omitted],
    [5002, 2, 5000, 4999],
  );
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => [e.seq, e.outcome]), [[1, "live"], [2, "live"], [
    3,
    "skipped",
  ]]);
  const { bytes } = await ledgerBytes(t.home);
  assert.ok(bytes < 64 * 1024, `the ledger holds ${bytes} bytes after 5,000 refused calls`);
});

Deno.test("5,000 calls refused by the budget compile no schema and grow the ledger by a bounded amount", async () => {
  await using t = await testManager({
    maxAgents: 10_000,
    maxRefusedCalls: 10_000,
    // The host's own default, past the operator's ceiling of a script's or a run's asking.
    admission: { maxRunAgents: 10_000 },
  });
  const run = await t.manager.start({
    script: `await agent("${PROMPT_40}");
      let nulls = 0;
      for (let i = 0; i < 5000; i++) {
        if (await agent("over " + i, { schema: ${BAD_SCHEMA} }) === null) nulls++;
      }
      return nulls;`,
    budget_tokens: CALL_TOKENS,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", status.error?.message);
  assert.equal(status.result, 5000);
  assert.deepEqual([status.calls.skipped, status.journal.omitted], [5000, 4999]);
  assert.equal(status.conditions.filter((c) => c.type === "BudgetExceeded").length, 1);
  assert.equal((await t.manager.journal(run.run_id, LOCAL)).length, 2);
  const { bytes } = await ledgerBytes(t.home);
  assert.ok(bytes < 64 * 1024, `the ledger holds ${bytes} bytes after 5,000 refused calls`);
});

Deno.test("a call under the limits still checks its schema: a bad one is a TypeError", async () => {
  const status = await runScript(
    `try { await agent("x", { schema: ${BAD_SCHEMA} }); return "no error"; } catch (e) { return e.name; }`,
  );
  assert.equal(status.result, "TypeError");
  assert.equal(status.calls.total, 0, "a call that threw takes no place in the sequence");
});

Deno.test("a resumed run replays up to the agent limit and refuses the same calls", async () => {
  await using t = await testManager({ maxAgents: 3 });
  const script =
    `const r = []; for (let i = 0; i < 6; i++) r.push(await agent("c" + i)); return r.map((x) => x !== null);`;
  const first = await t.manager.wait((await t.manager.start({ script }, LOCAL)).run_id, LOCAL);
  assert.deepEqual(first.result, [true, true, true, false, false, false]);
  const second = await t.manager.wait(
    (await t.manager.start({ script, resume_from: first.run_id }, LOCAL)).run_id,
    LOCAL,
  );
  assert.deepEqual(second.result, first.result);
  assert.deepEqual([second.calls.replayed, second.calls.skipped], [3, 3]);
  assert.deepEqual(
    (await t.manager.journal(second.run_id, LOCAL)).map((e) => e.outcome),
    ["replayed", "replayed", "replayed", "skipped"],
  );
});

Deno.test("past the run's journal limit a call's result is not recorded and does not reach the script", async () => {
  await using t = await testManager({ maxJournalBytes: 4000 });
  const run = await t.manager.start({
    script: `const r = [];
      for (let i = 0; i < 6; i++) r.push(await agent(i + "${"j".repeat(1000)}"));
      return r.map((x) => x === null ? null : x.length);`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  const result = status.result as Array<number | null>;
  const answered = result.filter((x) => x !== null).length;
  assert.ok(answered >= 1 && answered < 6, `${answered} answered`);
  assert.deepEqual(result.slice(answered), Array(6 - answered).fill(null));
  const condition = status.conditions.find((c) => c.type === "LedgerLimitExceeded");
  assert.match(condition!.message, /the run's journal reached its limit of 4000 bytes/);
  assert.equal(condition!.data?.first_refused_call, answered + 1);
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.equal(journal.length, 6, "the refused calls are journaled, without their results");
  for (const entry of journal.slice(answered)) {
    assert.equal(entry.outcome, "failed");
    assert.equal(entry.result, undefined);
    assert.equal(entry.usage.input_tokens > 0, true, "what the call spent is recorded");
  }
});

Deno.test("past the run's limit on result files a large result is not recorded and does not reach the script", async () => {
  await using t = await testManager({ maxBlobBytes: 100 * 1024 });
  const run = await t.manager.start({
    script: `const r = [];
      for (let i = 0; i < 3; i++) r.push(await agent(i + "${"b".repeat(60_000)}"));
      return r.map((x) => x === null ? null : x.length);`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.result, [60_019, null, null]);
  assert.match(
    status.conditions.find((c) => c.type === "LedgerLimitExceeded")!.message,
    /the run's result files reached their limit of 102400 bytes/,
  );
  assert.equal([...Deno.readDirSync(`${t.home}/runs/${run.run_id}/blobs`)].length, 1);
});

/** A configuration giving `name` a price table (USD per million tokens). */
function pricedConfig(name: string, price: { input_per_mtok: number; output_per_mtok: number }) {
  const config = defaultConfig();
  config.providers[name] = {
    type: "openai",
    model: "m",
    base_url: "http://127.0.0.1:9/v1",
    api_key_env: "UNUSED_KEY",
    price,
  };
  return config;
}

Deno.test("under a currency budget a call to a provider without a price is refused, naming it", async () => {
  const provider = scriptedProvider("unpriced", () => ({ output: "ok", costUsd: null }));
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const run = await t.manager.start({
    script: `const r = [];
      for (let i = 0; i < 20; i++) r.push(await agent("c" + i, { provider: "unpriced", estimate: 0.0000001 }));
      return r.filter((x) => x !== null).length;`,
    budget_usd: 0.000001,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.result, 0);
  assert.equal(provider.calls, 0, "nothing was sent");
  const [condition] = status.conditions.filter((c) => c.type === "UnpricedCall");
  assert.match(
    condition!.message,
    /^Cannot dispatch to unpriced under a currency budget: it has no price; configure providers\.unpriced\.price/,
  );
  assert.equal(condition!.data?.provider, "unpriced");
  assert.deepEqual([status.calls.skipped, status.journal.omitted], [20, 19]);
  assert.equal(status.budget.usd.committed, 0);
  assert.equal(status.budget.usd.reserved, 0, "the refused calls' reservations are freed");
});

Deno.test("under a currency budget a provider's price table prices every call from its usage", async () => {
  // 10 + 10 tokens a call at $1 and $3 per million: $0.00004 a call.
  const provider = scriptedProvider("priced", () => ({ output: "ok", costUsd: null }));
  await using t = await testManager({
    dispatcher: createDispatcher({
      providers: [provider],
      config: pricedConfig("priced", { input_per_mtok: 1, output_per_mtok: 3 }),
    }),
  });
  const run = await t.manager.start({
    script: `const r = [];
      for (let i = 0; i < 5; i++) r.push(await agent("c" + i, { provider: "priced" }));
      return r.map((x) => x !== null);`,
    budget_usd: 0.0001,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.result, [true, true, true, false, false]);
  assert.equal(provider.calls, 3);
  assert.equal(status.budget.usd.committed, 0.00012);
  assert.equal(Math.round(status.journal.usage.cost_usd! * 1e9) / 1e9, 0.00012);
  assert.deepEqual(
    (await t.manager.journal(run.run_id, LOCAL)).map((e) => e.cost_usd),
    [0.00004, 0.00004, 0.00004, 0],
  );
  assert.equal(status.conditions.filter((c) => c.type === "BudgetExceeded").length, 1);
});

Deno.test("fake dispatch under a currency budget is priced by the fake's configured cost", async () => {
  const status = await runScript(`return await agent("x");`, {
    budget_usd: 0.000001,
    fake_dispatch: true,
  });
  assert.equal(status.result, "fake response to: x");
  assert.deepEqual(status.conditions, []);
});

Deno.test("a failed call that reported its usage counts its tokens and priced cost against the budget", async () => {
  const failing: Provider = {
    name: "spender",
    kind: "api",
    dispatch() {
      return Promise.reject(
        new SpentFailure("provider_failed", "Cannot finish: the model stopped", {
          usage: { input_tokens: 300, output_tokens: 700 },
        }),
      );
    },
  };
  await using t = await testManager({
    dispatcher: createDispatcher({
      providers: [failing],
      config: pricedConfig("spender", { input_per_mtok: 10, output_per_mtok: 10 }),
    }),
  });
  const run = await t.manager.start({
    script: `const a = await agent("x", { provider: "spender" });
      const b = await agent("y", { provider: "spender" });
      return [a, b, budget.spent()];`,
    budget_tokens: 1000,
    budget_usd: 1,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.result, [null, null, 1000]);
  assert.equal(status.budget.usd.committed, 0.01);
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.deepEqual(journal[0]!.usage, { input_tokens: 300, output_tokens: 700 });
  assert.equal(journal[0]!.cost_usd, 0.01);
  assert.equal(journal[1]!.outcome, "skipped", "the first failure used up the token budget");
});

Deno.test("a failed call whose use is unknown counts its estimate against the budget", async () => {
  const failing: Provider = {
    name: "silent",
    kind: "api",
    dispatch: () => Promise.reject(new Error("boom")),
  };
  await using t = await testManager({
    dispatcher: createDispatcher({
      providers: [failing],
      config: pricedConfig("silent", { input_per_mtok: 1, output_per_mtok: 1 }),
    }),
  });
  const run = await t.manager.start({
    script: `await agent("x", { provider: "silent", estimate: { tokens: 400, usd: 0.5 } });
      return budget.spent();`,
    budget_tokens: 1000,
    budget_usd: 1,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.result, 400);
  assert.equal(status.budget.usd.committed, 0.5);
  assert.equal(
    (await t.manager.journal(run.run_id, LOCAL))[0]!.cost_usd,
    null,
    "recorded as unknown",
  );
});

/**
 * A provider whose calls wait until `peak` of them are in flight at once (or 5 s pass), then
 * answer: the highest number in flight is the run's cap however slowly the machine starts
 * them, and a cap below `peak` shows as a lower `maxActive`.
 */
function peakProvider(): Provider & { maxActive: number; peak: number; reached: boolean } {
  let active = 0;
  let release: () => void = () => {};
  let gate = new Promise<void>((resolve) => release = resolve);
  const provider = {
    name: "slow",
    kind: "api" as const,
    maxActive: 0,
    peak: 0,
    reached: false,
    async dispatch(): Promise<DispatchResult> {
      active++;
      provider.maxActive = Math.max(provider.maxActive, active);
      if (active >= provider.peak && !provider.reached) {
        provider.reached = true;
        release();
        gate = new Promise<void>((resolve) => release = resolve);
      }
      if (!provider.reached) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([gate, new Promise((resolve) => timer = setTimeout(resolve, 5_000))]);
        clearTimeout(timer);
      }
      active--;
      return {
        output: "ok",
        usage: { input_tokens: 10, output_tokens: 10 },
        cost_usd: 0,
        provider: "slow",
        model: "slow-model",
      };
    },
  };
  return provider;
}

Deno.test("a run's max_agents and concurrency bound that run, and the manager's defaults the others", async () => {
  const provider = peakProvider();
  provider.peak = 2;
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const script =
    `const r = await parallel(Array.from({ length: 12 }, (_, i) => () => agent("c" + i, { provider: "slow" })));
    return r.filter((x) => x !== null).length;`;
  const bounded = await t.manager.wait(
    (await t.manager.start({ script, max_agents: 5, concurrency: 2 }, LOCAL)).run_id,
    LOCAL,
  );
  assert.equal(bounded.result, 5);
  assert.equal(provider.maxActive, 2, "never more than the run's 2 calls at once");
  assert.deepEqual(bounded.limits, { max_agents: 5, concurrency: 2 });
  assert.equal(bounded.calls.skipped, 7);
  assert.match(bounded.conditions[0]!.message, /limit of 5 agent\(\) calls; call #6/);
  Object.assign(provider, { maxActive: 0, peak: 8, reached: false });
  const defaults = await t.manager.wait((await t.manager.start({ script }, LOCAL)).run_id, LOCAL);
  assert.equal(defaults.result, 12);
  assert.equal(provider.maxActive, 8);
  assert.deepEqual(defaults.limits, { max_agents: 200, concurrency: 8 });
});

Deno.test("max_agents above 1000 and concurrency above 64 or below 1 are refused before the run starts", async () => {
  await using t = await testManager();
  const refusal = async (request: Record<string, unknown>) => {
    try {
      await t.manager.start({ script: `return 1;`, ...request }, LOCAL);
      return "started";
    } catch (error) {
      return (error as Error).message;
    }
  };
  assert.match(await refusal({ max_agents: 1001 }), /^Cannot start the run: .*max_agents/);
  assert.match(await refusal({ max_agents: 0 }), /^Cannot start the run: .*max_agents/);
  assert.match(await refusal({ concurrency: 65 }), /^Cannot start the run: .*concurrency/);
  assert.match(await refusal({ concurrency: 2.5 }), /^Cannot start the run: .*concurrency/);
  assert.equal(await refusal({ max_agents: 1000, concurrency: 64 }), "started");
});

Deno.test("a script that keeps calling agent() past the agent limit fails with agent_limit_exceeded, not by its timeout", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script: `while (true) await agent("x");`,
    max_agents: 5,
    timeout: 3600,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "failed");
  assert.equal(status.error?.code, "agent_limit_exceeded");
  assert.equal(
    status.error?.message,
    "AgentLimitExceeded: the script kept calling agent() after its calls were refused: 1001 refused calls, over the limit of 1000 a run (the last: over the limit of 5 agent() calls per run)",
  );
  assert.deepEqual([status.calls.succeeded, status.calls.skipped], [5, 1001]);
  assert.deepEqual(status.failures, { agent_limit: 1001 });
});

Deno.test("catching errors does not keep a loop over refused calls alive, and budget refusals count too", async () => {
  await using t = await testManager({ maxRefusedCalls: 50 });
  const run = await t.manager.start({
    script: `while (true) { try { await agent("${PROMPT_40}"); } catch {} }`,
    budget_tokens: CALL_TOKENS,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "failed");
  assert.equal(status.error?.code, "agent_limit_exceeded");
  assert.match(
    status.error!.message,
    /51 refused calls, over the limit of 50 a run \(the last: the budget of 25 tokens is reached/,
  );
  assert.deepEqual(status.failures, { budget: 51 });
});

Deno.test("a fan-out of refused calls below the bound still succeeds with nulls", async () => {
  const status = await runScript(
    `const r = await parallel(Array.from({ length: 300 }, (_, i) => () => agent("c" + i)));
     return r.filter((x) => x === null).length;`,
    { max_agents: 10 },
  );
  assert.equal(status.state, "succeeded", status.error?.message);
  assert.equal(status.result, 290);
  assert.deepEqual(status.failures, { agent_limit: 290 });
});

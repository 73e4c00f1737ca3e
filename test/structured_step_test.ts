import assert from "node:assert/strict";
import {
  createDispatcher,
  type DispatchOutcome,
  type DispatchRequest,
  type Provider,
  SpentFailure,
  stepCost,
  structuredStep,
} from "../src/dispatch/mod.ts";
import { SchemaRegistry } from "../src/structured/mod.ts";
import { SessionStore, TaskManager } from "../src/tasks/mod.ts";
import { openLedger } from "../src/ledger/mod.ts";
import { LOCAL, tempDir, testManager } from "./helpers.ts";

const VERDICT = {
  type: "object",
  properties: { ok: { type: "boolean" } },
  required: ["ok"],
};

/**
 * A provider whose first answer to a prompt is not JSON and whose second attempt fails after
 * spending: each attempt uses 10 + 5 tokens and costs 0.25 USD.
 */
function spender(): Provider {
  const attempts = new Map<string, number>();
  return {
    name: "spender",
    kind: "api",
    probe: () => Promise.resolve({ available: true, reason: "ok" }),
    dispatch(request: DispatchRequest) {
      const attempt = (attempts.get(request.prompt) ?? 0) + 1;
      attempts.set(request.prompt, attempt);
      const usage = { input_tokens: 10, output_tokens: 5 };
      if (attempt > 1) {
        return Promise.reject(
          new SpentFailure("provider_failed", "Cannot answer: the model broke off", {
            usage,
            cost_usd: 0.25,
          }),
        );
      }
      return Promise.resolve({
        output: "not json",
        usage,
        cost_usd: 0.25,
        provider: "spender",
        model: "spender-model",
      });
    },
  };
}

function outcome(output: string, cost: number | null): DispatchOutcome {
  return {
    output,
    usage: { input_tokens: 3, output_tokens: 4 },
    cost_usd: cost,
    provider: "p",
    model: "m",
    route: { provider: "p", model: "m", reason: "asked for" },
    sandbox: "read-only",
    sandbox_clamped: null,
  };
}

Deno.test("the structured step sums every attempt, keeps the valid value, and knows an unknown cost", async () => {
  const schema = await new SchemaRegistry([]).compile(VERDICT);
  const answers = [outcome("nope", 1), outcome('{"ok": true}', null)];
  const asked: unknown[] = [];
  const step = await structuredStep(schema, {
    attempts: 3,
    options: { label: "judge" } as { label: string; schema?: unknown },
    once(options) {
      asked.push(options);
      return Promise.resolve(answers.shift()!);
    },
  });
  assert.ok(step.ok);
  assert.deepEqual(step.value, { ok: true });
  assert.equal(step.attempts, 2);
  assert.deepEqual(step.outcome.usage, { input_tokens: 6, output_tokens: 8 });
  assert.equal(step.outcome.cost_usd, null, "one attempt's cost is unknown");
  assert.equal(step.spent.cost_usd, 1, "the known part is kept for the budget");
  assert.deepEqual(asked, [
    { label: "judge", schema: VERDICT },
    { label: "judge", schema: VERDICT },
  ]);
});

Deno.test("the structured step returns its failures with what the attempts spent; without a schema it asks once", async () => {
  const schema = await new SchemaRegistry([]).compile(VERDICT);
  const invalid = await structuredStep(schema, {
    attempts: 2,
    options: {},
    once: () => Promise.resolve(outcome("[1]", 0.5)),
  });
  assert.ok(!invalid.ok && invalid.reason === "invalid");
  assert.deepEqual(invalid.problems, ["(root) must be object"]);
  assert.equal(invalid.attempts, 2);
  assert.equal(stepCost(invalid.spent), 1);
  assert.deepEqual(invalid.last.usage, { input_tokens: 6, output_tokens: 8 });

  const thrown = new Error("boom");
  const failed = await structuredStep(undefined, {
    attempts: 3,
    options: {},
    once: () => Promise.reject(thrown),
  });
  assert.ok(!failed.ok && failed.reason === "error");
  assert.equal(failed.error, thrown);
  assert.equal(failed.attempts, 1);
  assert.equal(stepCost(failed.spent), 0, "nothing ran at a provider: nothing spent");

  let calls = 0;
  const plain = await structuredStep(undefined, {
    attempts: 3,
    options: {},
    once: () => (calls++, Promise.resolve(outcome("not json, and no schema asks for it", 0))),
  });
  assert.ok(plain.ok);
  assert.equal(plain.value, "not json, and no schema asks for it");
  assert.equal(calls, 1);
});

Deno.test("a workflow agent() call whose provider fails on a retry pays for every attempt", async () => {
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [spender()] }) });
  const run = await t.manager.start({
    script: `return await agent("judge", { provider: "spender", schema: ${
      JSON.stringify(VERDICT)
    } });`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.result, null);
  const [entry] = await t.manager.journal(run.run_id, LOCAL);
  assert.equal(entry?.outcome, "failed");
  assert.equal(entry?.attempts, 2);
  assert.deepEqual(entry?.usage, { input_tokens: 20, output_tokens: 10 });
  assert.equal(entry?.cost_usd, 0.5);
});

Deno.test("a dispatched task whose provider fails on a retry pays for every attempt, as a run's call does", async () => {
  await using home = await tempDir();
  const ledger = await openLedger(home.path);
  const tasks = new TaskManager({
    dispatcher: createDispatcher({ providers: [spender()] }),
    ledger,
    sessions: new SessionStore(ledger),
  });
  try {
    const started = await tasks.start(
      { prompt: "judge", provider: "spender", schema: VERDICT },
      LOCAL,
    );
    const task = await tasks.wait(started.task_id, LOCAL);
    assert.equal(task.state, "failed");
    assert.equal(task.error?.message, "Cannot answer: the model broke off");
    assert.deepEqual(task.usage, { input_tokens: 20, output_tokens: 10 });
    assert.equal(task.cost_usd, 0.5);
  } finally {
    await tasks.close();
    ledger.close();
  }
});

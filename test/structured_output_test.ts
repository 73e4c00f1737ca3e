import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { countingDispatcher, runScript, scriptedProvider, testManager } from "./helpers.ts";

const VERDICT = {
  type: "object",
  properties: { ok: { type: "boolean" } },
  required: ["ok"],
  additionalProperties: false,
};

Deno.test("schema_id names a registered schema: the project's schemas folder first, then SVC_HOME's", async () => {
  await using t = await testManager();
  await Deno.mkdir(`${t.home}/project/schemas`, { recursive: true });
  await Deno.mkdir(`${t.home}/schemas`, { recursive: true });
  await Deno.writeTextFile(
    `${t.home}/project/schemas/verdict.json`,
    JSON.stringify({ ...VERDICT, properties: { ok: { const: false } } }),
  );
  await Deno.writeTextFile(`${t.home}/schemas/verdict.json`, JSON.stringify(VERDICT));
  await Deno.writeTextFile(
    `${t.home}/schemas/home_only.json`,
    JSON.stringify({ enum: ["from home"] }),
  );
  const run = await t.manager.start({
    script:
      `return [await agent("judge", { schema_id: "verdict" }), await agent("x", { schema_id: "home_only" })];`,
    workdir: `${t.home}/project`,
  });
  const status = await t.manager.wait(run.run_id);
  assert.deepEqual(status.result, [{ ok: false }, "from home"]);
});

Deno.test("an unknown schema_id or a schema ajv cannot compile throws before any dispatch", async () => {
  const dispatcher = countingDispatcher();
  await using t = await testManager({ dispatcher });
  const run = await t.manager.start({
    script: `
      const seen = [];
      for (const opts of [{ schema_id: "nope" }, { schema: { type: "objekt" } }, { schema_id: "../etc/passwd" }]) {
        try { await agent("x", opts); seen.push("accepted"); } catch (e) { seen.push(e.name + ": " + e.message); }
      }
      return seen;`,
  });
  const seen = (await t.manager.wait(run.run_id)).result as string[];
  assert.match(
    seen[0]!,
    /^TypeError: agent\(\): no registered schema 'nope' \(looked in .*\/schemas, .*\/schemas\)$/,
  );
  assert.match(
    seen[1]!,
    /^TypeError: agent\(\): option 'schema' cannot be compiled: schema is invalid: data\/type/,
  );
  assert.match(
    seen[2]!,
    /^TypeError: agent\(\): option 'schema_id' '\.\.\/etc\/passwd' is not a valid schema id$/,
  );
  assert.equal(dispatcher.count(), 0);
});

Deno.test("a result that fails validation is retried; a valid attempt is the call's value", async () => {
  const provider = scriptedProvider("flaky", (_prompt, attempt) => ({
    output: attempt < 3 ? "not json at all" : '```json\n{"ok": true}\n```',
  }));
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const run = await t.manager.start({
    script: `return await agent("judge", { provider: "flaky", schema: ${
      JSON.stringify(VERDICT)
    } });`,
  });
  const status = await t.manager.wait(run.run_id);
  assert.deepEqual(status.result, { ok: true });
  const [entry] = await t.manager.journal(run.run_id);
  assert.equal(entry!.attempts, 3);
  assert.deepEqual(
    entry!.usage,
    { input_tokens: 30, output_tokens: 30 },
    "every attempt is paid for",
  );
  assert.deepEqual(status.conditions, []);
});

Deno.test("after the last failed attempt the call returns null and SchemaValidationFailed carries the errors", async () => {
  const provider = scriptedProvider("wrong", () => ({ output: { ok: "yes", extra: 1 } }));
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const run = await t.manager.start({
    script: `return await agent("judge", { provider: "wrong", label: "judge", schema: ${
      JSON.stringify(VERDICT)
    } });`,
    schema_attempts: 2,
  });
  const status = await t.manager.wait(run.run_id);
  assert.equal(status.state, "succeeded");
  assert.equal(status.result, null);
  assert.equal(provider.calls, 2);
  const [condition] = status.conditions;
  assert.equal(condition?.type, "SchemaValidationFailed");
  assert.match(
    condition!.message,
    /call #1 \(judge\) returned no valid result in 2 attempts: .*\/ok must be boolean/,
  );
  assert.match(String(condition!.data?.errors), /must NOT have additional properties/);
  assert.equal(status.journal.failed, 1);
});

Deno.test("the fake provider answers schema calls with valid instances", async () => {
  const status = await runScript(
    `return await agent("x", { schema: ${JSON.stringify(VERDICT)} });`,
  );
  assert.deepEqual(status.result, { ok: true });
});

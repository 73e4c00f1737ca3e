import assert from "node:assert/strict";
import { Ajv } from "ajv";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { SchemaRegistry, structuredValue, SUBSCHEMA_KEYWORDS } from "../src/structured/mod.ts";
import {
  countingDispatcher,
  LOCAL,
  narration,
  runScript,
  scriptedProvider,
  testManager,
} from "./helpers.ts";

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
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.result, [{ ok: false }, "from home"]);
});

Deno.test("a registered schema that is not a schema names its folder by role, never a host path", async () => {
  await using t = await testManager();
  await Deno.mkdir(`${t.home}/project/schemas`, { recursive: true });
  await Deno.mkdir(`${t.home}/schemas`, { recursive: true });
  await Deno.writeTextFile(`${t.home}/project/schemas/broken.json`, "{not json");
  await Deno.writeTextFile(`${t.home}/schemas/listed.json`, "[1]");
  const run = await t.manager.start({
    script: `
      const seen = [];
      for (const id of ["broken", "listed"]) {
        try { await agent("x", { schema_id: id }); } catch (e) { seen.push(e.message); }
      }
      return seen;`,
    workdir: `${t.home}/project`,
  }, LOCAL);
  assert.deepEqual((await t.manager.wait(run.run_id, LOCAL)).result, [
    "agent(): schema 'broken' (in the project's schemas/ folder) is not valid JSON",
    "agent(): schema 'listed' (in svc's saved schemas) is not a JSON Schema object",
  ]);
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
  }, LOCAL);
  const seen = (await t.manager.wait(run.run_id, LOCAL)).result as string[];
  assert.match(
    seen[0]!,
    /^TypeError: agent\(\): no registered schema 'nope' \(looked in the project's schemas\/ folder, svc's saved schemas\)$/,
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
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.result, { ok: true });
  const [entry] = await t.manager.journal(run.run_id, LOCAL);
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
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
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

/** Resolves to "settled" when `work` ends, or "stuck" after `ms` (a generous bound, not a timing check). */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<"settled" | "stuck"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise<"stuck">((resolve) => timer = setTimeout(() => resolve("stuck"), ms));
  try {
    return await Promise.race([work.then(() => "settled" as const), stuck]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("a catastrophically backtracking pattern cannot hold the host: the answer is checked in linear time", async () => {
  // A backtracking engine takes 2^40 steps on this answer; the host would hang for hours.
  const answer = `${"a".repeat(40)}b`;
  const provider = scriptedProvider("fixed", () => ({ output: JSON.stringify(answer) }));
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const run = await t.manager.start({
    script:
      `return await agent("x", { provider: "fixed", schema: { type: "string", pattern: "^(a+)+$" } });`,
    schema_attempts: 1,
  }, LOCAL);
  assert.equal(await settlesWithin(t.manager.wait(run.run_id, LOCAL), 60_000), "settled");
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.result, null);
  assert.match(status.conditions[0]!.message, /must match pattern "\^\(a\+\)\+\$"/);
});

Deno.test("an oversized schema, a pattern re2 cannot run and a $ref out of the schema are script errors before any dispatch", async () => {
  const dispatcher = countingDispatcher();
  await using t = await testManager({ dispatcher });
  const run = await t.manager.start({
    script: `
      const big = { enum: Array.from({ length: 20000 }, (_, i) => "value-" + i) };
      const seen = [];
      for (const schema of [big, { pattern: "(a)" + String.fromCharCode(92) + "1" }, { pattern: "a(?=b)" }, { $ref: "https://example.com/s.json" }]) {
        try { await agent("x", { schema }); seen.push("accepted"); } catch (e) { seen.push(e.name + ": " + e.message); }
      }
      return seen;`,
  }, LOCAL);
  const seen = (await t.manager.wait(run.run_id, LOCAL)).result as string[];
  assert.match(
    seen[0]!,
    /^TypeError: agent\(\): option 'schema' is \d+ bytes as JSON, over the limit of 65536$/,
  );
  assert.match(
    seen[1]!,
    /^TypeError: .*pattern "\(a\)\\\\1" that cannot be compiled as a linear-time \(RE2\) expression/,
  );
  assert.match(seen[2]!, /^TypeError: .*pattern "a\(\?=b\)" that cannot be compiled/);
  assert.match(seen[3]!, /^TypeError: .*only local references/);
  assert.equal(dispatcher.count(), 0);
});

Deno.test("a schema whose references branch exponentially fails validation at the work limit", async () => {
  const registry = new SchemaRegistry([]);
  // Every level validates the next one twice: 2^40 evaluations on a 40-deep answer.
  const schema = {
    $defs: {
      n: {
        anyOf: [
          { allOf: [{ items: { $ref: "#/$defs/n" } }, false] },
          { items: { $ref: "#/$defs/n" } },
        ],
      },
    },
    $ref: "#/$defs/n",
  };
  let answer: unknown = [];
  for (let i = 0; i < 40; i++) answer = [answer];
  const errors = (await registry.compile(schema)).check(answer as never);
  assert.deepEqual(errors, [
    "(root) cannot be validated: checking it against the schema takes more than 1000000 work units",
  ]);
  assert.equal(
    (await registry.compile(schema)).check([[[]]]),
    null,
    "a shallow answer still validates",
  );
});

Deno.test("uniqueItems over a large array of untyped items is checked in linear time", async () => {
  const registry = new SchemaRegistry([]);
  const schema = await registry.compile({ type: "array", uniqueItems: true });
  // ajv's own check compares every pair: 2 * 10^10 deep comparisons.
  assert.equal(schema.check(Array.from({ length: 200_000 }, (_, i) => [i])), null);
  assert.deepEqual(schema.check([{ a: 1, b: [2] }, { b: [2], a: 1 }]), [
    "(root) must NOT have duplicate items",
  ]);
});

Deno.test("a fenced answer is found by scanning: a long run of newlines after a fence takes linear time", () => {
  assert.deepEqual(structuredValue('Here:\n```json\n{"ok": true}\n```\nDone.'), { ok: true });
  assert.deepEqual(structuredValue("````\n[1]\n```"), [1]);
  // The former regex backtracked quadratically here: hours for four million characters.
  const text = `\`\`\`${"\n".repeat(4_000_000)}x`;
  assert.equal(structuredValue(text), text);
});

Deno.test("the fake provider refuses a schema that asks for more than its limits: the call fails with a provider error", async () => {
  // Each level holds eight of the one below: 8^7, two million leaves.
  const defs: Record<string, unknown> = { l0: { type: "string" } };
  const names = ["a", "b", "c", "d", "e", "f", "g", "h"];
  for (let i = 1; i <= 7; i++) {
    defs[`l${i}`] = {
      type: "object",
      properties: Object.fromEntries(names.map((n) => [n, { $ref: `#/$defs/l${i - 1}` }])),
      required: names,
    };
  }
  const schemas = [
    { type: "string", minLength: 2_000_000 },
    { type: "array", minItems: 200_000 },
    { $defs: defs, $ref: "#/$defs/l7" },
  ];
  const status = await runScript(
    `const out = [];
     for (const schema of ${JSON.stringify(schemas)}) out.push(await agent("x", { schema }));
     return out;`,
    { fake_dispatch: true, schema_attempts: 1 },
  );
  assert.equal(status.state, "succeeded");
  assert.deepEqual(status.result, [null, null, null]);
  const failures = narration(status, "call");
  assert.match(
    failures[0]!,
    /Cannot answer with the fake provider: the schema asks for a string of at least 2000000 characters, over its limit of 100000/,
  );
  assert.match(failures[1]!, /an array of at least 200000 items, over its limit of 10000/);
  assert.match(failures[2]!, /an answer of more than a million characters and values/);
});

Deno.test("every keyword ajv applies to subschemas is metered: the schema walk knows them all", () => {
  const ajv = new Ajv({ strict: false });
  const all = (ajv as unknown as { RULES: { all: Record<string, unknown> } }).RULES.all;
  for (const keyword of Object.keys(all)) {
    const definition = ajv.getKeyword(keyword);
    const types = typeof definition === "object" ? [definition.schemaType ?? []].flat() : [];
    if (types.includes("object")) {
      assert.ok(SUBSCHEMA_KEYWORDS.has(keyword), `${keyword} holds subschemas but is not walked`);
    }
  }
  for (const keyword of ["allOf", "anyOf", "oneOf", "$defs", "definitions"]) {
    assert.ok(SUBSCHEMA_KEYWORDS.has(keyword), keyword);
  }
});

Deno.test("a pattern's size is its compiled re2 program: a counted repeat over the limit is refused", async () => {
  const registry = new SchemaRegistry([]);
  await assert.rejects(
    () => registry.compile({ pattern: "x{1000}".repeat(11) }),
    /pattern "x\{1000\}x\{1000\}.*" that compiles to 1100\d instructions, over the limit of 10000/,
  );
  assert.equal((await registry.compile({ pattern: "^x{1000}$" })).check("x".repeat(1000)), null);
});

Deno.test("the fake provider fills a property whose name is empty: its seed is not repeated for ever", async () => {
  const schema = {
    type: "object",
    properties: { "": { type: "string", minLength: 3 } },
    required: [""],
  };
  const status = await runScript(`return await agent("x", { schema: ${JSON.stringify(schema)} });`);
  assert.deepEqual(status.result, { "": "xxx" });
});

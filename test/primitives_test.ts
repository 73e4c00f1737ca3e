import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { LOCAL, narration, runScript, scriptedProvider, testManager } from "./helpers.ts";

Deno.test("the body runs as an async function: top-level await and return give the product", async () => {
  const status = await runScript(`const a = await agent("hello");\nreturn { a, n: 2 };`, {
    fake_dispatch: true,
  });
  assert.equal(status.state, "succeeded");
  assert.deepEqual(status.result, { a: "fake response to: hello", n: 2 });
});

Deno.test("a script that returns nothing has the product null", async () => {
  const status = await runScript(`log("no return");`);
  assert.equal(status.state, "succeeded");
  assert.equal(status.result, null);
});

Deno.test("agent() returns an object valid against the schema for schema calls", async () => {
  const status = await runScript(`
    return await agent("classify", { schema: {
      type: "object",
      properties: { kind: { enum: ["bug", "feature"] }, score: { type: "integer", minimum: 3 }, tags: { type: "array", items: { type: "string" }, minItems: 2 } },
      required: ["kind", "score", "tags"],
    } });
  `);
  assert.deepEqual(status.result, { kind: "bug", score: 3, tags: ["tags-0", "tags-1"] });
});

Deno.test("agent() returns null when the call fails, and the script goes on", async () => {
  const status = await runScript(`
    const r = await agent("x", { provider: "nowhere", label: "lost" });
    return { r, after: await agent("y") };
  `);
  assert.equal(status.state, "succeeded");
  assert.deepEqual(status.result, { r: null, after: "fake response to: y" });
  assert.equal(status.calls.failed, 1);
  assert.equal(status.calls.succeeded, 1);
  assert.deepEqual(narration(status, "call"), [
    "agent call #1 (lost) failed: Cannot dispatch: unknown provider 'nowhere' (configured: fake)",
  ]);
});

Deno.test("agent() throws a TypeError naming a wrongly typed option, and dispatches what Claude Code would", async () => {
  const status = await runScript(`
    const seen = [];
    for (const opts of [{ labl: "x" }, { sandbox: "rw" }, { schema: {}, schema_id: "s" }, "str"]) {
      try { await agent("p", opts); seen.push("no error"); } catch (e) { seen.push(e.name + ": " + e.message); }
    }
    try { await agent(42); } catch (e) { seen.push(e.name + ": " + e.message); }
    return seen;
  `);
  const seen = status.result as string[];
  assert.equal(seen[0], "no error", "an unknown option is dropped, with a warning");
  assert.match(seen[1]!, /^TypeError: agent\(\): option 'sandbox' invalid option/);
  assert.match(
    seen[2]!,
    /^TypeError: agent\(\): .*'schema' and 'schema_id' are mutually exclusive/,
  );
  assert.equal(seen[3], "no error", "options that are no object count as none, with a warning");
  assert.equal(seen[4], "TypeError: agent(): prompt must be a string, got number");
  assert.equal(status.calls.total, 2, "only the refused calls are never dispatched");
});

Deno.test("an uncaught TypeError from agent() fails the run at the script's line", async () => {
  const status = await runScript(`log("start");\nawait agent("p", { sandbox: "rw" });`);
  assert.equal(status.state, "failed");
  assert.equal(status.error?.code, "script_error");
  assert.match(
    status.error?.message ?? "",
    /^TypeError: agent\(\): option 'sandbox' invalid option: .* \(script\.js:2:7\)$/,
  );
  assert.equal(status.error?.column, 7);
  assert.equal(status.error?.line, 2);
});

Deno.test("parallel() is a barrier that never rejects and puts null where a thunk throws", async () => {
  const status = await runScript(`
    const results = await parallel([
      () => agent("a"),
      () => { throw new Error("boom"); },
      async () => { await agent("b"); throw new Error("late boom"); },
      () => 7,
    ]);
    return results;
  `);
  assert.deepEqual(status.result, ["fake response to: a", null, null, 7]);
});

Deno.test("parallel() refuses a non-array, a non-function item and more than 4096 thunks", async () => {
  const status = await runScript(`
    const seen = [];
    for (const bad of [() => parallel("x"), () => parallel([1]), () => parallel(new Array(4097).fill(() => 1))]) {
      try { bad(); seen.push("accepted"); } catch (e) { seen.push(e.name + ": " + e.message); }
    }
    seen.push((await parallel(new Array(4096).fill(() => 1))).length);
    return seen;
  `);
  assert.deepEqual(status.result, [
    "TypeError: parallel() expects an array of functions, got string",
    "TypeError: parallel(): item 0 must be a function, got number",
    "RangeError: parallel() takes at most 4096 thunks, got 4097",
    4096,
  ]);
});

Deno.test("pipeline() passes (previous, item, index) and keeps results in item order", async () => {
  const status = await runScript(`
    return await pipeline(["a", "b", "c"],
      (prev, item, i) => prev + ":" + item + ":" + i,
      (prev, item, i) => agent(prev).then((r) => r + "|" + i));
  `);
  assert.deepEqual(status.result, [
    "fake response to: a:a:0|0",
    "fake response to: b:b:1|1",
    "fake response to: c:c:2|2",
  ]);
});

Deno.test("pipeline() makes a throwing stage's item null and skips its later stages", async () => {
  const status = await runScript(`
    const ran = [];
    const out = await pipeline([1, 2, 3],
      (p) => { if (p === 2) throw new Error("no"); return p * 10; },
      (p, item) => { ran.push(item); return p + 1; });
    return { out, ran };
  `);
  assert.deepEqual(status.result, { out: [11, null, 31], ran: [1, 3] });
});

Deno.test("pipeline() runs stages without a barrier", async () => {
  // Item 0 needs one call in stage 1, item 1 needs three. Without a barrier, item 0 reaches
  // stage 2 while item 1 is still in stage 1.
  const status = await runScript(
    `
    await pipeline([0, 1],
      async (p, item) => {
        for (let k = 0; k <= item * 2; k++) await agent("s1 " + item + " " + k);
        log("stage 1 done for " + item);
      },
      (p, item) => log("stage 2 started for " + item));
  `,
    {},
    { fakeLatencyMs: 20 },
  );
  const lines = narration(status, "log");
  assert.ok(
    lines.indexOf("stage 2 started for 0") < lines.indexOf("stage 1 done for 1"),
    `stage 2 of item 0 waited for stage 1 of item 1: ${JSON.stringify(lines)}`,
  );
});

Deno.test("pipeline() refuses more than 4096 items and non-function stages", async () => {
  const status = await runScript(`
    const seen = [];
    for (const bad of [() => pipeline(new Array(4097).fill(0), (p) => p), () => pipeline([1], "x"), () => pipeline(1)]) {
      try { bad(); seen.push("accepted"); } catch (e) { seen.push(e.name + ": " + e.message); }
    }
    return seen;
  `);
  assert.deepEqual(status.result, [
    "RangeError: pipeline() takes at most 4096 items, got 4097",
    "TypeError: pipeline(): stage 0 must be a function, got string",
    "TypeError: pipeline() expects an array of items, got number",
  ]);
});

Deno.test("phase() and log() become narration with host timestamps", async () => {
  await using t = await testManager();
  const started = await t.manager.start({
    script: `phase("Plan");\nlog("step one");\nlog({ n: 1 });`,
  }, LOCAL);
  const status = await t.manager.wait(started.run_id, LOCAL);
  const entries = status.narration.map(({ kind, text }) => ({ kind, text }));
  assert.deepEqual(entries, [
    { kind: "phase", text: "Plan" },
    { kind: "log", text: "step one" },
    { kind: "log", text: '{"n":1}' },
  ]);
  for (const entry of status.narration) {
    assert.ok(
      entry.at >= status.started_at! && entry.at <= status.ended_at!,
      "stamped during the run",
    );
  }
});

Deno.test("args are readable unchanged, and undefined when none were given", async () => {
  const given = await runScript(`return { args, type: typeof args };`, {
    args: { list: [1, "two", null], n: 1.5 },
  });
  assert.deepEqual(given.result, { args: { list: [1, "two", null], n: 1.5 }, type: "object" });
  const none = await runScript(`return typeof args;`);
  assert.equal(none.result, "undefined");
  const nullArgs = await runScript(`return args === null;`, { args: null });
  assert.equal(nullArgs.result, true);
});

Deno.test("budget without a cap: total null, remaining Infinity, spent follows committed usage", async () => {
  const status = await runScript(`
    const before = [budget.total, budget.spent(), budget.remaining() === Infinity];
    await agent("twelve chars");
    return { before, after: budget.spent() };
  `);
  const result = status.result as { before: unknown[]; after: number };
  assert.deepEqual(result.before, [null, 0, true]);
  assert.equal(
    result.after,
    status.journal.usage.input_tokens + status.journal.usage.output_tokens,
  );
  assert.ok(result.after > 0);
});

Deno.test("run concurrency is capped at 8: excess calls queue", async () => {
  const provider = scriptedProvider("stub", () => ({ output: "ok", delayMs: 40 }));
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const started = await t.manager.start({
    script:
      `return (await parallel(Array.from({ length: 20 }, (_, i) => () => agent("t" + i, { provider: "stub" })))).filter(Boolean).length;`,
  }, LOCAL);
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(status.result, 20);
  assert.equal(provider.maxActive, 8, "never more than 8 calls at the provider at once");
  assert.deepEqual(status.calls, {
    total: 20,
    queued: 0,
    running: 0,
    succeeded: 20,
    failed: 0,
    replayed: 0,
    skipped: 0,
  });
});

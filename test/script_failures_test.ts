import assert from "node:assert/strict";
import { createDispatcher, type Provider } from "../src/dispatch/mod.ts";
import { LOCAL, narration, runScript, scriptedProvider, testManager } from "./helpers.ts";

/** What agent() throws for a sandbox level that does not exist. */
const SANDBOX_RW =
  `agent(): option 'sandbox' invalid option: expected one of "read-only"|"write"|"full"`;

Deno.test("a parallel() thunk that throws yields null, and the run narrates and records where and why", async () => {
  const status = await runScript(`const r = await parallel([
  () => agent("a"),
  () => { throw new RangeError("boom"); },
  async () => { await agent("b", { label: "review", sandbox: "rw" }); },
  () => { throw "plain"; },
]);
return r;`);
  assert.equal(status.state, "succeeded", status.error?.message);
  assert.deepEqual(status.result, ["fake response to: a", null, null, null]);
  const errors = status.script_errors.map(({ at: _at, ...rest }) => rest);
  assert.deepEqual(errors, [
    {
      fn: "parallel",
      index: 1,
      stage: null,
      label: null,
      name: "RangeError",
      message: "boom",
      file: "script.js",
      line: 3,
      column: 17,
    },
    {
      fn: "parallel",
      index: 3,
      stage: null,
      label: null,
      name: "Thrown",
      message: "plain",
    },
    {
      fn: "parallel",
      index: 2,
      stage: null,
      label: "review",
      name: "TypeError",
      message: SANDBOX_RW,
      file: "script.js",
      line: 4,
      column: 23,
    },
  ]);
  assert.equal(status.script_errors_dropped, 0);
  assert.deepEqual(narration(status, "call"), [
    "parallel() item 1 threw RangeError: boom (script.js:3:17); its result is null",
    "parallel() item 3 threw a value that is not an Error: plain; its result is null",
    `parallel() item 2 (review) threw TypeError: ${SANDBOX_RW} (script.js:4:23); its result is null`,
  ]);
});

Deno.test("a pipeline() stage that throws names the item and the stage", async () => {
  const status = await runScript(`return await pipeline(["a", "b", "c"],
  (prev) => prev + "!",
  (prev, item, i) => { if (i === 1) throw new Error("no " + item); return prev; });`);
  assert.deepEqual(status.result, ["a!", null, "c!"]);
  assert.equal(status.script_errors.length, 1);
  assert.deepEqual(
    [status.script_errors[0]!.fn, status.script_errors[0]!.index, status.script_errors[0]!.stage],
    ["pipeline", 1, 1],
  );
  assert.deepEqual(narration(status, "call"), [
    "pipeline() item 1, stage 1 threw Error: no b (script.js:3:43); its result is null",
  ]);
});

Deno.test("a fan-out whose 4096 thunks all throw keeps at most 20 records of at most 16 KiB and counts the rest", async () => {
  await using t = await testManager();
  const script = (message: string) =>
    `const r = await parallel(Array.from({ length: 4096 }, (_, i) => () => { throw new Error(${message}); }));
     return r.every((x) => x === null);`;
  const short = await t.manager.wait(
    (await t.manager.start({ script: script(`"n" + i`) }, LOCAL)).run_id,
    LOCAL,
  );
  assert.equal(short.result, true);
  assert.equal(short.script_errors.length, 20);
  assert.equal(short.script_errors_dropped, 4076);
  assert.deepEqual(short.script_errors.map((e) => e.message).slice(0, 2), ["n0", "n1"]);

  const long = await t.manager.wait(
    (await t.manager.start({ script: script(`"x".repeat(100000) + i`) }, LOCAL)).run_id,
    LOCAL,
  );
  assert.equal(long.result, true);
  assert.ok(long.script_errors.length >= 1 && long.script_errors.length < 20);
  assert.equal(long.script_errors.length + long.script_errors_dropped, 4096);
  assert.ok(JSON.stringify(long.script_errors).length <= 16 * 1024);
  assert.match(long.script_errors[0]!.message, /^x{1024}… \[\d+ more characters\]$/);
  const stored = await t.ledger.getRun(long.run_id);
  assert.deepEqual(stored?.script_errors, long.script_errors, "the ledger holds what memory holds");
});

Deno.test("failed and refused agent() calls are counted by cause in the run's status", async () => {
  const flaky: Provider = {
    name: "flaky",
    kind: "api",
    dispatch: () => Promise.reject(new Error("connection reset")),
  };
  const wrong = scriptedProvider("wrong", () => ({ output: "not json" }));
  await using t = await testManager({
    dispatcher: createDispatcher({ providers: [flaky, wrong] }),
    maxAgents: 6,
  });
  const run = await t.manager.start({
    script: `const out = [];
      out.push(await agent("a", { provider: "flaky" }));
      out.push(await agent("b", { provider: "flaky" }));
      out.push(await agent("c", { provider: "nowhere" }));
      out.push(await agent("d", { provider: "wrong", schema: { type: "object" } }));
      out.push(await agent("e", { provider: "fake" }));
      out.push(await agent("f", { provider: "fake" }));
      out.push(await agent("g", { provider: "fake" }));
      out.push(await agent("h", { provider: "fake" }));
      return out.filter((x) => x !== null).length;`,
    schema_attempts: 2,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.result, 2);
  assert.deepEqual(status.failures, {
    provider_failed: 2,
    not_found: 1,
    schema_validation: 1,
    agent_limit: 2,
  });
});

Deno.test("a failed call's narration and journal entry carry its label and phase", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script: `await agent("x", { provider: "nowhere", label: "lost", phase: "Review" });
      await agent("y", { provider: "nowhere", phase: "Fix" });
      await agent("z", { label: "fine", phase: "Report" });`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(narration(status, "call"), [
    "agent call #1 (lost, phase Review) failed: Cannot dispatch: unknown provider 'nowhere' (configured: fake)",
    "agent call #2 (phase Fix) failed: Cannot dispatch: unknown provider 'nowhere' (configured: fake)",
  ]);
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => [e.label, e.phase]), [
    ["lost", "Review"],
    ["y", "Fix"],
    ["fine", "Report"],
  ]);
});

Deno.test("a run whose only provider is the fake one says so, unless it asked for fake dispatch", async () => {
  const unconfigured = await runScript(`return await agent("x");`);
  assert.equal(unconfigured.fake_provider_only, true);
  const asked = await runScript(`return await agent("x");`, { fake_dispatch: true });
  assert.equal(asked.fake_provider_only, false);
  const provider = scriptedProvider("real", () => ({ output: "ok" }));
  const configured = await runScript(`return await agent("x");`, {}, {
    dispatcher: createDispatcher({ providers: [provider] }),
  });
  assert.equal(configured.fake_provider_only, false);
});

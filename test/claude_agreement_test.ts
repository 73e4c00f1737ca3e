/**
 * Where svc's guest and host were changed to do what Claude Code's Workflow tool does (the
 * oracle, test/claude_oracle_test.ts, compares the two whole where the real Claude Code is
 * installed; these hold each change in the ordinary suite): labels from the prompt, the log
 * lines of a thrown item, calls Claude Code dispatches in spite of their options, and the
 * narration of a sub-workflow.
 */
import assert from "node:assert/strict";
import { createDispatcher, createFakeProvider, type Provider } from "../src/dispatch/mod.ts";
import type { RunEvent } from "../src/ledger/mod.ts";
import { LOCAL, narration, runScript, testManager } from "./helpers.ts";

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(path.replace(/\/[^/]+$/, ""), { recursive: true });
  await Deno.writeTextFile(path, text);
}

Deno.test("a call without a label is labelled with the first 60 characters of its prompt", async () => {
  await using t = await testManager();
  const long = "Summarise the following changes for a reviewer who has not seen the code before";
  const run = await t.manager.start({
    script: `await agent(${JSON.stringify(long)});
      await agent("  first line\\n  second line ");
      await agent("labelled", { label: "mine" });`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => e.label), [
    long.slice(0, 60),
    "first line second line",
    "mine",
  ]);
  const started = (await t.ledger.readEvents({ kind: "run", id: run.run_id }))
    .map(({ event }) => event as RunEvent)
    .flatMap((e) => (e.type === "call_started" ? [e.label] : []));
  assert.deepEqual(started, journal.map((e) => e.label), "the live events name them alike");
});

Deno.test("a label taken from the prompt shows no credential the prompt holds", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script: `await agent("use sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 to call it");`,
  }, LOCAL);
  assert.equal((await t.manager.wait(run.run_id, LOCAL)).state, "succeeded");
  const [entry] = await t.manager.journal(run.run_id, LOCAL);
  assert.equal(entry?.label, "use [redacted] to call it");
});

Deno.test("a thunk or stage that throws adds parallel[i] / pipeline[i] failed lines to the log", async () => {
  const status = await runScript(`
    await parallel([() => agent("kept"), () => { throw new Error("no reviewer"); }]);
    await pipeline(["a", "b"], (item) => {
      if (item === "b") throw new TypeError("bad " + item);
      return item;
    });
  `);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(narration(status, "log"), [
    "parallel[1] failed: no reviewer",
    "pipeline[1] failed: bad b",
  ]);
  assert.equal(status.script_errors.length, 2, "still recorded with where they threw");
});

/** The fake provider, recording the effort each call reached it with. */
function effortRecorder(): { provider: Provider; efforts: (string | undefined)[] } {
  const fake = createFakeProvider();
  const efforts: (string | undefined)[] = [];
  return {
    efforts,
    provider: {
      ...fake,
      dispatch: (request) => {
        efforts.push(request.options.effort);
        return fake.dispatch(request);
      },
    },
  };
}

Deno.test("unknown options, a bad effort, options that are no object and an empty prompt dispatch, each with a warning", async () => {
  const recorder = effortRecorder();
  const status = await runScript(
    `return [
      await agent("extra", { label: "x", colour: "red", retries: 3 }),
      await agent("effort", { effort: "extreme" }),
      await agent("text options", "notobject"),
      await agent(""),
    ];`,
    {},
    { dispatcher: createDispatcher({ providers: [recorder.provider], fakeLatencyMs: 0 }) },
  );
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, [
    "fake response to: extra",
    "fake response to: effort",
    "fake response to: text options",
    "fake response to: ",
  ]);
  assert.deepEqual(recorder.efforts, [undefined, "medium", undefined, undefined]);
  assert.deepEqual(narration(status, "warning"), [
    "agent(): unknown options 'colour', 'retries' ignored, as Claude Code does",
    "agent(): effort 'extreme' is not low, medium, high, xhigh or max: medium used",
    "agent(): options must be an object, got string: ignored, as Claude Code does",
    "agent(): the prompt is empty: sent as it is",
  ]);
});

Deno.test("the warning about unknown options is bounded whatever names the script uses", async () => {
  const status = await runScript(
    `const options = {};
    for (let i = 0; i < 500; i++) options["k".repeat(5000) + i] = i;
    return await agent("many", options);`,
    { fake_dispatch: true },
  );
  assert.equal(status.result, "fake response to: many");
  const [warning] = narration(status, "warning");
  assert.ok(warning !== undefined && warning.length < 400, warning);
  assert.match(warning, /'k{40}…', .* and 495 more ignored/);
});

Deno.test("resume replays a call whose unknown options were ignored: the hash covers them as given", async () => {
  await using t = await testManager();
  const script =
    `return [await agent("one", { colour: "red" }), await agent("two", { effort: "ultra" })];`;
  const first = await t.manager.start({ script }, LOCAL);
  assert.equal((await t.manager.wait(first.run_id, LOCAL)).state, "succeeded");
  const second = await t.manager.start({ script, resume_from: first.run_id }, LOCAL);
  const status = await t.manager.wait(second.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const journal = await t.manager.journal(second.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => e.outcome), ["replayed", "replayed"]);
});

Deno.test("a sub-workflow is narrated as Claude Code narrates it, its calls in its own group", async () => {
  await using t = await testManager();
  await write(
    `${t.home}/workflows/child.js`,
    `phase("Inner");
    log("child got " + args);
    return await agent("in the child", { phase: "Own" });`,
  );
  const run = await t.manager.start({
    script: `phase("Outer");
      const both = await parallel([() => workflow("child", "a"), () => workflow("child", "b")]);
      return [both, await agent("after")];`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(narration(status, "log").sort(), [
    "[child #2] child got b",
    "[child] child got a",
    "▸ child done",
    "▸ child done",
    "▸ running dynamic workflow child",
    "▸ running dynamic workflow child",
  ]);
  assert.deepEqual(narration(status, "phase"), ["Outer"], "the child's phase() regroups nothing");
  const phases = (await t.ledger.readEvents({ kind: "run", id: run.run_id }))
    .map(({ event }) => event as RunEvent)
    .flatMap((e) => (e.type === "call_started" ? [`${e.label}: ${e.phase}`] : []));
  assert.deepEqual(phases.sort(), [
    "after: Outer",
    "in the child: ▸ child",
    "in the child: ▸ child #2",
  ]);
});

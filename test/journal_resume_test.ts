import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { callHash, canonicalJson, type RunEvent } from "../src/engine/mod.ts";
import { sha256 } from "../src/ledger/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import {
  countingDispatcher,
  feedOf,
  LOCAL,
  scriptedProvider,
  testManager,
  untilEvent,
} from "./helpers.ts";

const FIVE_CALLS = `
  const out = [];
  for (const word of args.words) out.push(await agent("say " + word, { label: word }));
  return out;
`;

Deno.test("every agent() call is journaled in call-start order with hash, result, usage, provider and timing", async () => {
  await using t = await testManager();
  const run = await t.manager.start(
    { script: FIVE_CALLS, args: { words: ["a", "b", "c"] } },
    LOCAL,
  );
  await t.manager.wait(run.run_id, LOCAL);
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => [e.seq, e.label, e.outcome, e.result]), [
    [1, "a", "live", "fake response to: say a"],
    [2, "b", "live", "fake response to: say b"],
    [3, "c", "live", "fake response to: say c"],
  ]);
  const first = journal[0]!;
  assert.equal(
    first.hash,
    sha256(canonicalJson({ prompt: "say a", options: { label: "a" } })),
  );
  assert.equal(first.provider, "fake");
  assert.ok(first.usage.input_tokens > 0 && first.usage.output_tokens > 0);
  assert.ok(first.started_at <= first.ended_at && first.duration_ms >= 0);
  assert.equal(first.attempts, 1);
});

Deno.test("the journal hash ignores the order of option keys", () => {
  assert.equal(
    callHash("p", { label: "x", model: "m" }),
    callHash("p", { model: "m", label: "x" }),
  );
  assert.notEqual(callHash("p", { label: "x" }), callHash("p", { label: "y" }));
});

Deno.test("a resumed run replays the unchanged calls from the journal without dispatching them", async () => {
  const dispatcher = countingDispatcher();
  await using t = await testManager({ dispatcher });
  const words = ["a", "b", "c", "d", "e"];
  const first = await t.manager.start({ script: FIVE_CALLS, args: { words } }, LOCAL);
  const original = await t.manager.wait(first.run_id, LOCAL);
  assert.equal(dispatcher.count(), 5);
  const second = await t.manager.start({
    script: FIVE_CALLS,
    args: { words },
    resume_from: first.run_id,
  }, LOCAL);
  const events: RunEvent[] = await feedOf(t.manager, second.run_id);
  const resumed = await t.manager.wait(second.run_id, LOCAL);
  assert.equal(dispatcher.count(), 5, "no call was dispatched again");
  assert.deepEqual(resumed.result, original.result);
  assert.equal(resumed.resumed_from, first.run_id);
  assert.deepEqual([resumed.journal.replayed, resumed.journal.live], [5, 0]);
  assert.equal(resumed.budget.spent, 0, "replayed calls cost nothing");
  assert.deepEqual(resumed.journal.usage, { input_tokens: 0, output_tokens: 0, cost_usd: 0 });
  assert.equal(events.filter((e) => e.type === "call").length, 0, "no event per replayed call");
  const replays = events.flatMap((e) => e.type === "calls_replayed" ? [e] : []);
  assert.deepEqual(
    replays.flatMap((e) => e.calls.map((c) => c.seq)),
    [1, 2, 3, 4, 5],
    "replays are marked, in batches",
  );
  assert.ok(replays.every((e) => e.from === first.run_id && e.count === e.calls.length));
  const journal = await t.manager.journal(second.run_id, LOCAL);
  assert.ok(journal.every((e) => e.outcome === "replayed" && e.replayed_from === first.run_id));
});

Deno.test("resume replays the longest unchanged prefix; the first difference and everything after run live", async () => {
  const dispatcher = countingDispatcher();
  await using t = await testManager({ dispatcher });
  const first = await t.manager.start({
    script: FIVE_CALLS,
    args: { words: ["a", "b", "c", "d", "e"] },
  }, LOCAL);
  await t.manager.wait(first.run_id, LOCAL);
  const second = await t.manager.start({
    script: FIVE_CALLS,
    args: { words: ["a", "b", "CHANGED", "d", "e"] },
    resume_from: first.run_id,
  }, LOCAL);
  const resumed = await t.manager.wait(second.run_id, LOCAL);
  assert.deepEqual([resumed.journal.replayed, resumed.journal.live], [2, 3]);
  assert.equal(dispatcher.count(), 5 + 3);
  const journal = await t.manager.journal(second.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => e.outcome), ["replayed", "replayed", "live", "live", "live"]);
});

Deno.test("a run that hit its timeout keeps its journal and resumes without paying twice", async () => {
  let slow = true;
  const provider = scriptedProvider("stub", (prompt) => ({
    output: `done: ${prompt}`,
    delayMs: prompt === "slow" && slow ? 60_000 : 0,
  }));
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const script = `
    const quick = await parallel(["q1", "q2", "q3", "q4"].map((p) => () => agent(p, { provider: "stub" })));
    return [...quick, await agent("slow", { provider: "stub" })];
  `;
  const first = await t.manager.start({ script, timeout: 1 }, LOCAL);
  const timedOut = await t.manager.wait(first.run_id, LOCAL);
  assert.equal(timedOut.state, "timeout");
  assert.deepEqual(
    [timedOut.journal.live, timedOut.journal.failed],
    [4, 1],
    "journal kept, the cut call recorded",
  );
  slow = false;
  const second = await t.manager.start({ script, resume_from: first.run_id }, LOCAL);
  const resumed = await t.manager.wait(second.run_id, LOCAL);
  assert.equal(resumed.state, "succeeded");
  assert.deepEqual([resumed.journal.replayed, resumed.journal.live], [4, 1]);
  assert.equal(provider.calls, 4 + 1 + 1, "only the cut call ran again");
  assert.deepEqual(resumed.result, ["done: q1", "done: q2", "done: q3", "done: q4", "done: slow"]);
});

Deno.test("a cancelled run keeps its journal and can be resumed", async () => {
  let slow = true;
  const provider = scriptedProvider(
    "stub",
    (prompt) => ({ output: prompt, delayMs: prompt === "c" && slow ? 60_000 : 0 }),
  );
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const script =
    `const out = []; for (const p of ["a", "b", "c"]) out.push(await agent(p, { provider: "stub" })); return out;`;
  const first = await t.manager.start({ script }, LOCAL);
  await untilEvent(
    t.manager,
    first.run_id,
    (e) => e.type === "calls" && e.calls.running === 1 && e.calls.total === 3,
  );
  await t.manager.cancel(first.run_id, LOCAL);
  const cancelled = await t.manager.wait(first.run_id, LOCAL);
  assert.equal(cancelled.state, "cancelled");
  assert.equal(cancelled.journal.live, 2);
  slow = false;
  const resumed = await t.manager.wait(
    (await t.manager.start({ script, resume_from: first.run_id }, LOCAL)).run_id,
    LOCAL,
  );
  assert.deepEqual([resumed.state, resumed.journal.replayed, resumed.journal.live], [
    "succeeded",
    2,
    1,
  ]);
  assert.deepEqual(resumed.result, ["a", "b", "c"]);
});

Deno.test("resume refuses an unknown run, another owner's run and a run still running", async () => {
  await using t = await testManager({ fakeLatencyMs: 60_000 });
  const refuse = async (
    input: Record<string, unknown>,
    owner: string,
    code: string,
    message: RegExp,
  ) => {
    await assert.rejects(
      t.manager.start({ script: "return 1;", ...input }, { owner }),
      (error: unknown) => {
        assert.ok(error instanceof SvcError);
        assert.equal(error.code, code);
        assert.match(error.message, message);
        return true;
      },
    );
  };
  await refuse(
    { resume_from: "run_0000000000nothere" },
    "alice",
    "not_found",
    /Cannot resume from run 'run_0000000000nothere': no such run/,
  );
  const running = await t.manager.start({ script: `await agent("slow");` }, { owner: "alice" });
  await refuse({ resume_from: running.run_id }, "bob", "not_found", /no such run/);
  await refuse(
    { resume_from: running.run_id },
    "alice",
    "conflict",
    /it is still (queued|running)/,
  );
  await t.manager.cancel(running.run_id, { owner: "alice" });
  await t.manager.wait(running.run_id, { owner: "alice" });
});

const CHAIN = `
  const out = [];
  for (let i = 0; i < args.n; i++) out.push(await agent("step " + i, { label: "s" + i }));
  return out;
`;

Deno.test("a resume packs its replayed entries into few ledger values, and its journal reads back exactly, resumed again too", async () => {
  await using t = await testManager();
  const n = 60;
  const first = await t.manager.start({ script: CHAIN, args: { n } }, LOCAL);
  const original = await t.manager.wait(first.run_id, LOCAL);
  const source = await t.manager.journal(first.run_id, LOCAL);
  const second = await t.manager.start(
    { script: CHAIN, args: { n }, resume_from: first.run_id },
    LOCAL,
  );
  const resumed = await t.manager.wait(second.run_id, LOCAL);
  assert.deepEqual(resumed.result, original.result);
  assert.equal(resumed.journal.replayed, n);
  const journal = await t.manager.journal(second.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => e.seq), source.map((e) => e.seq), "every call, in order");
  assert.deepEqual(journal.map((e) => e.result), source.map((e) => e.result));
  assert.deepEqual(journal.map((e) => e.position), source.map((e) => e.position));
  assert.deepEqual(journal.map((e) => e.hash), source.map((e) => e.hash));
  assert.ok(journal.every((e) => e.outcome === "replayed" && e.replayed_from === first.run_id));
  // One value per replayed call made most of a resume's write; packed, a handful hold them all.
  const kv = await Deno.openKv(`${t.home}/svc.kv`);
  try {
    const keys = await Array.fromAsync(kv.list({ prefix: ["journal", second.run_id] }));
    assert.ok(keys.length >= 1 && keys.length < n / 4, `${keys.length} values for ${n} entries`);
    const live = await Array.fromAsync(kv.list({ prefix: ["journal", first.run_id] }));
    assert.equal(live.length, n, "a live entry is a value of its own");
  } finally {
    kv.close();
  }
  // A resume of the resume reads the packed journal as its offer.
  const third = await t.manager.start(
    { script: CHAIN, args: { n }, resume_from: second.run_id },
    LOCAL,
  );
  const again = await t.manager.wait(third.run_id, LOCAL);
  assert.deepEqual(again.result, original.result);
  assert.equal(again.journal.replayed, n);
  const last = await t.manager.journal(third.run_id, LOCAL);
  assert.ok(
    last.every((e) => e.replayed_from === first.run_id),
    "values trace to the run that made them",
  );
});

/**
 * A call's live output in the engine: recorded in the run's feed within the per-call byte
 * budget (one `truncated` marker past it), batched (not one write per delta), redacted (a
 * secret the agent prints never reaches the ledger, even split across deltas), before the
 * call's own `call` event, readable per call, and absent for a replayed call.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import type { DispatchRequest, DispatchResult, Provider } from "../src/dispatch/mod.ts";
import type { RunEvent } from "../src/engine/mod.ts";
import { feedOf, LOCAL, testManager } from "./helpers.ts";

const SECRET = "sk-ant-api03-Zq8vY2xW4tR6uP0oN3mL5kJ7hG9fD1sA";

/**
 * A provider as a library user may write one: it reports straight to `onProgress`, with no
 * channel of its own: 400 text deltas (the secret among them, cut in two), tool uses, a file.
 */
function chattyProvider(): Provider {
  return {
    name: "chatty",
    kind: "api",
    async dispatch(request: DispatchRequest): Promise<DispatchResult> {
      const say = request.onProgress!;
      say({ kind: "tool", name: "Bash", target: "ls -la \u001b[31m/tmp" });
      say({ kind: "text", text: `my key is ${SECRET.slice(0, 20)}` });
      say({ kind: "text", text: `${SECRET.slice(20)} ok\n` });
      for (let i = 0; i < 400; i++) {
        say({ kind: "text", text: `line ${i} of the answer\n` });
        if (i % 100 === 0) await new Promise((resolve) => setTimeout(resolve, 60));
      }
      say({ kind: "file", path: "/work/NOTES.md", change: "write" });
      return {
        output: "done",
        usage: { input_tokens: 1, output_tokens: 1 },
        cost_usd: 0,
        provider: "chatty",
        model: "chatty",
      };
    },
  };
}

function progressOf(events: RunEvent[]) {
  return events.filter((e): e is Extract<RunEvent, { type: "progress" }> => e.type === "progress");
}

Deno.test("progress: recorded within the call's budget, batched, redacted, before the call event", async () => {
  await using t = await testManager({
    dispatcher: createDispatcher({ providers: [chattyProvider()], fakeLatencyMs: 0 }),
    maxProgressBytes: 2048,
  });
  const run = await t.manager.start({
    script: `return await agent("go", { provider: "chatty", label: "chat" })`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded");
  const events = await feedOf(t.manager, run.run_id);
  const progress = progressOf(events);
  assert.ok(progress.length >= 1, "the call's output is in the feed");
  // Batched: 400 deltas over about a quarter of a second make a handful of events, not 400.
  assert.ok(progress.length <= 6, `${progress.length} progress events`);
  assert.ok(progress.every((e) => e.seq === 1));
  const items = progress.flatMap((e) => e.items);
  assert.equal(items[0]?.kind, "tool");
  assert.deepEqual(items[0], { kind: "tool", name: "Bash", target: "ls -la /tmp" });
  // The budget: the items' JSON stays within it, then one marker and nothing more.
  const kept = items.filter((item) => item.kind !== "truncated");
  const bytes = kept.reduce((sum, item) => sum + JSON.stringify(item).length, 0);
  assert.ok(bytes <= 2048, `${bytes} bytes recorded`);
  assert.equal(items.filter((item) => item.kind === "truncated").length, 1);
  assert.equal(items.at(-1)?.kind, "truncated");
  assert.ok(!items.some((item) => item.kind === "file"), "nothing after the marker");
  // Redacted, though it came in two deltas: not in the feed, not in the ledger's record.
  const text = items.map((item) => item.kind === "text" ? item.text : "").join("");
  assert.match(text, /my key is \[redacted\] ok/);
  const everything = JSON.stringify([events, await t.manager.journal(run.run_id, LOCAL), status]);
  assert.ok(!everything.includes(SECRET.slice(0, 20)), "the secret reached the ledger");
  // Every progress event comes before the call's own event.
  const callAt = events.findIndex((e) => e.type === "call" && e.seq === 1);
  const lastProgress = events.findLastIndex((e) => e.type === "progress");
  assert.ok(lastProgress < callAt);
  // Read back per call: the same batches, the call ended; another owner sees nothing.
  const page = await t.manager.callEvents(run.run_id, 1, LOCAL);
  assert.equal(page.done, true);
  assert.deepEqual(page.events.flatMap((e) => e.items), items);
  const second = await t.manager.callEvents(run.run_id, 1, LOCAL, {
    after: page.events[0]!.feed_seq,
  });
  assert.equal(second.events.length, page.events.length - 1);
  await assert.rejects(
    t.manager.callEvents(run.run_id, 1, { owner: "mallory" }),
    (error: Error & { code?: string }) => error.code === "not_found",
  );
  await assert.rejects(
    t.manager.callEvents(run.run_id, 2, LOCAL),
    (error: Error & { code?: string }) => error.code === "not_found",
  );
});

Deno.test("progress: the fake provider streams its answer; a replayed call has none", async () => {
  await using t = await testManager({ fakeLatencyMs: 200 });
  const run = await t.manager.start({
    script: `return await agent("say hello", { label: "hello" })`,
  }, LOCAL);
  // Followed live: the output arrives while the call runs, before its call event.
  const seen: string[] = [];
  for await (const batch of t.manager.followCall(run.run_id, 1, LOCAL)) {
    for (const item of batch.items) if (item.kind === "text") seen.push(item.text);
  }
  assert.equal(seen.join(""), "fake response to: say hello");
  assert.equal((await t.manager.wait(run.run_id, LOCAL)).state, "succeeded");

  const resumed = await t.manager.resume(run.run_id, LOCAL);
  const again = await t.manager.wait(resumed.run_id, LOCAL);
  assert.equal(again.calls.replayed, 1);
  assert.deepEqual(progressOf(await feedOf(t.manager, resumed.run_id)), []);
  const page = await t.manager.callEvents(resumed.run_id, 1, LOCAL);
  assert.deepEqual(page, { run_id: resumed.run_id, seq: 1, events: [], done: true });
});

Deno.test("progress: a budget of 0 records nothing", async () => {
  await using t = await testManager({ fakeLatencyMs: 20, maxProgressBytes: 0 });
  const run = await t.manager.start({ script: `return await agent("x")` }, LOCAL);
  await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(progressOf(await feedOf(t.manager, run.run_id)), []);
});

Deno.test("progress: a fake call with no latency records none, its answer being its journal entry", async () => {
  await using t = await testManager({ fakeLatencyMs: 0 });
  const run = await t.manager.start({ script: `return await agent("x")` }, LOCAL);
  assert.equal((await t.manager.wait(run.run_id, LOCAL)).state, "succeeded");
  assert.deepEqual(progressOf(await feedOf(t.manager, run.run_id)), []);
});

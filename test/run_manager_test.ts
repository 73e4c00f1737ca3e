import assert from "node:assert/strict";
import type { RunEvent } from "../src/engine/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { feedOf, LOCAL, testManager, untilEvent } from "./helpers.ts";

Deno.test("a run moves queued -> running -> succeeded, with host timestamps and a journal summary", async () => {
  await using t = await testManager();
  const started = await t.manager.start(
    { script: `return await agent("a");`, filename: "one.js" },
    LOCAL,
  );
  assert.equal(started.state, "queued");
  assert.match(started.run_id, /^run_[0-9a-z]{18}$/);
  const events: RunEvent[] = await feedOf(t.manager, started.run_id);
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.deepEqual(
    events.filter((e) => e.type === "state").map((e) => e.type === "state" && e.state),
    ["queued", "running", "succeeded"],
  );
  assert.deepEqual(events.at(-1), {
    type: "state",
    run_id: started.run_id,
    at: status.ended_at,
    state: "succeeded",
  });
  assert.equal(status.state, "succeeded");
  assert.equal(status.owner, "local");
  assert.equal(status.filename, "one.js");
  assert.ok(status.created_at <= status.started_at! && status.started_at! <= status.ended_at!);
  assert.equal(status.error, undefined);
  assert.deepEqual(status.journal, {
    calls: 1,
    replayed: 0,
    live: 1,
    failed: 0,
    skipped: 0,
    omitted: 0,
    usage: { input_tokens: 1, output_tokens: 5, cost_usd: 0 },
  });
});

Deno.test("every run gets its own run_id", async () => {
  await using t = await testManager();
  const ids = new Set<string>();
  for (let i = 0; i < 5; i++) {
    ids.add((await t.manager.start({ script: "return 1;" }, LOCAL)).run_id);
  }
  assert.equal(ids.size, 5);
});

Deno.test("a run can be cancelled while it runs: its guest is killed and it ends cancelled", async () => {
  await using t = await testManager({ fakeLatencyMs: 10_000 });
  const started = await t.manager.start({
    script: `log("waiting");\nawait agent("slow");\nlog("never");`,
  }, LOCAL);
  await untilEvent(t.manager, started.run_id, (e) => e.type === "calls" && e.calls.running === 1);
  assert.equal((await t.manager.cancel(started.run_id, LOCAL)).state, "running");
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(status.state, "cancelled");
  assert.deepEqual(status.error, { code: "cancelled", message: "cancelled by local" });
  assert.deepEqual(status.narration.map((e) => e.text), ["waiting"]);
  assert.deepEqual(
    await t.manager.cancel(started.run_id, LOCAL),
    status,
    "cancelling again changes nothing",
  );
});

Deno.test("start() refuses a malformed request, naming the field, before any process starts", async () => {
  const cases: Array<[unknown, RegExp]> = [
    [
      {},
      /^Cannot start the run: 'script' is required unless 'name' or 'scriptPath' names a saved workflow$/,
    ],
    [{ script: "" }, /'script' must not be empty/],
    [{ script: "return 1", timeout: 0 }, /'timeout' too small/],
    [{ script: "return 1", isolation: "vm" }, /'isolation' invalid option/],
    [{ script: "return 1", sandbox_default: "root" }, /'sandbox_default' invalid option/],
    [{ script: "return 1", owner_user_id: "mallory" }, /unknown field 'owner_user_id'/],
    [
      { script: "return 1", budget_tokens: 1.5 },
      /'budget_tokens' must be a whole number of tokens/,
    ],
    [{ script: "return 1", resume_from: "../etc" }, /'resume_from' must be a run id/],
    [{ script: "return 1", filename: "../../escape.js" }, /'filename' must be a file name without/],
    [{ script: "return 1", filename: ".." }, /'filename' must be a file name without/],
    [
      { script: "return 1", args: JSON.parse(`${"[".repeat(20_000)}${"]".repeat(20_000)}`) },
      /^Cannot start the run: 'args' must be JSON nested at most 64 levels deep$/,
    ],
  ];
  await using t = await testManager();
  for (const [input, expected] of cases) {
    await assert.rejects(t.manager.start(input, LOCAL), (error: unknown) => {
      assert.ok(error instanceof SvcError);
      assert.equal(error.code, "invalid_request");
      assert.equal(error.status, 400);
      assert.match(error.message, expected);
      return true;
    });
  }
  assert.deepEqual(await t.manager.list(LOCAL), [], "nothing was recorded");
});

Deno.test("get() returns a run only to its owner", async () => {
  await using t = await testManager();
  const started = await t.manager.start({ script: "return 1;" }, { owner: "alice" });
  await t.manager.wait(started.run_id, { owner: "alice" });
  assert.equal((await t.manager.get(started.run_id, { owner: "alice" }))?.state, "succeeded");
  assert.equal(await t.manager.get(started.run_id, { owner: "bob" }), undefined);
  assert.equal(await t.manager.get("run_unknown", LOCAL), undefined);
  await assert.rejects(t.manager.cancel(started.run_id, { owner: "bob" }), /no such run/);
});

Deno.test("narration beyond the cap is counted, not kept", async () => {
  await using t = await testManager({ maxNarration: 10 });
  const status = await t.manager.wait(
    (await t.manager.start({ script: `for (let i = 0; i < 25; i++) log("line " + i);` }, LOCAL))
      .run_id,
    LOCAL,
  );
  assert.equal(status.narration.length, 10);
  assert.equal(status.narration_dropped, 15);
});

Deno.test("narration is bounded in bytes too: long lines past the cap are counted, not kept", async () => {
  await using t = await testManager();
  const status = await t.manager.wait(
    (await t.manager.start({
      script: `const line = "x".repeat(8000); for (let i = 0; i < 1000; i++) log(line);`,
    }, LOCAL)).run_id,
    LOCAL,
  );
  assert.equal(status.state, "succeeded");
  assert.equal(status.narration.length, 262, "2 MiB of 8,000-byte lines");
  assert.equal(status.narration_dropped, 1000 - 262);
  const stored = await t.ledger.getRun(status.run_id);
  assert.equal(stored?.narration.length, 262, "the ledger holds what the status says");
});

Deno.test("close() cancels runs that are still going", async () => {
  const t = await testManager({ fakeLatencyMs: 10_000 });
  const started = await t.manager.start({ script: `await agent("slow");` }, LOCAL);
  const ended = t.manager.wait(started.run_id, LOCAL);
  await t[Symbol.asyncDispose]();
  assert.equal((await ended).state, "cancelled");
});

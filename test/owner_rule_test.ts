/**
 * The owner rule, through every service a surface calls: a caller sees and changes only its
 * owner's runs, tasks, sessions, history and costs (an administrator sees all), and an
 * unknown id and another owner's id answer the same.
 */
import assert from "node:assert/strict";
import { createDispatcher, dispatchHistory } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { type Caller, callerOf } from "../src/ledger/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { tempDir } from "./helpers.ts";

const ALICE: Caller = { owner: "alice" };
const BOB: Caller = { owner: "bob" };
const ROOT_ADMIN: Caller = { owner: "root", admin: true };

/** What a call answers: its value, or its error's code and message with the id made generic. */
async function answer(call: () => Promise<unknown>, id: string): Promise<unknown> {
  try {
    return { value: await call() };
  } catch (error) {
    assert.ok(error instanceof SvcError, String(error));
    return { code: error.code, message: error.message.replaceAll(id, "<id>") };
  }
}

Deno.test("an owner never sees another owner's runs, tasks, sessions, history or costs; not-yours answers as not-found", async () => {
  await using home = await tempDir();
  await using s = await openServices({
    home: home.path,
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  });
  const run = await s.runs.start(
    { script: `return await agent("hi");`, fake_dispatch: true },
    ALICE,
  );
  await s.runs.wait(run.run_id, ALICE);
  const task = await s.tasks.start({ prompt: "hello", fake_dispatch: true }, ALICE);
  await s.tasks.wait(task.task_id, ALICE);
  const session = await s.sessions.create({ name: "pairing" }, ALICE);

  // Bob: nothing of Alice's in any listing.
  assert.deepEqual(await s.runs.list(BOB), []);
  assert.deepEqual(await s.tasks.list(BOB), []);
  assert.deepEqual(await s.sessions.list(BOB), []);
  const bobs = await dispatchHistory(s.ledger, BOB);
  assert.deepEqual([bobs.calls.length, bobs.summary.calls, bobs.summary.cost_usd], [0, 0, 0]);
  assert.equal(await s.runs.get(run.run_id, BOB), undefined);
  assert.equal(await s.tasks.get(task.task_id, BOB), undefined);

  // Every read or change of one of Alice's records answers Bob as an unknown id does.
  const runCalls: Array<(id: string) => Promise<unknown>> = [
    (id) => s.runs.journal(id, BOB),
    (id) => s.runs.wait(id, BOB),
    (id) => s.runs.cancel(id, BOB),
    (id) => Array.fromAsync(s.runs.events(id, BOB)),
    (id) => Array.fromAsync(s.events.follow({ kind: "run", id }, BOB)),
    (id) => s.runs.start({ script: "return 1;", resume_from: id }, BOB),
  ];
  for (const call of runCalls) {
    const theirs = await answer(() => call(run.run_id), run.run_id);
    assert.deepEqual(
      theirs,
      await answer(() => call("run_000000000000000000"), "run_000000000000000000"),
    );
    assert.equal((theirs as { code?: string }).code, "not_found");
  }
  const taskCalls: Array<(id: string) => Promise<unknown>> = [
    (id) => s.tasks.wait(id, BOB),
    (id) => s.tasks.cancel(id, BOB),
    (id) => s.tasks.work(id, BOB),
    (id) => Array.fromAsync(s.tasks.events(id, BOB)),
    (id) => Array.fromAsync(s.events.follow({ kind: "task", id }, BOB)),
  ];
  for (const call of taskCalls) {
    const theirs = await answer(() => call(task.task_id), task.task_id);
    assert.deepEqual(
      theirs,
      await answer(() => call("task_000000000000000000"), "task_000000000000000000"),
    );
    assert.equal((theirs as { code?: string }).code, "not_found");
  }
  for (const ref of [session.session_id, "pairing"]) {
    assert.deepEqual(
      await answer(() => s.sessions.get(ref, BOB), ref),
      await answer(() => s.sessions.get("ses_000000000000000000", BOB), "ses_000000000000000000"),
    );
  }

  // Alice sees her own; an administrator sees everyone's.
  assert.deepEqual((await s.runs.list(ALICE)).map((r) => r.run_id), [run.run_id]);
  assert.equal((await s.runs.journal(run.run_id, ALICE)).length, 1);
  assert.deepEqual((await s.tasks.list(ALICE)).map((t) => t.task_id), [task.task_id]);
  assert.equal((await s.sessions.get("pairing", ALICE)).session_id, session.session_id);
  assert.equal((await dispatchHistory(s.ledger, ALICE)).calls.length, 2);
  assert.equal((await s.runs.list(ROOT_ADMIN)).length, 1);
  assert.equal((await s.tasks.list(ROOT_ADMIN)).length, 1);
  assert.equal((await s.sessions.list(ROOT_ADMIN)).length, 1);
  assert.equal((await s.sessions.get(session.session_id, ROOT_ADMIN)).owner, "alice");
  assert.equal((await dispatchHistory(s.ledger, ROOT_ADMIN)).calls.length, 2);
  assert.equal((await s.runs.get(run.run_id, ROOT_ADMIN))?.owner, "alice");
  const feed = await Array.fromAsync(
    s.events.follow({ kind: "task", id: task.task_id }, ROOT_ADMIN),
  );
  // The state changes (the call's live output, progress events, comes between them).
  const changes = feed.filter(({ event }) => !("progress" in event && event.progress));
  assert.deepEqual(changes.map(({ event }) => "state" in event && event.state), [
    "queued",
    "running",
    "succeeded",
  ]);

  // What a caller creates is its own.
  const bobRun = await s.runs.start({ script: "return 2;" }, BOB);
  assert.equal(bobRun.owner, "bob");
  assert.equal((await s.runs.wait(bobRun.run_id, BOB)).result, 2);
  assert.deepEqual((await s.runs.list(ALICE)).map((r) => r.run_id), [run.run_id]);
});

Deno.test("an owner name is checked: empty, too long or with control characters is refused", () => {
  assert.deepEqual(callerOf("alice"), { owner: "alice" });
  assert.deepEqual(callerOf("ops", { admin: true }), { owner: "ops", admin: true });
  for (const bad of ["", "x".repeat(129), "a\u001bb", "line\nbreak"]) {
    assert.throws(
      () => callerOf(bad),
      (e: unknown) => e instanceof SvcError && e.code === "invalid_argument",
    );
  }
});

Deno.test("an id or session name of any other shape finds nothing and never reaches the ledger", async () => {
  await using home = await tempDir();
  await using s = await openServices({ home: home.path });
  const huge = `run_${"x".repeat(5000)}`;
  assert.equal(await s.runs.get(huge, ALICE), undefined);
  for (
    const call of [
      () => s.runs.wait(huge, ALICE),
      () => s.runs.cancel(huge, ALICE),
      () => s.tasks.cancel(huge.replace("run_", "task_"), ALICE),
      () => s.sessions.get("n".repeat(5000), ALICE),
    ]
  ) {
    await assert.rejects(call(), (e: unknown) => {
      assert.ok(e instanceof SvcError && e.code === "not_found", String(e));
      assert.ok(e.message.length < 200, "the id is clipped in the message");
      return true;
    });
  }
  await assert.rejects(
    s.sessions.create({ name: "n".repeat(129) }, ALICE),
    (e: unknown) => e instanceof SvcError && e.code === "invalid_request",
  );
});

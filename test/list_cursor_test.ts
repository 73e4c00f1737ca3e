/**
 * Cursors of the listings: `before` pages through runs, tasks, sessions and calls, newest
 * first, each record once, never past the caller's owner; a cursor of the wrong kind is refused;
 * a `states` filter examines a bounded number of runs.
 */
import assert from "node:assert/strict";
import { createDispatcher, dispatchHistory } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import {
  callCursor,
  type Caller,
  newId,
  openLedger,
  RUN_SCAN_LIMIT,
  type RunStatus,
} from "../src/ledger/mod.ts";
import { KEYS } from "../src/ledger/keys.ts";
import { toBytes } from "../src/ledger/json_bytes.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { writeTasks } from "./fixtures/activity_writer.ts";
import { tempDir } from "./helpers.ts";

const ALICE: Caller = { owner: "alice" };
const BOB: Caller = { owner: "bob" };
const ADMIN: Caller = { owner: "root", admin: true };

/** Services over a fresh home with the fake provider answering at once. */
async function services(home: string): Promise<Services> {
  return await openServices({ home, dispatcher: createDispatcher({ fakeLatencyMs: 0 }) });
}

/** A finished run of `caller`'s, whose status is the template of runs written straight to the ledger. */
async function template(s: Services, caller: Caller): Promise<RunStatus> {
  const run = await s.runs.start({ script: `return 1;` }, caller);
  return await s.runs.wait(run.run_id, caller);
}

/** Records a run of `owner` like `template`, with a new id, as a host would. */
async function recordRun(s: Services, owner: string, template: RunStatus): Promise<string> {
  const status = { ...structuredClone(template), run_id: newId("run"), owner };
  await s.ledger.createRun(status, {
    input: { script: "return 1;" },
    host: s.host.ref,
    event: { type: "state", run_id: status.run_id, at: status.created_at, state: "queued" },
  });
  return status.run_id;
}

/** Every page of a listing, `limit` at a time, each asked with the last id of the page before. */
async function pages<T>(
  list: (before: string | undefined) => Promise<T[]>,
  idOf: (record: T) => string,
): Promise<T[][]> {
  const out: T[][] = [];
  let before: string | undefined;
  // A cursor that does not move on would page forever.
  while (out.length < 100) {
    const page = await list(before);
    if (page.length === 0) return out;
    out.push(page);
    before = idOf(page.at(-1)!);
  }
  throw new Error("the listing has more than 100 pages: its cursor does not move on");
}

/** The code and message of what `call` throws. */
async function refusal(call: () => Promise<unknown>): Promise<[string, string]> {
  try {
    await call();
  } catch (error) {
    assert.ok(error instanceof SvcError, String(error));
    return [error.code, error.message];
  }
  throw new Error("the call was not refused");
}

Deno.test("paging through 250 runs 100 at a time yields every run once, newest first, and only the caller's", async () => {
  await using home = await tempDir();
  await using s = await services(home.path);
  const model = await template(s, BOB);
  const alices: string[] = [];
  const bobs: string[] = [model.run_id];
  for (let i = 0; i < 250; i++) {
    alices.push(await recordRun(s, "alice", model));
    if (i % 5 === 0) bobs.push(await recordRun(s, "bob", model));
  }
  const newestFirst = (ids: string[]) => [...ids].sort().reverse();

  const paged = await pages(
    (before) => s.runs.list(ALICE, { limit: 100, ...(before ? { before } : {}) }),
    (run) => run.run_id,
  );
  assert.deepEqual(paged.map((page) => page.length), [100, 100, 50]);
  assert.deepEqual(paged.flat().map((run) => run.run_id), newestFirst(alices));

  // Another owner's id is a position in time, not a way into its runs.
  const middle = newestFirst(bobs)[25]!;
  const after = await s.runs.list(ALICE, { before: middle, limit: 1000 });
  assert.deepEqual(
    after.map((run) => run.run_id),
    newestFirst(alices).filter((id) => id < middle),
  );
  assert.ok(after.every((run) => run.owner === "alice"));
  const bobsPages = await pages(
    (before) => s.runs.list(BOB, { limit: 7, ...(before ? { before } : {}) }),
    (run) => run.run_id,
  );
  assert.deepEqual(bobsPages.flat().map((run) => run.run_id), newestFirst(bobs));

  // An administrator pages through everyone's; a filter by state pages the same way.
  const all = await pages(
    (before) => s.runs.list(ADMIN, { limit: 100, ...(before ? { before } : {}) }),
    (run) => run.run_id,
  );
  assert.deepEqual(all.flat().map((run) => run.run_id), newestFirst([...alices, ...bobs]));
  const succeeded = await pages(
    (before) =>
      s.runs.list(ALICE, { states: ["succeeded"], limit: 60, ...(before ? { before } : {}) }),
    (run) => run.run_id,
  );
  assert.deepEqual(succeeded.flat().map((run) => run.run_id), newestFirst(alices));
});

Deno.test("tasks and sessions page with before, newest first, only the caller's", async () => {
  await using home = await tempDir();
  await using s = await services(home.path);
  const alices = await writeTasks(s.ledger, "alice", 25);
  const bobs = await writeTasks(s.ledger, "bob", 5);
  const newestFirst = (ids: string[]) => [...ids].sort().reverse();
  const tasks = await pages(
    (before) => s.tasks.list(ALICE, { limit: 10, ...(before ? { before } : {}) }),
    (task) => task.task_id,
  );
  assert.deepEqual(tasks.map((page) => page.length), [10, 10, 5]);
  assert.deepEqual(tasks.flat().map((task) => task.task_id), newestFirst(alices));
  assert.deepEqual(
    (await s.tasks.list(BOB, { before: newestFirst(alices)[0]! })).map((task) => task.task_id),
    newestFirst(bobs).filter((id) => id < newestFirst(alices)[0]!),
  );

  const sessions: string[] = [];
  for (let i = 0; i < 12; i++) {
    sessions.push((await s.sessions.create({}, i % 4 === 3 ? BOB : ALICE)).session_id);
  }
  const alicesSessions = sessions.filter((_, i) => i % 4 !== 3);
  const paged = await pages(
    (before) => s.sessions.list(ALICE, { limit: 4, ...(before ? { before } : {}) }),
    (session) => session.session_id,
  );
  assert.deepEqual(paged.map((page) => page.length), [4, 4, 1]);
  assert.deepEqual(paged.flat().map((session) => session.session_id), newestFirst(alicesSessions));
  assert.ok(paged.flat().every((session) => session.owner === "alice"));
});

Deno.test("the call log pages with a call's cursor, newest first, only the caller's calls", async () => {
  await using home = await tempDir();
  await using s = await services(home.path);
  const script = `for (let i = 0; i < 7; i++) await agent("step " + i);\nreturn 1;`;
  const alices = await s.runs.start({ script, fake_dispatch: true }, ALICE);
  await s.runs.wait(alices.run_id, ALICE);
  const bobs = await s.runs.start({ script, fake_dispatch: true }, BOB);
  await s.runs.wait(bobs.run_id, BOB);

  const whole = (await dispatchHistory(s.ledger, ALICE)).calls;
  assert.equal(whole.length, 7);
  const paged = await pages(
    async (before) =>
      (await dispatchHistory(s.ledger, ALICE, { limit: 3, ...(before ? { before } : {}) })).calls,
    callCursor,
  );
  assert.deepEqual(paged.map((page) => page.length), [3, 3, 1]);
  assert.deepEqual(paged.flat(), whole);
  assert.ok(paged.flat().every((call) => call.id === alices.run_id));
  // A cursor of another owner's call still finds only the caller's older calls.
  const [bobsLast] = (await dispatchHistory(s.ledger, BOB)).calls;
  const older = await dispatchHistory(s.ledger, ALICE, { before: callCursor(bobsLast!) });
  assert.ok(older.calls.every((call) => call.owner === "alice"));
});

Deno.test("a before of another kind or shape is refused, naming it; a well-formed id that names nothing is a position", async () => {
  await using home = await tempDir();
  await using s = await services(home.path);
  const run = await template(s, ALICE);
  const hostile = `../../${"x".repeat(5000)}\u0007`;

  const [code, message] = await refusal(() =>
    s.runs.list(ALICE, { before: "task_0123456789abcdefgh" })
  );
  assert.equal(code, "invalid_request");
  assert.equal(
    message,
    `Cannot list runs: 'before' "task_0123456789abcdefgh" is not a run_ id`,
  );
  const clipped = await refusal(() => s.runs.list(ALICE, { before: hostile }));
  assert.equal(clipped[0], "invalid_request");
  assert.ok(clipped[1].length < 200, "the value is clipped");
  assert.ok(!clipped[1].includes("\u0007"), "control characters are escaped");
  assert.equal(
    (await refusal(() => s.tasks.list(ALICE, { before: run.run_id })))[0],
    "invalid_request",
  );
  assert.equal(
    (await refusal(() => s.sessions.list(ALICE, { before: run.run_id })))[0],
    "invalid_request",
  );
  for (const before of [run.run_id, "2025-01-01T00:00:00.000Z~run_x~1", `a~${run.run_id}~1`]) {
    assert.equal(
      (await refusal(() => dispatchHistory(s.ledger, ALICE, { before })))[0],
      "invalid_request",
      before,
    );
  }

  const future = newId("run");
  assert.deepEqual((await s.runs.list(ALICE, { before: future })).map((r) => r.run_id), [
    run.run_id,
  ]);
  assert.deepEqual(await s.runs.list(ALICE, { before: "run_000000000000000000" }), []);
});

Deno.test("a states filter examines at most RUN_SCAN_LIMIT runs and stops at limit matches", async () => {
  await using home = await tempDir();
  {
    await using s = await services(home.path);
    await template(s, ALICE);
  }
  // Runs written straight into the KV file (the test reaches inside): ids in order, the
  // oldest succeeded, then more failed ones than a filtered listing examines.
  const kv = await Deno.openKv(`${home.path}/svc.kv`);
  const [model] = await (async () => {
    const ledger = await openLedger(home.path);
    try {
      return await ledger.listRuns({ owner: "alice" });
    } finally {
      ledger.close();
    }
  })();
  const id = (i: number) => `run_${String(i).padStart(18, "0")}`;
  const bare = { ...model!, narration: [], security_events: [] };
  for (let start = 0; start <= RUN_SCAN_LIMIT; start += 200) {
    const atomic = kv.atomic();
    for (let i = start; i < Math.min(start + 200, RUN_SCAN_LIMIT + 1); i++) {
      const status = { ...bare, run_id: id(i), state: i === 0 ? "succeeded" : "failed" };
      atomic.set(KEYS.run(id(i)), toBytes({ v: 1, status }));
      atomic.set(KEYS.runsByOwner("alice", id(i)), toBytes({}));
    }
    assert.ok((await atomic.commit()).ok);
  }
  kv.close();

  const ledger = await openLedger(home.path);
  try {
    for (const owner of ["alice", undefined]) {
      // Below the real run the template came from: only the runs written here.
      const scope = { before: id(RUN_SCAN_LIMIT + 1), ...(owner === undefined ? {} : { owner }) };
      // The one succeeded run lies past the bound: the listing stops before it.
      assert.deepEqual(await ledger.listRuns({ ...scope, states: ["succeeded"] }), []);
      const near = await ledger.listRuns({ ...scope, states: ["succeeded"], before: id(5) });
      assert.deepEqual(near.map((run) => run.run_id), [id(0)]);
      const failed = await ledger.listRuns({ ...scope, states: ["failed"], limit: 3 });
      assert.deepEqual(failed.map((run) => run.run_id), [
        id(RUN_SCAN_LIMIT),
        id(RUN_SCAN_LIMIT - 1),
        id(RUN_SCAN_LIMIT - 2),
      ]);
    }
  } finally {
    ledger.close();
  }
});

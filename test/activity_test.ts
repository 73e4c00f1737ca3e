/**
 * The owner's activity stream: every state change of an owner's runs and tasks, numbered per
 * owner without gaps, committed with the change, written by several processes at once, replayed
 * and followed live.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import {
  type ActivityItem,
  type Caller,
  followActivity,
  type Ledger,
  newId,
  openLedger,
  type RunStatus,
} from "../src/ledger/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { queuedTask, writeTasks } from "./fixtures/activity_writer.ts";
import { denoCommand, fixture, tempDir } from "./helpers.ts";

const ALICE: Caller = { owner: "alice" };
const BOB: Caller = { owner: "bob" };
/** A guard against a follower that is never woken: the test fails instead of hanging. */
const GUARD_MS = 30_000;

/** `[kind, id, state]` of each item, for comparisons. */
function changes(items: ActivityItem[]): Array<[string, string, string]> {
  return items.map((item) => [item.kind, item.id, item.state]);
}

/** Whether the items are numbered 0, 1, 2, ... in order. */
function gapFree(items: ActivityItem[]): boolean {
  return items.every((item, index) => item.seq === index);
}

/** Takes items from a follower until `count` have come; the guard aborts a follower left waiting. */
async function take(
  feed: AsyncGenerator<ActivityItem>,
  count: number,
): Promise<ActivityItem[]> {
  const out: ActivityItem[] = [];
  for await (const item of feed) {
    out.push(item);
    if (out.length === count) break;
  }
  return out;
}

/** A run's status as `RunManager.start()` records it, queued, for writing runs straight to a ledger. */
function queuedRun(owner: string, template: RunStatus): RunStatus {
  return {
    ...structuredClone(template),
    run_id: newId("run"),
    owner,
    state: "queued",
    started_at: null,
    ended_at: null,
  };
}

Deno.test("a run's state changes enter its owner's activity stream in order, with its name, and no other owner's", async () => {
  await using home = await tempDir();
  await using s = await openServices({
    home: home.path,
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  });
  const script = `export const meta = { name: "nightly" };\nreturn await agent("hi");\n`;
  const alices = await s.runs.start({ script, fake_dispatch: true }, ALICE);
  await s.runs.wait(alices.run_id, ALICE);
  const bobs = await s.runs.start({ script: `return 1;` }, BOB);
  await s.runs.wait(bobs.run_id, BOB);

  const items = await Array.fromAsync(s.events.activity(ALICE, { follow: false }));
  assert.deepEqual(changes(items), [
    ["run", alices.run_id, "queued"],
    ["run", alices.run_id, "running"],
    ["run", alices.run_id, "succeeded"],
  ]);
  assert.ok(gapFree(items));
  assert.ok(items.every((item) => item.name === "nightly"));
  const states = (await Array.fromAsync(s.runs.events(alices.run_id, ALICE)))
    .flatMap(({ event }) => event.type === "state" ? [event.at] : []);
  assert.deepEqual(items.map((item) => item.at), states, "each item has its state event's time");

  const bobsItems = await Array.fromAsync(s.events.activity(BOB, { follow: false }));
  assert.deepEqual(changes(bobsItems), [
    ["run", bobs.run_id, "queued"],
    ["run", bobs.run_id, "running"],
    ["run", bobs.run_id, "succeeded"],
  ]);
  assert.ok(gapFree(bobsItems), "each owner's stream counts from 0");
  assert.ok(bobsItems.every((item) => item.name === undefined), "a run without a name has none");
});

Deno.test("a task's state changes enter its owner's activity stream, a cancel before it started included", async () => {
  await using home = await tempDir();
  await using s = await openServices({
    home: home.path,
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  });
  const done = await s.tasks.start({ prompt: "hello", fake_dispatch: true }, ALICE);
  await s.tasks.wait(done.task_id, ALICE);
  const queued = await s.tasks.enqueue({ prompt: "later", fake_dispatch: true }, ALICE);
  await s.tasks.cancel(queued.task_id, ALICE);

  const items = await Array.fromAsync(s.events.activity(ALICE, { follow: false }));
  assert.deepEqual(changes(items), [
    ["task", done.task_id, "queued"],
    ["task", done.task_id, "running"],
    ["task", done.task_id, "succeeded"],
    ["task", queued.task_id, "queued"],
    ["task", queued.task_id, "cancelled"],
  ]);
  assert.ok(gapFree(items));
  assert.deepEqual(await Array.fromAsync(s.events.activity(BOB, { follow: false })), []);
});

Deno.test("a run and a task whose host died appear as interrupted in their owner's activity stream", async () => {
  await using home = await tempDir();
  await using s = await openServices({
    home: home.path,
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    // Only this test's own calls recover.
    recoverEveryMs: 3_600_000,
  });
  const template = await s.runs.wait(
    (await s.runs.start({ script: `return 1;` }, BOB)).run_id,
    BOB,
  );
  // A run and a task recorded by a host that has no record: a host that died.
  const dead = { id: newId("host"), pid: 2 ** 22 + 1 };
  const run = queuedRun("alice", template);
  await s.ledger.createRun(run, {
    input: { script: "return 1;" },
    host: dead,
    event: { type: "state", run_id: run.run_id, at: run.created_at, state: "queued" },
  });
  const task = queuedTask("alice");
  await s.ledger.createTask(task);
  const running = { ...task, state: "running" as const, started_at: task.created_at };
  assert.ok(await s.ledger.saveTask({ ...running, host_id: dead.id }, { eventSeq: 1 }));

  assert.deepEqual(await s.runs.recover(), [run.run_id]);
  assert.deepEqual(await s.tasks.recover(), [task.task_id]);
  const items = await Array.fromAsync(s.events.activity(ALICE, { follow: false }));
  assert.deepEqual(changes(items), [
    ["run", run.run_id, "queued"],
    ["task", task.task_id, "queued"],
    ["task", task.task_id, "running"],
    ["run", run.run_id, "interrupted"],
    ["task", task.task_id, "interrupted"],
  ]);
  assert.ok(gapFree(items));
});

Deno.test("two ledgers on one KV file appending to one owner's stream at once get distinct seqs without gaps", async () => {
  await using home = await tempDir();
  const first = await openLedger(home.path);
  const second = await openLedger(home.path);
  try {
    // Every append reads the head then commits, so appends at once collide and must retry.
    const ids = (await Promise.all(
      Array.from({ length: 40 }, (_, i) => writeTasks(i % 2 === 0 ? first : second, "alice", 1)),
    )).flat();
    for (const ledger of [first, second]) {
      const items = await ledger.readActivity("alice");
      assert.equal(items.length, 40);
      assert.ok(gapFree(items), JSON.stringify(items.map((item) => item.seq)));
      assert.deepEqual(new Set(items.map((item) => item.id)), new Set(ids));
    }
  } finally {
    first.close();
    second.close();
  }
});

Deno.test("runs and tasks of one owner written at once by two ledgers each enter the stream once, with their changes", async () => {
  await using home = await tempDir();
  await using s = await openServices({
    home: home.path,
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  });
  const other = await openLedger(home.path);
  try {
    // The runs' batched writes and the other ledger's appends race for the same head.
    const [runs, tasks] = await Promise.all([
      Promise.all(Array.from({ length: 4 }, async () => {
        const run = await s.runs.start({ script: `return 1;` }, ALICE);
        return (await s.runs.wait(run.run_id, ALICE)).run_id;
      })),
      writeTasks(other, "alice", 30),
    ]);
    const items = await s.ledger.readActivity("alice");
    assert.ok(gapFree(items));
    for (const runId of runs) {
      assert.deepEqual(
        items.filter((item) => item.id === runId).map((item) => item.state),
        ["queued", "running", "succeeded"],
      );
      const feed = await Array.fromAsync(s.runs.events(runId, ALICE));
      assert.ok(feed.every((item, index) => item.seq === index), "the run's own feed is intact");
    }
    assert.deepEqual(
      items.filter((item) => item.kind === "task").map((item) => item.id),
      tasks,
      "each task once, in the order the other ledger wrote them",
    );
    assert.equal(items.length, runs.length * 3 + tasks.length);
  } finally {
    other.close();
  }
});

Deno.test("a follower of the activity stream wakes on a write of its own process without polling", async () => {
  await using home = await tempDir();
  // Polling once an hour: only the ledger's own notification can wake the follower in time.
  const ledger = await openLedger(home.path, { pollMs: 3_600_000 });
  try {
    const signal = AbortSignal.timeout(GUARD_MS);
    // The write comes once the follower waits, so that only a wake-up can bring it the item.
    const { promise: waiting, resolve } = Promise.withResolvers<void>();
    const watched: Pick<Ledger, "readActivity" | "waitForActivity"> = {
      readActivity: (owner, options) => ledger.readActivity(owner, options),
      waitForActivity: (owner, options) => {
        const wait = ledger.waitForActivity(owner, options);
        resolve();
        return wait;
      },
    };
    const feed = followActivity(watched, "alice", { signal, idleMs: 3_600_000 });
    const first = feed.next();
    await waiting;
    // Past the wait's own look at the head, which would also find a write that came before it.
    await new Promise((r) => setTimeout(r, 20));
    const [id] = await writeTasks(ledger, "alice", 1);
    const item = await first;
    assert.equal(signal.aborted, false, "woken by the write, not by the guard");
    assert.deepEqual(item.value && changes([item.value]), [["task", id, "queued"]]);
    await feed.return(undefined);
  } finally {
    ledger.close();
  }
});

Deno.test("a follower of the activity stream sees another process's writes, then replays from after", async () => {
  await using home = await tempDir();
  const ledger = await openLedger(home.path);
  try {
    await writeTasks(ledger, "alice", 2);
    const signal = AbortSignal.timeout(GUARD_MS);
    const following = take(followActivity(ledger, "alice", { after: 1, signal }), 5);
    const writer = await denoCommand({
      args: [
        "run",
        "--allow-read",
        "--allow-write",
        "--allow-env",
        fixture("activity_writer.ts"),
        home.path,
        "alice",
        "5",
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(writer.code, 0, new TextDecoder().decode(writer.stderr));
    const theirs = new TextDecoder().decode(writer.stdout).trim().split("\n");
    const seen = await following;
    assert.equal(signal.aborted, false, "woken by polling the ledger, not by the guard");
    assert.deepEqual(seen.map((item) => [item.seq, item.id]), theirs.map((id, i) => [i + 2, id]));

    const replay = await Array.fromAsync(
      followActivity(ledger, "alice", { after: 4, follow: false }),
    );
    assert.deepEqual(replay.map((item) => item.seq), [5, 6]);
    assert.deepEqual(replay.map((item) => item.id), theirs.slice(3));
  } finally {
    ledger.close();
  }
});

Deno.test("an activity stream survives a restart: seqs continue where they stopped", async () => {
  await using home = await tempDir();
  let ledger: Ledger = await openLedger(home.path);
  await writeTasks(ledger, "alice", 2);
  ledger.close();
  ledger = await openLedger(home.path);
  try {
    await writeTasks(ledger, "alice", 1);
    assert.deepEqual((await ledger.readActivity("alice")).map((item) => item.seq), [0, 1, 2]);
  } finally {
    ledger.close();
  }
});

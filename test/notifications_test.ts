/**
 * Notifications: derived from each owner's activity stream in the commit that records the
 * change, so that a real failed run makes exactly one, a succeeded run none, an approval wait
 * one; read state is each owner's own; both ledger backends (a KV file shared by two handles,
 * and a Postgres database shared by two homes) agree. Every bound has its test.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { type Caller, NOTIFICATION_LIMITS, type TaskStatus } from "../src/ledger/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { LOCAL, tempDir } from "./helpers.ts";
import { type PgServer, startPostgres } from "./pg_server.ts";

const BOB: Caller = { owner: "bob" };
let server: PgServer | undefined;

interface Hosts extends AsyncDisposable {
  a: Services;
  b: Services;
}

async function open(
  home: string,
  url: string | null,
  config = ConfigSchema.parse({}),
  fakeLatencyMs = 0,
) {
  return await openServices({
    home,
    config,
    ledgerUrl: url,
    dispatcher: createDispatcher({ config, fakeLatencyMs }),
    recoverEveryMs: 60_000,
    pollMs: url ? 1000 : 25,
  });
}

const BACKENDS = [
  {
    name: "kv",
    async open(): Promise<Hosts> {
      const home = await tempDir("svc-notify-kv-");
      const a = await open(home.path, null);
      const b = await open(home.path, null);
      return {
        a,
        b,
        async [Symbol.asyncDispose]() {
          await a.close();
          await b.close();
          await home[Symbol.asyncDispose]();
        },
      };
    },
  },
  {
    name: "postgres",
    async open(): Promise<Hosts> {
      server ??= await startPostgres();
      const url = await server.database();
      const homeA = await tempDir("svc-notify-pg-a-");
      const homeB = await tempDir("svc-notify-pg-b-");
      const a = await open(homeA.path, url);
      const b = await open(homeB.path, url);
      return {
        a,
        b,
        async [Symbol.asyncDispose]() {
          await a.close();
          await b.close();
          await homeA[Symbol.asyncDispose]();
          await homeB[Symbol.asyncDispose]();
        },
      };
    },
  },
];

async function ended(s: Services, script: string, caller: Caller = LOCAL, extra = {}) {
  const run = await s.runs.start({ script, fake_dispatch: true, ...extra }, caller);
  return await s.runs.wait(run.run_id, caller);
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a failed run makes exactly one notification, seen from the other host; a succeeded one none`, async () => {
    await using h = await backend.open();
    const ok = await ended(h.a, `return await agent("fine");`);
    assert.equal(ok.state, "succeeded");
    assert.deepEqual((await h.b.notifications.list(LOCAL)).items, []);
    const bad = await ended(h.a, `await agent("one"); throw new Error("boom");`);
    assert.equal(bad.state, "failed");
    const page = await h.b.notifications.list(LOCAL);
    assert.equal(page.items.length, 1);
    const [note] = page.items;
    assert.equal(note!.kind, "failed");
    assert.equal(note!.run_id, bad.run_id);
    assert.equal(note!.state, "failed");
    assert.equal(note!.code, bad.error?.code);
    assert.equal(note!.read, false);
    assert.equal(page.unread, 1);
    assert.match(note!.id, /^ntf_[0-9a-f]{12}_\d+$/);
    // Another owner sees nothing and marks nothing, even naming the id.
    assert.deepEqual((await h.b.notifications.list(BOB)).items, []);
    assert.deepEqual(await h.b.notifications.markRead(BOB, { ids: [note!.id] }), {
      marked: 0,
      unread: 0,
    });
    assert.deepEqual(await h.b.notifications.markRead(BOB, { all: true }), {
      marked: 0,
      unread: 0,
    });
    assert.equal(await h.a.notifications.unread(LOCAL), 1);
    // The owner marks it read from either host.
    assert.deepEqual(await h.b.notifications.markRead(LOCAL, { ids: [note!.id] }), {
      marked: 1,
      unread: 0,
    });
    const after = await h.a.notifications.list(LOCAL);
    assert.equal(after.items[0]!.read, true);
    assert.equal(after.unread, 0);
    assert.deepEqual((await h.a.notifications.list(LOCAL, { unread: true })).items, []);
  });

  Deno.test(`${backend.name}: runs failing at once on both hosts make exactly one notification each`, async () => {
    await using h = await backend.open();
    const runs = await Promise.all(
      Array.from({ length: 6 }, (_, i) => ended(i % 2 ? h.a : h.b, `throw new Error("x${i}")`)),
    );
    const page = await h.a.notifications.list(LOCAL, { limit: 100 });
    assert.deepEqual(
      page.items.map((n) => n.run_id).sort(),
      runs.map((r) => r.run_id).sort(),
    );
    assert.equal(page.unread, 6);
    assert.equal(new Set(page.items.map((n) => n.id)).size, 6);
  });

  Deno.test(`${backend.name}: a run that hits its budget makes a limit notification`, async () => {
    await using h = await backend.open();
    const run = await ended(
      h.a,
      `await agent("a long first prompt"); await agent("two"); return 1;`,
      LOCAL,
      { budget_tokens: 1 },
    );
    assert.ok(run.conditions.some((c) => c.type === "BudgetExceeded"), JSON.stringify(run));
    const [note, ...rest] = (await h.b.notifications.list(LOCAL)).items;
    assert.deepEqual(rest, []);
    assert.equal(note!.kind, "limit");
    assert.equal(note!.limit, "BudgetExceeded");
    assert.equal(note!.run_id, run.run_id);
  });
}

Deno.test("a call waiting for approval makes one notification, with its run", async () => {
  await using home = await tempDir("svc-notify-ask-");
  const ask = ConfigSchema.parse({ sandbox: { full: "ask" } });
  await using s = await open(home.path, null, ask);
  const run = await s.runs.start({
    script: `return await agent("deploy", { sandbox: "full" });`,
    fake_dispatch: true,
    sandbox_max: "full",
  }, LOCAL);
  let approvalId: string | undefined;
  for await (const { event } of s.runs.events(run.run_id, LOCAL)) {
    if (event.type === "approval" && event.state === "pending") {
      approvalId = event.approval_id;
      break;
    }
  }
  const page = await s.notifications.list(LOCAL);
  assert.equal(page.items.length, 1);
  assert.equal(page.items[0]!.kind, "approval");
  assert.equal(page.items[0]!.approval_id, approvalId);
  assert.equal(page.items[0]!.run_id, run.run_id);
  await s.approvals.decide(approvalId!, LOCAL, "approve", {});
  const done = await s.runs.wait(run.run_id, LOCAL);
  assert.equal(done.state, "succeeded");
  // The decision and the run's success add nothing.
  assert.equal((await s.notifications.list(LOCAL)).items.length, 1);
});

Deno.test("a run that times out makes one notification; a cancelled one none", async () => {
  await using home = await tempDir("svc-notify-timeout-");
  await using s = await open(home.path, null, ConfigSchema.parse({}), 30_000);
  const slow = await s.runs.start({
    script: `return await agent("slow");`,
    fake_dispatch: true,
    timeout: 1,
  }, LOCAL);
  const cancelled = await s.runs.start({
    script: `return await agent("slow");`,
    fake_dispatch: true,
  }, LOCAL);
  await s.runs.cancel(cancelled.run_id, LOCAL);
  assert.equal((await s.runs.wait(cancelled.run_id, LOCAL)).state, "cancelled");
  assert.equal((await s.runs.wait(slow.run_id, LOCAL)).state, "timeout");
  const page = await s.notifications.list(LOCAL);
  assert.deepEqual(page.items.map((n) => [n.run_id, n.kind, n.state]), [[
    slow.run_id,
    "failed",
    "timeout",
  ]]);
});

/** A failed task recorded straight in the ledger: the cheapest way to many notifications. */
function failedTask(owner: string, n: number): TaskStatus {
  const at = new Date().toISOString();
  return {
    task_id: `task_${String(n).padStart(12, "0")}`,
    owner,
    state: "queued",
    error: { code: "provider_failed", message: "no" },
    created_at: at,
    started_at: null,
    ended_at: null,
  } as unknown as TaskStatus;
}

async function failTask(s: Services, owner: string, n: number): Promise<void> {
  const task = failedTask(owner, n);
  await s.ledger.createTask(task);
  await s.ledger.saveTask({ ...task, state: "failed", ended_at: task.created_at }, {
    eventSeq: 1,
  });
}

Deno.test("pages are newest first with a cursor; up_to and all mark read; every bound holds", async () => {
  await using home = await tempDir("svc-notify-pages-");
  await using s = await open(home.path, null);
  for (let n = 0; n < 5; n++) await failTask(s, "local", n);
  const first = await s.notifications.list(LOCAL, { limit: 2 });
  assert.deepEqual(first.items.map((i) => i.task_id), ["task_000000000004", "task_000000000003"]);
  assert.ok(first.next_cursor);
  const second = await s.notifications.list(LOCAL, { limit: 2, cursor: first.next_cursor! });
  assert.deepEqual(second.items.map((i) => i.task_id), ["task_000000000002", "task_000000000001"]);
  const third = await s.notifications.list(LOCAL, { limit: 2, cursor: second.next_cursor! });
  assert.deepEqual(third.items.map((i) => i.task_id), ["task_000000000000"]);
  assert.equal(third.next_cursor, null);
  // Up to the middle one marks it and the older ones.
  const middle = second.items[0]!.id;
  assert.deepEqual(await s.notifications.markRead(LOCAL, { up_to: middle }), {
    marked: 3,
    unread: 2,
  });
  assert.deepEqual(
    (await s.notifications.list(LOCAL, { unread: true })).items.map((i) => i.task_id),
    ["task_000000000004", "task_000000000003"],
  );
  assert.deepEqual(await s.notifications.markRead(LOCAL, { all: true }), { marked: 2, unread: 0 });
  // A cursor that is not one of this owner's ids is refused, not turned into a key.
  await assert.rejects(
    () => s.notifications.list(BOB, { cursor: first.next_cursor! }),
    (e: unknown) => e instanceof SvcError && e.code === "invalid_request",
  );
  // A page holds at most NOTIFICATION_LIMITS.page whatever is asked.
  for (let n = 5; n < NOTIFICATION_LIMITS.page + 10; n++) await failTask(s, "local", n);
  const big = await s.notifications.list(LOCAL, { limit: 10_000 });
  assert.equal(big.items.length, NOTIFICATION_LIMITS.page);
  // One mark-read names at most NOTIFICATION_LIMITS.ids ids: the rest are ignored.
  const newest = await s.notifications.list(LOCAL, { limit: 100 });
  const older = await s.notifications.list(LOCAL, { limit: 100, cursor: newest.next_cursor! });
  const ids = [...newest.items, ...older.items].map((i) => i.id);
  assert.ok(ids.length > NOTIFICATION_LIMITS.ids);
  const marked = await s.notifications.markRead(LOCAL, { ids });
  assert.equal(marked.marked, NOTIFICATION_LIMITS.ids);
});

Deno.test("an owner keeps at most NOTIFICATION_LIMITS.keep notifications: the oldest go", async () => {
  await using home = await tempDir("svc-notify-keep-");
  await using s = await open(home.path, null);
  const total = NOTIFICATION_LIMITS.keep + 3;
  for (let n = 0; n < total; n++) await failTask(s, "local", n);
  assert.equal(await s.notifications.unread(LOCAL), NOTIFICATION_LIMITS.keep);
  let oldest: string | undefined;
  let cursor: string | undefined;
  let count = 0;
  do {
    const page = await s.notifications.list(LOCAL, { limit: 100, ...(cursor ? { cursor } : {}) });
    count += page.items.length;
    oldest = page.items.at(-1)?.task_id ?? oldest;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  assert.equal(count, NOTIFICATION_LIMITS.keep);
  assert.equal(oldest, "task_000000000003");
});

Deno.test("a run's long name is clipped in its notification's title", async () => {
  await using home = await tempDir("svc-notify-clip-");
  await using s = await open(home.path, null);
  const name = "n".repeat(5000);
  await ended(s, `export const meta = { name: ${JSON.stringify(name)} };\nthrow new Error("x");`);
  const [note] = (await s.notifications.list(LOCAL)).items;
  assert.ok(note);
  assert.ok(note.title.length <= NOTIFICATION_LIMITS.title + 40, String(note.title.length));
  assert.ok((note.name ?? "").length <= 200);
});

Deno.test("postgres: stop the notification suite's server", async () => {
  await server?.[Symbol.asyncDispose]();
  server = undefined;
});

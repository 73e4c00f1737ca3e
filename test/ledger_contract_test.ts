/**
 * The ledger's contract, table-driven over both backends: two hosts on one ledger (two handles
 * on one KV file, or two homes on one Postgres database) see each other's runs, follow and
 * cancel them, claim queued work once, never share a card number or a lease, and read each
 * other's scripts and large values. The same script ends the same way on either backend.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { type AutomationRecord, newId, type RunEvent, type RunStatus } from "../src/ledger/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { LOCAL, tempDir } from "./helpers.ts";
import { type PgServer, startPostgres } from "./pg_server.ts";

let server: PgServer | undefined;

interface Hosts extends AsyncDisposable {
  a: Services;
  b: Services;
}

interface Backend {
  name: "kv" | "postgres";
  open(options?: { fakeLatencyMs?: number }): Promise<Hosts>;
}

async function hosts(
  homes: [string, string],
  url: string | null,
  fakeLatencyMs: number,
  cleanup: () => Promise<void>,
): Promise<Hosts> {
  const open = (home: string) =>
    openServices({
      home,
      ledgerUrl: url,
      dispatcher: createDispatcher({ fakeLatencyMs }),
      recoverEveryMs: 60_000,
      pollMs: url ? 1000 : 25,
      // Room for every item a test has each host claim at once (admission control's caps).
      runs: { admission: { hostLiveGuests: 32, ownerLiveRuns: 32 } },
    });
  const a = await open(homes[0]);
  const b = await open(homes[1]);
  return {
    a,
    b,
    async [Symbol.asyncDispose]() {
      await a.close();
      await b.close();
      await cleanup();
    },
  };
}

const BACKENDS: Backend[] = [
  {
    name: "kv",
    async open(options = {}) {
      const home = await tempDir("svc-contract-kv-");
      return await hosts(
        [home.path, home.path],
        null,
        options.fakeLatencyMs ?? 0,
        async () => await home[Symbol.asyncDispose](),
      );
    },
  },
  {
    name: "postgres",
    async open(options = {}) {
      server ??= await startPostgres();
      const url = await server.database();
      const a = await tempDir("svc-contract-pg-a-");
      const b = await tempDir("svc-contract-pg-b-");
      return await hosts([a.path, b.path], url, options.fakeLatencyMs ?? 0, async () => {
        await a[Symbol.asyncDispose]();
        await b[Symbol.asyncDispose]();
      });
    },
  },
];

const SLOW = `
for (let i = 0; i < 40; i++) await agent("step " + i, { label: "s" + i });
return "done";
`;

/** Drops what differs between two runs of one script (ids, times, durations, hosts). */
function comparable(status: RunStatus): unknown {
  return JSON.parse(JSON.stringify(status), (key, value) => {
    if (/(_id|_at|_ms|^at|^started|^ended|^created|host)$/.test(key)) return undefined;
    return value;
  });
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a run started on one host is listed, followed and cancelled from the other`, async () => {
    await using h = await backend.open({ fakeLatencyMs: 50 });
    const started = await h.a.runs.start({ script: SLOW, fake_dispatch: true }, LOCAL);
    const listed = await h.b.runs.list(LOCAL);
    assert.ok(listed.some((run) => run.run_id === started.run_id), "listed on the other host");
    const seen: RunEvent[] = [];
    let cancelled = false;
    for await (const item of h.b.runs.events(started.run_id, LOCAL)) {
      seen.push(item.event);
      // Two calls seen from the other host: cancel there.
      if (!cancelled && seen.filter((e) => e.type === "call").length >= 2) {
        cancelled = true;
        await h.b.runs.cancel(started.run_id, LOCAL);
      }
    }
    const end = await h.a.runs.wait(started.run_id, LOCAL);
    assert.equal(end.state, "cancelled");
    assert.equal((await h.b.runs.get(started.run_id, LOCAL))?.state, "cancelled");
    // Every event once, in order, as the running host wrote them.
    const stored = await Array.fromAsync(h.a.runs.events(started.run_id, LOCAL));
    assert.deepEqual(seen, stored.map((item) => item.event));
    assert.equal(seen.at(-1)?.type, "state");
  });

  Deno.test(`${backend.name}: a run's script and large values are read and resumed from any host`, async () => {
    await using h = await backend.open();
    const script = `
      const parts = [];
      for (let i = 0; i < 3; i++) parts.push(await agent("part " + i, { label: "p" + i }));
      return { big: "x".repeat(60_000), parts };
    `;
    const started = await h.a.runs.start({ script, fake_dispatch: true }, LOCAL);
    const done = await h.a.runs.wait(started.run_id, LOCAL);
    assert.equal(done.state, "succeeded", JSON.stringify(done.error));
    const there = await h.b.runs.get(started.run_id, LOCAL);
    assert.deepEqual(there?.result, done.result);
    assert.equal((await h.b.runs.input(started.run_id, LOCAL)).script, script);
    // Resumed on the other host: the journal replays, no call is made again.
    const resumed = await h.b.runs.resume(started.run_id, LOCAL, {});
    const again = await h.b.runs.wait(resumed.run_id, LOCAL);
    assert.equal(again.state, "succeeded", JSON.stringify(again.error));
    assert.deepEqual(again.result, done.result);
    assert.equal(again.calls.replayed, 3);
  });

  Deno.test(`${backend.name}: queued runs and tasks are claimed once by two racing hosts`, async () => {
    await using h = await backend.open();
    const runs: string[] = [];
    const tasks: string[] = [];
    for (let i = 0; i < 15; i++) {
      runs.push(
        (await h.a.runs.enqueue({ script: `return ${i};`, fake_dispatch: true }, LOCAL)).run_id,
      );
      tasks.push(
        (await h.a.tasks.enqueue({ prompt: `task ${i}`, fake_dispatch: true }, LOCAL)).task_id,
      );
    }
    assert.equal((await h.b.ledger.listQueue()).length, 30);
    const claims = await Promise.all([
      ...runs.flatMap((id) => [h.a.runs.work(id), h.b.runs.work(id)]),
      ...tasks.flatMap((id) => [h.a.tasks.claim(id), h.b.tasks.claim(id)]),
    ]);
    for (let i = 0; i < claims.length; i += 2) {
      assert.equal([claims[i], claims[i + 1]].filter(Boolean).length, 1, `item ${i / 2}`);
    }
    for (const id of runs) {
      const end = await h.b.runs.wait(id, LOCAL);
      assert.equal(end.state, "succeeded");
    }
    assert.deepEqual(await h.a.ledger.listQueue(), []);
  });

  Deno.test(`${backend.name}: two hosts writing the board never share a card number`, async () => {
    await using h = await backend.open();
    const writes = await Promise.all(
      Array.from(
        { length: 24 },
        (_, i) =>
          (i % 2 ? h.a : h.b).board.write(
            { action: "new", title: `card ${i}`, mode: "apply" },
            LOCAL,
          ),
      ),
    );
    const numbers = writes.map((w) => Number(w.card?.issue_id)).sort((x, y) => x - y);
    assert.deepEqual(numbers, Array.from({ length: 24 }, (_, i) => i + 1));
  });

  Deno.test(`${backend.name}: a lease has one holder however many hosts ask at once`, async () => {
    await using h = await backend.open();
    const asks = await Promise.all(
      Array.from(
        { length: 12 },
        (_, i) =>
          (i % 2 ? h.a : h.b).ledger.acquireLease("scheduler", { holder: `h${i}`, ttlMs: 5000 }),
      ),
    );
    const holders = new Set(asks.filter((lease) => lease.held).map((lease) => lease.holder));
    assert.equal(holders.size, 1);
    const read = await h.b.ledger.readLease("scheduler");
    assert.equal(read.holder, [...holders][0]);
  });

  Deno.test(`${backend.name}: two hosts saving automations at once never pass an owner's quota`, async () => {
    await using h = await backend.open();
    const quota = { perOwner: 4, total: 6 };
    const record = (owner: string, i: number): AutomationRecord => ({
      automation_id: newId("aut"),
      name: `a${i}`,
      owner,
      cron: "0 3 * * *",
      action: { workflow: "w" },
      source: "api",
      created_at: new Date().toISOString(),
    });
    const saves = await Promise.all(
      Array.from(
        { length: 12 },
        (_, i) => (i % 2 ? h.a : h.b).ledger.saveAutomation(record("bob", i), quota),
      ),
    );
    assert.equal(saves.filter((refusal) => refusal === undefined).length, 4);
    assert.deepEqual(saves.find((refusal) => refusal !== undefined), {
      reason: "owner",
      count: 4,
      limit: 4,
    });
    // Two places are left in the total: alice takes them, then the host is full.
    const alice = await Promise.all(
      [0, 1, 2].map((i) => h.a.ledger.saveAutomation(record("alice", i), quota)),
    );
    assert.equal(alice.filter((refusal) => refusal === undefined).length, 2);
    assert.equal(alice.find((refusal) => refusal !== undefined)?.reason, "total");
    // A delete counts off at once, on the other host too.
    const bobs = (await h.b.ledger.listAutomations()).filter((r) => r.owner === "bob");
    assert.ok(await h.b.ledger.deleteAutomation(bobs[0]!.automation_id));
    assert.equal(await h.a.ledger.saveAutomation(record("bob", 99), quota), undefined);
  });

  Deno.test(`${backend.name}: every host is listed with its role, machine and providers`, async () => {
    await using h = await backend.open();
    // A host writes its record with its first hold (a run, a task, a daemon).
    const release = await h.a.host.hold();
    const release2 = await h.b.host.hold();
    try {
      const listed = await h.b.ledger.listHosts();
      const ids = listed.map((host) => host.host_id).sort();
      assert.deepEqual(ids, [h.a.host.ref.id, h.b.host.ref.id].sort());
      for (const host of listed) {
        assert.ok(host.alive);
        assert.deepEqual(host.providers, ["fake"]);
      }
    } finally {
      release();
      release2();
    }
  });
}

Deno.test("the same script ends the same way on either backend, clipped values included", async () => {
  const script = `
    log("a long line " + "y".repeat(70_000));
    const answers = await parallel([1, 2, 3].map((i) => () => agent("q" + i, { label: "l" + i })));
    phase("half way " + "z".repeat(5_000));
    return { answers, tail: "w".repeat(50_000) };
  `;
  const ends: unknown[] = [];
  for (const backend of BACKENDS) {
    await using h = await backend.open();
    const started = await h.a.runs.start({ script, fake_dispatch: true }, LOCAL);
    const end = await h.a.runs.wait(started.run_id, LOCAL);
    assert.equal(end.state, "succeeded", JSON.stringify(end.error));
    const read = await h.b.runs.get(started.run_id, LOCAL);
    ends.push(comparable(read!));
  }
  assert.deepEqual(ends[1], ends[0]);
});

Deno.test("postgres: stop the contract suite's server", async () => {
  await server?.[Symbol.asyncDispose]();
  server = undefined;
});

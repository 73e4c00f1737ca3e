/**
 * What a commit costs the disk on the Postgres ledger: a lazy commit (a run's feed events
 * alone) flushes no WAL of its own, a plain one does, and a journaled sequential step of a run
 * costs one flush, not two. Counted by Postgres itself (`pg_stat_wal.wal_sync`) on a server
 * with fsync on, so that the count holds however loaded the machine is.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { RunManager } from "../src/engine/mod.ts";
import { openLedger } from "../src/ledger/mod.ts";
import { openPostgresKv } from "../src/platform/postgres.ts";
import { LOCAL, tempDir } from "./helpers.ts";
import { type PgServer, startPostgres } from "./pg_server.ts";

/** WAL flushes so far, once every connection of svc has ended and reported its counts. */
async function walFlushes(server: PgServer, database: string): Promise<number> {
  // A backend reports its WAL counts when it exits: wait until svc's have.
  for (let i = 0; i < 200; i++) {
    const left = await server.psql(
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'svc'",
      database,
    );
    if (Number(left.trim()) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return Number((await server.psql("SELECT wal_sync FROM pg_stat_wal", database)).trim());
}

const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("postgres: a lazy commit flushes no WAL of its own, a plain one does, and both apply", async () => {
  await using server = await startPostgres({ durable: true });
  const url = await server.database("flush_store");
  const commits = 20;
  const count = async (lazy: boolean) => {
    const store = await openPostgresKv(url, { namespace: "ledger", watch: [["tick"]] });
    const before = await server.psql("SELECT wal_sync FROM pg_stat_wal", "flush_store");
    try {
      for (let i = 0; i < commits; i++) {
        const written = await store.atomic().set([lazy ? "lazy" : "plain", i], bytes(`v${i}`))
          .set(["tick"], bytes("{}")).commit({ lazy });
        assert.ok(written.ok);
      }
      // A lazy commit is seen at once, by this handle and by any other.
      const entry = await store.get([lazy ? "lazy" : "plain", commits - 1]);
      assert.equal(new TextDecoder().decode(entry.value!), `v${commits - 1}`);
    } finally {
      await store.close();
    }
    return await walFlushes(server, "flush_store") - Number(before.trim());
  };
  const plain = await count(false);
  const lazy = await count(true);
  assert.ok(plain >= commits, `${commits} plain commits flushed the WAL ${plain} times`);
  // The WAL writer flushes lazy commits every 200 ms: a burst of them costs one or two.
  assert.ok(lazy <= 3, `${commits} lazy commits flushed the WAL ${lazy} times`);
});

Deno.test("postgres: a journaled sequential step costs one WAL flush: its feed events ride with its entry", async () => {
  await using server = await startPostgres({ durable: true });
  await using home = await tempDir("svc-pg-flush-");
  const url = await server.database("flush_steps");
  const chain = async (calls: number) => {
    const before = await walFlushes(server, "flush_steps");
    const ledger = await openLedger(`${home.path}/h${calls}`, { url });
    const manager = await RunManager.create({
      dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
      ledger,
    });
    try {
      const started = await manager.start({
        script: `for (let i = 0; i < ${calls}; i++) await agent("step " + i);\nreturn "done";\n`,
        filename: "chain.js",
        fake_dispatch: true,
      }, LOCAL);
      const status = await manager.wait(started.run_id, LOCAL);
      assert.equal(status.state, "succeeded");
      const events = (await Array.fromAsync(manager.events(started.run_id, LOCAL))).map((item) =>
        item.event.type
      );
      // Lazily written or not, every call's start is in the feed.
      assert.equal(events.filter((type) => type === "call_started").length, calls);
    } finally {
      await manager.close();
      await ledger.close();
    }
    return await walFlushes(server, "flush_steps") - before;
  };
  const one = await chain(1);
  const many = await chain(41);
  const perStep = (many - one) / 40;
  assert.ok(
    perStep <= 1.25,
    `a step flushed the WAL ${perStep} times (${one} for 1 call, ${many} for 41)`,
  );
});

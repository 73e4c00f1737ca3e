/**
 * The store contract both ledger backends keep: Deno KV files and Postgres. Every case runs
 * against each, so the ledger above them behaves the same on either.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import postgres from "postgres";
import { platform } from "../src/platform/mod.ts";
import type { KvKey, KvStore } from "../src/platform/mod.ts";
import { openPostgresKv } from "../src/platform/postgres.ts";
import { decodeKey, encodeKey, encodeKeyHex } from "../src/platform/pg_keys.ts";
import { tempDir } from "./helpers.ts";
import { type PgServer, startPostgres } from "./pg_server.ts";

let server: PgServer | undefined;
async function pg(): Promise<PgServer> {
  server ??= await startPostgres();
  return server;
}

interface Backend {
  name: string;
  /** Two handles on one store, as two hosts (or processes) have. */
  open(): Promise<{ a: KvStore; b: KvStore } & AsyncDisposable>;
}

const BACKENDS: Backend[] = [
  {
    name: "kv",
    async open() {
      const dir = await tempDir("svc-kv-contract-");
      const a = await platform().openKv(`${dir.path}/svc.kv`);
      const b = await platform().openKv(`${dir.path}/svc.kv`);
      return {
        a,
        b,
        async [Symbol.asyncDispose]() {
          a.close();
          b.close();
          await dir[Symbol.asyncDispose]();
        },
      };
    },
  },
  {
    name: "postgres",
    async open() {
      const url = await (await pg()).database();
      const a = await openPostgresKv(url, { namespace: "ledger", watch: [["tick"]] });
      const b = await openPostgresKv(url, { namespace: "ledger", watch: [["tick"]] });
      return {
        a,
        b,
        async [Symbol.asyncDispose]() {
          await a.close();
          await b.close();
        },
      };
    },
  },
];

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (value: Uint8Array | null) => value === null ? null : new TextDecoder().decode(value);

async function keys(store: KvStore, prefix: KvKey, options = {}): Promise<KvKey[]> {
  const out: KvKey[] = [];
  for await (const entry of store.list(prefix, options)) out.push(entry.key);
  return out;
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a check of a versionstamp lets one of two racing commits through`, async () => {
    await using s = await backend.open();
    assert.equal((await s.a.get(["q", "item"])).value, null);
    assert.ok(
      (await s.a.atomic().check(["q", "item"], null).set(["q", "item"], bytes("x")).commit()).ok,
    );
    const seen = await s.a.get(["q", "item"]);
    assert.equal(text(seen.value), "x");
    assert.ok(seen.versionstamp);
    // Ten claims of the same item from two handles at once: exactly one wins.
    const claims = await Promise.all(
      Array.from(
        { length: 10 },
        (_, i) =>
          (i % 2 ? s.a : s.b).atomic().check(["q", "item"], seen.versionstamp)
            .set(["q", "item"], bytes(`claimed by ${i}`)).commit(),
      ),
    );
    assert.equal(claims.filter((c) => c.ok).length, 1);
    const after = await s.b.get(["q", "item"]);
    assert.notEqual(after.versionstamp, seen.versionstamp);
    // An absent key checked as absent by many at once: one creates it.
    const creates = await Promise.all(
      Array.from(
        { length: 10 },
        (_, i) =>
          (i % 2 ? s.a : s.b).atomic().check(["new"], null).set(["new"], bytes(String(i))).commit(),
      ),
    );
    assert.equal(creates.filter((c) => c.ok).length, 1);
  });

  Deno.test(`${backend.name}: keys list in Deno KV's order, by prefix and range, both ways, in pages`, async () => {
    await using s = await backend.open();
    const all: KvKey[] = [
      ["e", -2.5],
      ["e", -1],
      ["e", 0],
      ["e", 3],
      ["e", 250],
      ["e", "a"],
      ["e", "a\u0000b"],
      ["e", "ab"],
      ["e", "b"],
    ];
    const atomic = s.a.atomic();
    for (const key of [...all].reverse()) atomic.set(key, bytes(JSON.stringify(key)));
    atomic.set(["e"], bytes("the prefix itself")).set(["f", 1], bytes("other"));
    assert.ok((await atomic.commit()).ok);
    // Strings before numbers? Deno KV orders strings before numbers.
    const listed = await keys(s.b, ["e"]);
    const expected = [...all].sort((x, y) => {
      const [p, q] = [x[1]!, y[1]!];
      if (typeof p !== typeof q) return typeof p === "string" ? -1 : 1;
      if (typeof p === "number") return p - (q as number);
      return Buffer.compare(Buffer.from(p as string), Buffer.from(q as string));
    });
    assert.deepEqual(listed, expected);
    assert.deepEqual(await keys(s.b, ["e"], { reverse: true }), [...expected].reverse());
    assert.deepEqual(await keys(s.b, ["e"], { start: ["e", 0], end: ["e", 250] }), [["e", 0], [
      "e",
      3,
    ]]);
    assert.deepEqual(await keys(s.b, ["e"], { start: ["e", 250] }), [["e", 250]]);
    assert.deepEqual(await keys(s.b, ["e"], { limit: 2, reverse: true }), [["e", 250], ["e", 3]]);
    // Many rows come in pages, each once, in order.
    for (let chunk = 0; chunk < 3; chunk++) {
      const write = s.a.atomic();
      for (let i = chunk * 300; i < chunk * 300 + 300; i++) {
        write.set(["many", i], bytes(String(i)));
      }
      assert.ok((await write.commit()).ok);
    }
    const many = await keys(s.b, ["many"]);
    assert.deepEqual(many, Array.from({ length: 900 }, (_, i) => ["many", i]));
    assert.equal((await keys(s.b, ["many"], { limit: 600, reverse: true }))[599]?.[1], 300);
  });

  Deno.test(`${backend.name}: a commit applies its writes in order, all or none, within KV's limits`, async () => {
    await using s = await backend.open();
    assert.ok(
      (await s.a.atomic().set(["k"], bytes("1")).delete(["k"]).set(["j"], bytes("2")).commit()).ok,
    );
    assert.equal((await s.b.get(["k"])).value, null);
    assert.equal(text((await s.b.get(["j"])).value), "2");
    // A failed check writes nothing.
    const failed = await s.a.atomic().check(["j"], null).set(["l"], bytes("3")).delete(["j"])
      .commit();
    assert.equal(failed.ok, false);
    assert.equal((await s.b.get(["l"])).value, null);
    assert.equal(text((await s.b.get(["j"])).value), "2");
    await assert.rejects(
      async () => await s.a.atomic().set(["big"], new Uint8Array(65_537)).commit(),
      /Value too large/,
    );
    const full = s.a.atomic();
    for (let i = 0; i < 1001; i++) full.set(["m", i], bytes("x"));
    await assert.rejects(async () => await full.commit(), /Too many mutations/);
    assert.equal((await s.b.get(["m", 0])).value, null);
  });

  Deno.test(`${backend.name}: a lazy commit is checked, atomic and seen at once like any other`, async () => {
    await using s = await backend.open();
    const first = await s.a.atomic().check(["lazy"], null).set(["lazy"], bytes("1"))
      .set(["other"], bytes("2")).commit({ lazy: true });
    assert.ok(first.ok);
    const seen = await s.b.get(["lazy"]);
    assert.equal(text(seen.value), "1");
    assert.equal(text((await s.b.get(["other"])).value), "2");
    // Its versionstamp guards later commits, lazy or not, as a plain commit's does.
    const stale = await s.b.atomic().check(["lazy"], null).set(["lazy"], bytes("x"))
      .delete(["other"]).commit({ lazy: true });
    assert.equal(stale.ok, false);
    assert.equal(text((await s.a.get(["other"])).value), "2");
    assert.ok(
      (await s.b.atomic().check(["lazy"], seen.versionstamp).set(["lazy"], bytes("3")).commit())
        .ok,
    );
    assert.equal(text((await s.a.get(["lazy"])).value), "3");
  });
}

Deno.test("postgres: a write of a watched key wakes the other host's listeners", async () => {
  const url = await (await pg()).database();
  const a = await openPostgresKv(url, { namespace: "ledger", watch: [["tick"]] });
  const b = await openPostgresKv(url, { namespace: "ledger", watch: [["tick"]] });
  const board = await openPostgresKv(url, { namespace: "board", watch: [["tick"]] });
  try {
    let woken = 0;
    let boardWoken = 0;
    board.onChange(() => boardWoken++);
    const heard = new Promise<void>((resolve) => b.onChange(() => (woken++, resolve())));
    await a.atomic().set(["other"], bytes("x")).commit();
    await a.atomic().set(["tick"], bytes("{}")).commit();
    await heard;
    assert.equal(woken, 1);
    // Namespaces are apart: the board's store neither heard it nor sees the ledger's rows.
    assert.equal(boardWoken, 0);
    assert.equal((await board.get(["other"])).value, null);
  } finally {
    await Promise.all([a.close(), b.close(), board.close()]);
  }
});

Deno.test("postgres: a burst of watched writes wakes the other host once or twice, the last time after the last write", async () => {
  const url = await (await pg()).database();
  const a = await openPostgresKv(url, { namespace: "ledger", watch: [["tick"]] });
  const b = await openPostgresKv(url, { namespace: "ledger", watch: [["tick"]] });
  try {
    const writes = 60;
    const seen: string[] = [];
    let wake: () => void = () => {};
    b.onChange(() => {
      // What a woken reader reads: the notification comes after the writes it announces.
      b.get(["tick"]).then((entry) => {
        seen.push(text(entry.value)!);
        wake();
      });
    });
    // Issued at once, as a run's wave of calls ending together, on the store's connections.
    await Promise.all(
      Array.from(
        { length: writes },
        (_, i) => a.atomic().set(["tick"], bytes(String(i))).commit({ lazy: i % 2 === 0 }),
      ),
    );
    const last = text((await a.get(["tick"])).value)!;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`never woken after the last write`)), 5000);
      wake = () => {
        if (seen.includes(last)) (clearTimeout(timer), resolve());
      };
      wake();
    });
    // The first write announces itself, the rest share one notification (two when a write
    // settled while the first notification was on its way).
    assert.ok(seen.length <= 3, `${seen.length} wake-ups for ${writes} writes`);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

Deno.test("postgres: a write announced later is announced when its store closes", async () => {
  const url = await (await pg()).database();
  const a = await openPostgresKv(url, { namespace: "ledger", watch: [["tick"]] });
  const b = await openPostgresKv(url, { namespace: "ledger", watch: [["tick"]] });
  try {
    let woken = 0;
    let heard: () => void = () => {};
    b.onChange(() => (woken++, heard()));
    const first = new Promise<void>((resolve) => heard = resolve);
    await a.atomic().set(["tick"], bytes("1")).commit();
    await first;
    // Within the gathering window: not announced by its own commit.
    const second = new Promise<void>((resolve) => heard = resolve);
    await a.atomic().set(["tick"], bytes("2")).commit();
    await a.close();
    await second;
    assert.equal(woken, 2);
    assert.equal(text((await b.get(["tick"])).value), "2");
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

Deno.test("postgres: keys encode to bytes that decode back, in Deno KV's order", () => {
  const samples: KvKey[] = [[], ["a"], ["", 0], [-0.5, "x\u0000y", 1e300, -Infinity], [
    "ü",
    Infinity,
  ]];
  for (const key of samples) assert.deepEqual(decodeKey(encodeKey(key)), key);
  // The hex a commit sends is the hex of those bytes, on the fast path and off it.
  for (const key of [...samples, ["runs", "run_01", 7], ["a\u0000", "é", ""], [0, -1, 2 ** 53]]) {
    assert.equal(encodeKeyHex(key), Buffer.from(encodeKey(key)).toString("hex"));
  }
});

/**
 * A key's advisory lock as every version of svc computes it (first 8 bytes of the SHA-256 of
 * the namespace, a zero byte and the key's hex), written out here once more: hosts of two
 * versions sharing a ledger exclude each other only while this never changes.
 */
function fixedLock(ns: string, key: KvKey): bigint {
  const keyHex = Buffer.from(encodeKey(key)).toString("hex");
  return createHash("sha256").update(ns).update("\0").update(keyHex).digest().readBigInt64BE(0);
}

Deno.test("postgres: a commit waits for the lock of its key, the lock every version of svc takes", async () => {
  const url = await (await pg()).database();
  const store = await openPostgresKv(url, { namespace: "ledger" });
  const other = postgres(url, { max: 1, onnotice: () => {} });
  let release = () => {};
  const releasing = new Promise<void>((resolve) => release = resolve);
  let holding = () => {};
  const held = new Promise<void>((resolve) => holding = resolve);
  const keys: KvKey[] = [["queue", "task_1"], ["runs", "run_é", 3]];
  const transaction = other.begin(async (sql) => {
    for (const key of keys) {
      await sql`SELECT pg_advisory_xact_lock(${fixedLock("ledger", key).toString()}::bigint)`;
    }
    holding();
    await releasing;
  });
  try {
    await held;
    const commits = keys.map((key) => {
      let settled = false;
      const commit = store.atomic().check(key, null).set(key, bytes("claimed")).commit();
      void commit.finally(() => settled = true);
      return { commit, settled: () => settled };
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const { settled } of commits) {
      assert.equal(settled(), false, "a commit went ahead of a lock held on its key");
    }
    release();
    await transaction;
    for (const { commit } of commits) assert.equal((await commit).ok, true);
  } finally {
    release();
    await transaction.catch(() => {});
    await other.end({ timeout: 2 });
    await store.close();
  }
});

Deno.test("postgres: a database of schema 1 is brought up to date at start, its rows kept", async () => {
  const server = await pg();
  const url = await server.database();
  const database = new URL(url).pathname.slice(1);
  const first = await openPostgresKv(url, { namespace: "ledger" });
  await first.atomic().set(["kept"], bytes("before")).commit();
  await first.close();
  // As a host of schema 1 left it: its migration only, and its commit function.
  await server.psql("DELETE FROM svc_schema WHERE version > 1", database);
  await server.psql(
    "CREATE OR REPLACE FUNCTION svc_kv_commit(p_ns text, p_check_keys text[], " +
      "p_check_stamps bigint[], p_set_keys text[], p_set_values text[], p_delete_keys text[], " +
      "p_locks bigint[], p_origin text) RETURNS bigint LANGUAGE sql AS 'SELECT NULL::bigint'",
    database,
  );
  const second = await openPostgresKv(url, { namespace: "ledger" });
  try {
    assert.equal(
      (await server.psql("SELECT max(version) FROM svc_schema", database)).trim(),
      "2",
    );
    assert.equal(text((await second.get(["kept"])).value), "before");
    // The commit function is this version's again: it checks, deletes and writes.
    const kept = await second.get(["kept"]);
    assert.equal(
      (await second.atomic().check(["kept"], kept.versionstamp).delete(["kept"])
        .set(["after"], bytes("1")).commit()).ok,
      true,
    );
    assert.equal((await second.get(["kept"])).value, null);
    assert.equal(text((await second.get(["after"])).value), "1");
    const stale = await second.atomic().check(["after"], null).set(["after"], bytes("2")).commit();
    assert.equal(stale.ok, false);
  } finally {
    await second.close();
  }
});

Deno.test("postgres: a host refuses a database whose schema is newer than it knows", async () => {
  const server = await pg();
  const url = await server.database();
  const first = await openPostgresKv(url, { namespace: "ledger" });
  await first.close();
  await server.psql(
    "INSERT INTO svc_schema (version, name) VALUES (99, 'from the future')",
    new URL(url).pathname.slice(1),
  );
  await assert.rejects(
    () => openPostgresKv(url, { namespace: "ledger" }),
    /Cannot open the ledger at postgres:\/\/svc@127\.0\.0\.1:\d+\/\w+: it has schema version 99, this svc knows up to 2/,
  );
});

Deno.test("postgres: an unreachable database is an unavailable error that names the fault", async () => {
  const server = await pg();
  await assert.rejects(
    () => openPostgresKv(`postgres://svc@127.0.0.1:1/postgres`, { namespace: "ledger" }),
    (error: Error & { code?: string }) => {
      assert.equal(error.code, "unavailable");
      assert.equal(error.message, "Cannot open the ledger: the database cannot be reached");
      return true;
    },
  );
  void server;
});

Deno.test("postgres: stop the test server", async () => {
  await server?.[Symbol.asyncDispose]();
  server = undefined;
});

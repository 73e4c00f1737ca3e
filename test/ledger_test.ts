import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import {
  followEvents,
  type LedgerOp,
  newId,
  openLedger,
  SCHEMA_VERSION,
} from "../src/ledger/mod.ts";
import { denoPlatform } from "../src/platform/deno.ts";
import { type KvAtomic, type Platform, setPlatform } from "../src/platform/mod.ts";
import { ADMIN, LOCAL, scriptedProvider, tempDir, testManager } from "./helpers.ts";

/** Every value of the KV file, with its size: what the ledger really wrote. */
async function kvValues(home: string): Promise<Array<{ key: Deno.KvKey; size: number }>> {
  const kv = await Deno.openKv(`${home}/svc.kv`);
  try {
    const out: Array<{ key: Deno.KvKey; size: number }> = [];
    for await (const entry of kv.list<Uint8Array>({ prefix: [] })) {
      out.push({ key: entry.key, size: entry.value.length });
    }
    return out;
  } finally {
    kv.close();
  }
}

Deno.test("the ledger keeps values as JSON bytes that any KV reader can decode", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script: `log("hello");\nreturn await agent("x");`,
    filename: "flow.js",
  }, LOCAL);
  await t.manager.wait(run.run_id, LOCAL);
  const kv = await Deno.openKv(`${t.home}/svc.kv`);
  try {
    let entries = 0;
    for await (const entry of kv.list({ prefix: [] })) {
      entries++;
      assert.ok(entry.value instanceof Uint8Array, `${JSON.stringify(entry.key)} is not bytes`);
      JSON.parse(new TextDecoder().decode(entry.value));
    }
    assert.ok(entries >= 6, `only ${entries} entries`);
    const doc = (await kv.get<Uint8Array>(["runs", run.run_id])).value!;
    assert.equal(JSON.parse(new TextDecoder().decode(doc)).status.state, "succeeded");
    const schema = (await kv.get<Uint8Array>(["meta", "schema"])).value!;
    assert.deepEqual(JSON.parse(new TextDecoder().decode(schema)), { version: SCHEMA_VERSION });
  } finally {
    kv.close();
  }
});

Deno.test("a finished run is read back from the ledger by a new host, narration and journal included", async () => {
  await using home = await tempDir();
  let runId: string;
  {
    await using t = await testManager({ home: home.path });
    const run = await t.manager.start({
      script: `phase("one");\nlog("two");\nreturn await agent("three");`,
    }, LOCAL);
    runId = run.run_id;
    await t.manager.wait(runId, LOCAL);
  }
  await using t = await testManager({ home: home.path });
  const status = await t.manager.get(runId, LOCAL);
  assert.equal(status?.state, "succeeded");
  assert.equal(status?.result, "fake response to: three");
  assert.deepEqual(status?.narration.map((e) => e.text), ["one", "two"]);
  assert.equal((await t.manager.journal(runId, LOCAL)).length, 1);
  assert.deepEqual((await t.manager.list(LOCAL)).map((s) => s.run_id), [runId]);
  const events = await t.ledger.readEvents({ kind: "run", id: runId });
  assert.deepEqual(
    events.flatMap(({ event }) => "type" in event && event.type === "state" ? [event.state] : []),
    [
      "queued",
      "running",
      "succeeded",
    ],
  );
});

Deno.test("the run directory holds the script, the result and the final status", async () => {
  await using t = await testManager();
  const script = `return { answer: await agent("x") };`;
  const run = await t.manager.start({ script, filename: "flow.js" }, LOCAL);
  await t.manager.wait(run.run_id, LOCAL);
  const dir = `${t.home}/runs/${run.run_id}`;
  assert.equal(await Deno.readTextFile(`${dir}/script.js`), script);
  assert.deepEqual(JSON.parse(await Deno.readTextFile(`${dir}/result.json`)), {
    answer: "fake response to: x",
  });
  assert.equal(JSON.parse(await Deno.readTextFile(`${dir}/status.json`)).state, "succeeded");
});

Deno.test("values too large for a KV entry are kept in the run directory and read back whole", async () => {
  await using t = await testManager();
  const big = "y".repeat(200_000);
  const run = await t.manager.start({
    script: `const r = await agent("${big}");\nreturn r.length;`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.result, "fake response to: ".length + big.length);
  const [entry] = await t.manager.journal(run.run_id, LOCAL);
  assert.equal(entry!.result, `fake response to: ${big}`);
  const blobs = [...Deno.readDirSync(`${t.home}/runs/${run.run_id}/blobs`)];
  assert.equal(blobs.length, 1);
});

Deno.test("a ledger written by a newer svc is refused with a clear error", async () => {
  await using home = await tempDir();
  const kv = await Deno.openKv(`${home.path}/svc.kv`);
  await kv.set(
    ["meta", "schema"],
    new TextEncoder().encode(JSON.stringify({ version: SCHEMA_VERSION + 1 })),
  );
  kv.close();
  await assert.rejects(
    openLedger(home.path),
    /Cannot open the ledger in .*: it has schema version 2, this svc knows up to 1/,
  );
});

Deno.test("runs are listed per owner, newest first", async () => {
  await using t = await testManager();
  const a = await t.manager.start({ script: "return 1;" }, { owner: "alice" });
  const b = await t.manager.start({ script: "return 2;" }, { owner: "bob" });
  const c = await t.manager.start({ script: "return 3;" }, { owner: "alice" });
  await Promise.all([a, b, c].map((r) => t.manager.wait(r.run_id, ADMIN)));
  assert.deepEqual((await t.manager.list({ owner: "alice" })).map((s) => s.run_id), [
    c.run_id,
    a.run_id,
  ]);
  assert.equal((await t.manager.list(ADMIN)).length, 3, "an administrator sees every owner's");
  assert.deepEqual(await t.manager.list(LOCAL), [], "an owner without runs sees none");
  await assert.rejects(t.manager.journal(a.run_id, { owner: "bob" }), /no such run/);
});

Deno.test("a call with a 70 KB label is recorded: the label is clipped, the call stays in the journal", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script: `return await agent("x", { label: "L".repeat(70_000) });`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded");
  assert.equal(status.result, "fake response to: x");
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.equal(journal.length, 1);
  assert.equal(journal[0]!.result, "fake response to: x");
  assert.ok(journal[0]!.label!.length < 2000, "clipped");
  assert.match(journal[0]!.label!, /^L+… \[\d+ more characters\]$/);
  assert.equal((await t.ledger.getRun(run.run_id))?.state, "succeeded");
});

Deno.test("a script error with a 70 KB name, message and stack frame still ends the run recorded", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script:
      `const f = { ["g".repeat(70_000)]() { const e = new Error("m".repeat(70_000)); e.name = "N".repeat(70_000); throw e; } };
      f["g".repeat(70_000)]();`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "failed");
  assert.equal(status.error?.code, "script_error");
  assert.ok(status.error!.message.length < 10_000, `message of ${status.error!.message.length}`);
  assert.ok((status.error!.stack ?? "").length <= 4200, "stack clipped");
  const stored = await t.ledger.getRun(run.run_id);
  assert.equal(stored?.state, "failed");
  assert.deepEqual(stored?.error, status.error, "the ledger holds what the status says");
});

Deno.test("schema failures with huge conditions keep the run status within one KV value", async () => {
  const provider = scriptedProvider("sloppy", () => ({ output: "x".repeat(30_000) }));
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const run = await t.manager.start({
    script:
      `const schema = { type: "object", required: ["a"], properties: { a: { type: "string" } } };
      const r = await parallel(Array.from({ length: 60 }, (_, i) =>
        () => agent("p" + i, { provider: "sloppy", schema, label: i + "L".repeat(70_000) })));
      return r.filter((x) => x === null).length;`,
    schema_attempts: 1,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded");
  assert.equal(status.result, 60);
  const failed = status.conditions.filter((c) => c.type === "SchemaValidationFailed");
  assert.ok(failed.length >= 1);
  for (const c of status.conditions) {
    assert.ok(JSON.stringify(c).length <= 8192, `a condition of ${JSON.stringify(c).length}`);
  }
  assert.equal((await t.manager.journal(run.run_id, LOCAL)).length, 60);
  const values = await kvValues(t.home);
  assert.ok(values.every((v) => v.size <= 60 * 1024), "every value fits");
  const stored = await t.ledger.getRun(run.run_id);
  assert.deepEqual(stored?.conditions, status.conditions, "the status as stored is the status");
});

Deno.test("a huge meta literal is clipped and the run is recorded", async () => {
  await using t = await testManager();
  const phases = JSON.stringify(
    Array.from({ length: 5000 }, (_, i) => `phase ${i} ${"p".repeat(100)}`),
  );
  const run = await t.manager.start({
    script: `export const meta = { name: "${"n".repeat(70_000)}", description: "${
      "d".repeat(70_000)
    }", phases: ${phases} };
      return 1;`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded");
  assert.ok(
    JSON.stringify(status.meta).length < 20_000,
    `meta of ${JSON.stringify(status.meta).length}`,
  );
  assert.equal(status.name, status.meta.name);
  const stored = await t.ledger.getRun(run.run_id);
  assert.deepEqual(stored?.meta, status.meta);
});

Deno.test("a record over the KV value limit is clipped by the ledger rather than refused", async () => {
  await using t = await testManager();
  const run = await t.manager.start({ script: "return 1;" }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  // Past every bound at the source: the ledger itself still writes it.
  const huge = { ...status, name: "n".repeat(200_000), meta: { phases: Array(40_000).fill("p") } };
  await t.ledger.write(huge.run_id, [{ kind: "status", status: huge }]);
  const stored = await t.ledger.getRun(run.run_id);
  assert.equal(stored?.run_id, run.run_id);
  assert.ok(stored!.name!.length < 70_000);
});

Deno.test("a process's own followers read a run's latest events from memory, and still see events another process adds", async () => {
  await using home = await tempDir();
  const own = await openLedger(home.path, { pollMs: 10 });
  const other = await openLedger(home.path);
  try {
    await using t = await testManager({ home: home.path });
    const done = await t.manager.wait(
      (await t.manager.start({ script: "return 1;" }, LOCAL)).run_id,
      LOCAL,
    );
    const input = await own.getRunInput(done.run_id);
    assert.ok(input);
    const status = { ...done, run_id: newId("run"), state: "running" as const };
    const runId = status.run_id;
    const at = new Date().toISOString();
    const narration = (seq: number, text: string): LedgerOp => ({
      kind: "event",
      event: {
        seq,
        event: { type: "narration", run_id: runId, at, entry: { at, kind: "log", text } },
      },
    });
    await own.createRun(status, {
      input,
      host: null,
      event: { type: "state", run_id: runId, at, state: "running" },
    });
    // More events than the memory keeps, in one write and then one by one.
    await own.write(runId, Array.from({ length: 40 }, (_, i) => narration(i + 1, `own ${i + 1}`)));
    for (let seq = 41; seq <= 45; seq++) await own.write(runId, [narration(seq, `own ${seq}`)]);
    const seen: string[] = [];
    let sawOther!: () => void;
    const otherSeen = new Promise<void>((resolve) => (sawOther = resolve));
    const follower = (async () => {
      for await (const { seq, event } of followEvents(own, { kind: "run", id: runId })) {
        const shown = "type" in event && event.type === "narration" ? event.entry.text : "state";
        seen.push(`${seq}:${shown}`);
        if (seq === 46) sawOther();
        if (seq === 47) return;
      }
    })();
    // Another process appends to the same stream: the follower here must see it by itself,
    // before this process writes again.
    await other.write(runId, [narration(46, "other 46")]);
    await otherSeen;
    await own.write(runId, [narration(47, "own 47")]);
    await follower;
    assert.deepEqual(seen, [
      "0:state",
      ...Array.from({ length: 45 }, (_, i) => `${i + 1}:own ${i + 1}`),
      "46:other 46",
      "47:own 47",
    ]);
    // From memory, the same bytes the store holds.
    assert.deepEqual(
      await own.readEvents({ kind: "run", id: runId }, { after: 40 }),
      await other.readEvents({ kind: "run", id: runId }, { after: 40 }),
    );
    // Large events: memory keeps fewer of them, and readers still get every one.
    const big = (seq: number) => narration(seq, `${seq} `.padEnd(30_000, "x"));
    await own.write(runId, [big(48), big(49), big(50)]);
    const tail = await own.readEvents({ kind: "run", id: runId }, { after: 46 });
    assert.deepEqual(tail, await other.readEvents({ kind: "run", id: runId }, { after: 46 }));
    assert.deepEqual(tail.map((item) => item.seq), [47, 48, 49, 50]);
  } finally {
    own.close();
    other.close();
  }
});

Deno.test("a write of more records than one KV commit may hold is split, and every record lands", async () => {
  await using t = await testManager();
  const run = await t.manager.start({ script: "return 1;" }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  const at = new Date().toISOString();
  // 2,500 records: past KV's 1,000 mutations per commit more than twice.
  const ops: LedgerOp[] = Array.from({ length: 2_500 }, (_, i) => ({
    kind: "narration",
    seq: 1_000 + i,
    entry: { at, kind: "log", text: `line ${i}` },
  }));
  await t.ledger.write(status.run_id, [...ops, { kind: "status", status }]);
  const stored = await t.ledger.getRun(status.run_id);
  assert.equal(stored?.narration.filter((entry) => entry.text.startsWith("line ")).length, 2_500);
});

Deno.test("runs of one owner changing state together in one process append to its activity stream in turn: each commits at its first attempt", async () => {
  await using home = await tempDir();
  let refused = 0;
  // The real store, with the commits it refuses counted (a lost race for the stream's head).
  const counting: Platform = {
    ...denoPlatform,
    async openKv(path) {
      const kv = await denoPlatform.openKv(path);
      return {
        get: (key) => kv.get(key),
        list: (prefix, options) => kv.list(prefix, options),
        close: () => kv.close(),
        atomic() {
          const atomic = kv.atomic();
          const counted: KvAtomic = {
            check: (key, stamp) => (atomic.check(key, stamp), counted),
            set: (key, value) => (atomic.set(key, value), counted),
            delete: (key) => (atomic.delete(key), counted),
            commit: async () => {
              const result = await atomic.commit();
              if (!result.ok) refused++;
              return result;
            },
          };
          return counted;
        },
      };
    },
  };
  const { done, input } = await (async () => {
    await using t = await testManager({ home: home.path });
    const done = await t.manager.wait(
      (await t.manager.start({ script: "return 1;" }, LOCAL)).run_id,
      LOCAL,
    );
    return { done, input: (await t.ledger.getRunInput(done.run_id))! };
  })();
  setPlatform(counting);
  try {
    const ledger = await openLedger(home.path);
    try {
      const at = new Date().toISOString();
      const before = await ledger.activityHead(done.owner);
      await Promise.all(Array.from({ length: 40 }, () => {
        const runId = newId("run");
        return ledger.createRun({ ...done, run_id: runId, state: "queued" }, {
          input,
          host: null,
          event: { type: "state", run_id: runId, at, state: "queued" },
        });
      }));
      assert.equal(await ledger.activityHead(done.owner), before + 40);
    } finally {
      await ledger.close();
    }
  } finally {
    setPlatform(denoPlatform);
  }
  assert.equal(refused, 0, "no append lost a race to another of this process");
});

import assert from "node:assert/strict";
import { Ledger, SCHEMA_VERSION } from "../src/ledger/mod.ts";
import { tempDir, testManager } from "./helpers.ts";

Deno.test("the ledger keeps values as JSON bytes that any KV reader can decode", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script: `log("hello");\nreturn await agent("x");`,
    filename: "flow.js",
  });
  await t.manager.wait(run.run_id);
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
    });
    runId = run.run_id;
    await t.manager.wait(runId);
  }
  await using t = await testManager({ home: home.path });
  const status = await t.manager.get(runId);
  assert.equal(status?.state, "succeeded");
  assert.equal(status?.result, "fake response to: three");
  assert.deepEqual(status?.narration.map((e) => e.text), ["one", "two"]);
  assert.equal((await t.manager.journal(runId)).length, 1);
  assert.deepEqual((await t.manager.list()).map((s) => s.run_id), [runId]);
  const events = await t.ledger.getEvents(runId);
  assert.deepEqual(events.map((e) => e.type === "state" && e.state), [
    "queued",
    "running",
    "succeeded",
  ]);
});

Deno.test("the run directory holds the script, the result and the final status", async () => {
  await using t = await testManager();
  const script = `return { answer: await agent("x") };`;
  const run = await t.manager.start({ script, filename: "flow.js" });
  await t.manager.wait(run.run_id);
  const dir = `${t.home}/runs/${run.run_id}`;
  assert.equal(await Deno.readTextFile(`${dir}/flow.js`), script);
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
  });
  const status = await t.manager.wait(run.run_id);
  assert.equal(status.result, "fake response to: ".length + big.length);
  const [entry] = await t.manager.journal(run.run_id);
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
    Ledger.open(home.path),
    /Cannot open the ledger in .*: it has schema version 2, this svc knows up to 1/,
  );
});

Deno.test("runs are listed per owner, newest first", async () => {
  await using t = await testManager();
  const a = await t.manager.start({ script: "return 1;" }, { owner: "alice" });
  const b = await t.manager.start({ script: "return 2;" }, { owner: "bob" });
  const c = await t.manager.start({ script: "return 3;" }, { owner: "alice" });
  await Promise.all([a, b, c].map((r) => t.manager.wait(r.run_id)));
  assert.deepEqual((await t.manager.list({ owner: "alice" })).map((s) => s.run_id), [
    c.run_id,
    a.run_id,
  ]);
  assert.equal((await t.manager.list()).length, 3);
  await assert.rejects(t.manager.journal(a.run_id, { owner: "bob" }), /no such run/);
});

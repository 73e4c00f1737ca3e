/**
 * `svc ledger export` / `svc ledger import`: a KV ledger moved to a shared Postgres one, through
 * the command line as a user runs it (the launcher's narrow grants), and everything on it read
 * and resumed there.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { LOCAL, runCli, tempDir } from "./helpers.ts";
import { startPostgres } from "./pg_server.ts";

const SCRIPT = `
  const a = await agent("first", { label: "a" });
  const b = await agent("second", { label: "b" });
  return { a, b, big: "q".repeat(60_000) };
`;

Deno.test("svc ledger export then import moves runs, journals, large values, tasks and cards from KV files to Postgres", async () => {
  await using pg = await startPostgres();
  const url = await pg.database();
  await using kvHome = await tempDir("svc-transfer-kv-");
  await using pgHome = await tempDir("svc-transfer-pg-");
  await using out = await tempDir("svc-transfer-out-");

  // Work on this machine's KV files.
  let runId: string;
  let taskId: string;
  let result: unknown;
  {
    await using services = await openServices({
      home: kvHome.path,
      ledgerUrl: null,
      dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    });
    const run = await services.runs.start({ script: SCRIPT, fake_dispatch: true }, LOCAL);
    const end = await services.runs.wait(run.run_id, LOCAL);
    assert.equal(end.state, "succeeded");
    runId = run.run_id;
    result = end.result;
    const task = await services.tasks.start({ prompt: "hello", fake_dispatch: true }, LOCAL);
    taskId = task.task_id;
    await services.tasks.wait(taskId, LOCAL);
    await services.board.write({ action: "new", title: "moved card", mode: "apply" }, LOCAL);
  }

  const exported = await runCli(["ledger", "export"], { home: kvHome.path });
  assert.equal(exported.code, 0, exported.stderr);
  assert.match(
    exported.stderr,
    /svc: exported \d+ ledger record\(s\), \d+ board record\(s\), 3 file\(s\)/,
  );
  const file = `${out.path}/ledger.jsonl`;
  await Deno.writeTextFile(file, exported.stdout);

  const env = { SVC_LEDGER_URL: url };
  const imported = await runCli(["ledger", "import", file], { home: pgHome.path, env });
  assert.equal(imported.code, 0, imported.stderr);
  assert.match(imported.stderr, /svc: imported .* 3 file\(s\) into the shared ledger/);

  // A second import into the now busy ledger is refused, and changes nothing.
  const again = await runCli(["ledger", "import", file], { home: pgHome.path, env });
  assert.notEqual(again.code, 0);
  assert.match(again.stderr, /Cannot import the ledger: the target's ledger already holds records/);

  await using shared = await openServices({
    home: pgHome.path,
    ledgerUrl: url,
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  });
  const run = await shared.runs.get(runId, LOCAL);
  assert.equal(run?.state, "succeeded");
  assert.deepEqual(run?.result, result);
  assert.equal((await shared.runs.journal(runId, LOCAL)).length, 2);
  assert.equal((await shared.runs.input(runId, LOCAL)).script, SCRIPT);
  assert.equal((await shared.tasks.get(taskId, LOCAL))?.state, "succeeded");
  const cards = await shared.board.list(LOCAL);
  assert.deepEqual(cards.cards.map((card) => card.title), ["moved card"]);
  // The moved run resumes on the shared ledger from its journal: no call made again.
  const resumed = await shared.runs.resume(runId, LOCAL, {});
  const end = await shared.runs.wait(resumed.run_id, LOCAL);
  assert.equal(end.state, "succeeded", JSON.stringify(end.error));
  assert.deepEqual(end.result, result);
  assert.equal(end.calls.replayed, 2);
  // New cards continue the moved board's numbers.
  const next = await shared.board.write({ action: "new", title: "after", mode: "apply" }, LOCAL);
  assert.equal(next.card?.issue_id, "2");
});

Deno.test("svc ledger import refuses a file that is not an export, naming the line", async () => {
  await using home = await tempDir("svc-transfer-bad-");
  const file = `${home.path}/bad.jsonl`;
  await Deno.writeTextFile(file, '{"svc_ledger_export":1}\n{"store":"ledger","key":"x"}\n');
  const result = await runCli(["ledger", "import", file], { home: `${home.path}/h` });
  assert.notEqual(result.code, 0);
  assert.match(result.stderr, /Cannot import the ledger: line 2 is neither a record nor a file/);
  const path = `${home.path}/path.jsonl`;
  await Deno.writeTextFile(
    path,
    '{"svc_ledger_export":1}\n{"file":"runs/../../etc/passwd","content":""}\n',
  );
  const escaped = await runCli(["ledger", "import", path], { home: `${home.path}/h2` });
  assert.notEqual(escaped.code, 0);
  assert.match(escaped.stderr, /line 2 is neither a record nor a file/);
});

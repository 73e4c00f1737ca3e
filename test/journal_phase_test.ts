/** A call without its own `phase` option is journaled in the phase the script narrated last. */
import assert from "node:assert/strict";
import { fixture, runCli, tempDir } from "./helpers.ts";

Deno.test("svc workflow journal shows the phase a script narrated with phase()", async () => {
  await using home = await tempDir();
  const opts = { home: home.path };
  const run = await runCli(
    ["workflow", "run", fixture("narrating.js"), "--args", '{"count": 2}'],
    opts,
  );
  assert.equal(run.code, 0, run.stderr);
  const [listed] = JSON.parse((await runCli(["workflow", "list", "--json"], opts)).stdout);
  const runId = String(listed.run_id);
  const journal = await runCli(["workflow", "journal", runId], opts);
  assert.equal(journal.code, 0, journal.stderr);
  const rows = journal.stdout.trimEnd().split("\n");
  assert.match(rows[0]!, /^SEQ +LABEL +PHASE +PROVIDER/);
  assert.equal(rows.length, 3, journal.stdout);
  // Each call is labelled with the start of its prompt (`item 0`), as in Claude Code.
  for (const row of rows.slice(1)) assert.match(row, /^ +\d +item \d +Gather +fake +live/);
  const entries = JSON.parse((await runCli(["workflow", "journal", runId, "--json"], opts)).stdout);
  assert.deepEqual(entries.map((e: { phase?: string }) => e.phase), ["Gather", "Gather"]);
});

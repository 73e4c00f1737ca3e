/**
 * The host answers `agent()` while the answer's journal entry commits, and holds whatever the
 * guest sends after it (frames, stderr) until that commit is done: nothing the script does with
 * a value reaches the host, the ledger or a reader before the value is durable, and nothing at
 * all when the commit fails.
 */
import assert from "node:assert/strict";
import { openLedger } from "../src/ledger/mod.ts";
import type { Ledger, LedgerOp } from "../src/ledger/mod.ts";
import { countingDispatcher, LOCAL, testManager } from "./helpers.ts";

const SCRIPT = `
  const first = await agent("first");
  log("saw " + first);
  console.error("stderr saw " + first);
  return await agent("second after " + first);
`;

/** How long the test gives a guest that holds its first value to act on it. */
const ACT_MS = 500;

/** A real ledger whose commit of journal entry 1 waits until `release` settles it. */
async function heldLedger(home: string): Promise<{
  ledger: Ledger;
  held: Promise<void>;
  release: (fail?: Error) => void;
}> {
  const real = await openLedger(home);
  let reached!: () => void;
  const held = new Promise<void>((resolve) => (reached = resolve));
  let settle!: (fail?: Error) => void;
  const decided = new Promise<Error | undefined>((resolve) => (settle = resolve));
  const holdsFirst = (ops: LedgerOp[]) =>
    ops.some((op) => op.kind === "journal" && op.entry.seq === 1);
  // The ledger is a plain object of closures over its store, so one method can be replaced.
  const ledger: Ledger = {
    ...real,
    async write(runId: string, ops: LedgerOp[]) {
      if (holdsFirst(ops)) {
        reached();
        const fail = await decided;
        if (fail) throw fail;
      }
      return await real.write(runId, ops);
    },
  };
  return { ledger, held, release: (fail) => settle(fail) };
}

function narrationTexts(status: { narration: { text: string }[] }): string[] {
  return status.narration.map((entry) => entry.text);
}

Deno.test("what a script does with a value waits for the value's journal commit", async () => {
  await using home = await testManager();
  const { ledger, held, release } = await heldLedger(`${home.home}/held`);
  const dispatcher = countingDispatcher();
  await using t = await testManager({ ledger, dispatcher });
  try {
    const run = await t.manager.start({ script: SCRIPT }, LOCAL);
    await held;
    await new Promise((resolve) => setTimeout(resolve, ACT_MS));
    assert.equal(dispatcher.count(), 1, "the second call waits for the first one's entry");
    const during = await t.manager.get(run.run_id, LOCAL);
    assert.ok(during);
    assert.ok(
      !narrationTexts(during).some((text) => text.includes("saw")),
      "neither the log nor the stderr line that use the value is recorded yet",
    );
    release();
    const status = await t.manager.wait(run.run_id, LOCAL);
    assert.equal(status.state, "succeeded");
    assert.equal(status.result, "fake response to: second after fake response to: first");
    assert.equal(dispatcher.count(), 2);
    const texts = narrationTexts(status);
    assert.ok(texts.includes("saw fake response to: first"));
    assert.ok(texts.some((text) => text.includes("stderr saw fake response to: first")));
    const journal = await t.manager.journal(run.run_id, LOCAL);
    assert.deepEqual(journal.map((entry) => [entry.seq, entry.outcome]), [[1, "live"], [
      2,
      "live",
    ]]);
  } finally {
    release();
    ledger.close();
  }
});

Deno.test("when an answered value's commit fails, nothing the script did with it is handled", async () => {
  await using home = await testManager();
  const { ledger, held, release } = await heldLedger(`${home.home}/held`);
  const dispatcher = countingDispatcher();
  await using t = await testManager({ ledger, dispatcher });
  try {
    const run = await t.manager.start({ script: SCRIPT }, LOCAL);
    await held;
    await new Promise((resolve) => setTimeout(resolve, ACT_MS));
    release(new Error("the disk went away"));
    const status = await t.manager.wait(run.run_id, LOCAL);
    assert.equal(status.state, "interrupted", "a run without its journal stops, resumable");
    assert.equal(dispatcher.count(), 1, "the call that used the lost value never ran");
    assert.ok(!narrationTexts(status).some((text) => text.includes("saw")));
    assert.deepEqual(await t.manager.journal(run.run_id, LOCAL), []);
  } finally {
    release();
    ledger.close();
  }
});

/**
 * Events nobody waits for (a call's start, a batch of its live output) join the run's next
 * ledger write, so that a quick call costs one commit; alone, they are written soon anyway.
 */
import assert from "node:assert/strict";
import { BudgetGate, newRunStatus } from "../src/engine/mod.ts";
import { HELD_EVENT_MS, RunContext } from "../src/engine/run_context.ts";
import type { LedgerOp } from "../src/ledger/mod.ts";
import { WorkflowRunRequestSchema } from "../src/schemas/mod.ts";

/** A run context over a ledger that records each write's operations as one commit. */
function recordingRun(): { run: RunContext; commits: LedgerOp[][] } {
  const commits: LedgerOp[][] = [];
  const request = WorkflowRunRequestSchema.parse({ script: "return 1;" });
  const budget = new BudgetGate({});
  const status = newRunStatus({
    request,
    owner: "alice",
    meta: {},
    filename: "held.js",
    limits: { max_agents: 10, concurrency: 2 },
    budget: budget.figures(),
    fakeProviderOnly: true,
  });
  const run = new RunContext(status, request, {
    ledger: {
      write: (_runId, ops) => {
        commits.push([...ops]);
        return Promise.resolve();
      },
    },
    concurrency: 2,
    budget,
    replay: undefined,
    maxNarration: 10,
    maxNarrationBytes: 1024,
    maxSecurityEvents: 10,
    maxJournalBytes: 1 << 20,
    maxBlobBytes: 1 << 20,
    maxRefusedCalls: 10,
  });
  return { run, commits };
}

function eventTypes(ops: LedgerOp[]): string[] {
  return ops.flatMap((op) => op.kind === "event" ? [op.event.event.type] : [op.kind]);
}

Deno.test("a call's start and output share the commit of the write that follows them, in order", async () => {
  const { run, commits } = recordingRun();
  run.callStarted({ seq: 1, label: "quick" });
  run.progress(1, [{ kind: "text", text: "done" }]);
  await new Promise((resolve) => setTimeout(resolve, HELD_EVENT_MS / 4));
  assert.equal(commits.length, 0, "held events are not written on their own at once");
  await run.persist({ kind: "status", status: structuredClone(run.status) });
  assert.equal(commits.length, 1);
  assert.deepEqual(eventTypes(commits[0]!), ["call_started", "progress", "status"]);
  await run.writes;
  assert.equal(commits.length, 1, "nothing is written twice");
});

Deno.test("a call's start with no write after it is written on its own soon", async () => {
  const { run, commits } = recordingRun();
  run.callStarted({ seq: 1, label: "slow" });
  while (commits.length === 0) await new Promise((resolve) => setTimeout(resolve, HELD_EVENT_MS));
  // The call counts its start changed may come along; nothing else does.
  assert.deepEqual(commits.map((ops) => eventTypes(ops).filter((type) => type !== "calls")), [
    ["call_started"],
  ]);
  await run.writes;
});

Deno.test("waiting for a run's writes writes what is held at once", async () => {
  const { run, commits } = recordingRun();
  run.progress(1, [{ kind: "text", text: "partial" }]);
  await run.writes;
  assert.deepEqual(commits.map(eventTypes), [["progress"]]);
});

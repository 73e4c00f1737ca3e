import assert from "node:assert/strict";
import { positionKey } from "../src/engine/mod.ts";
import { fixture, LOCAL, spawnWorkflowHost, tempDir, testManager } from "./helpers.ts";

const CALLS = 150;

/**
 * Runs `svc workflow run` of the burst fixture on `home` (resuming `resumeFrom` if given) and
 * kills it with SIGKILL once its narration shows the script saw call `after`. Returns the run's
 * id and the highest call the script was seen to have.
 */
async function killMidBurst(
  home: string,
  after: number,
  resumeFrom?: string,
): Promise<{ runId: string; saw: number }> {
  const host = spawnWorkflowHost(
    [fixture("sequential_burst.js"), ...(resumeFrom ? ["--resume-from", resumeFrom] : [])],
    { SVC_HOME: home },
  );
  let stderr = "";
  const reader = host.stderr.getReader();
  const decoder = new TextDecoder();
  let saw = -1;
  while (saw < after) {
    const { value, done } = await reader.read();
    if (done) break;
    stderr += decoder.decode(value, { stream: true });
    for (const match of stderr.matchAll(/saw (\d+)/g)) saw = Math.max(saw, Number(match[1]));
  }
  host.kill("SIGKILL");
  await host.status;
  await reader.cancel();
  const runId = /run (run_[0-9a-z]+) started/.exec(stderr)?.[1];
  assert.ok(runId, stderr);
  assert.ok(
    saw >= after && saw < CALLS - 1,
    `killed mid-burst (saw ${saw}): ${stderr.slice(-500)}`,
  );
  return { runId, saw };
}

Deno.test("a kill -9 during a burst of sequential calls loses no call the script saw, and its resume finishes them", async () => {
  await using home = await tempDir();
  const { runId, saw } = await killMidBurst(home.path, 40);
  await using t = await testManager({ home: home.path });
  const journal = await t.manager.journal(runId, LOCAL);
  const live = journal.filter((e) => e.outcome === "live").map((e) => positionKey(e.position!));
  // Every call up to the last one the script was seen to have is journaled, in order.
  for (let i = 0; i <= saw; i++) assert.equal(live[i], String(i), `call ${i} is journaled`);
  const script = await Deno.readTextFile(fixture("sequential_burst.js"));
  const resumed = await t.manager.wait(
    (await t.manager.start({ script, resume_from: runId }, LOCAL)).run_id,
    LOCAL,
  );
  assert.equal(resumed.state, "succeeded");
  assert.equal(resumed.journal.replayed, live.length);
  assert.equal(resumed.journal.replayed + resumed.journal.live, CALLS);
  const fresh = await t.manager.wait((await t.manager.start({ script }, LOCAL)).run_id, LOCAL);
  assert.deepEqual(resumed.result, fresh.result);
});

Deno.test("a kill -9 while a resumed run replays leaves its calls replayable: the next resume runs nothing again", async () => {
  await using home = await tempDir();
  const script = await Deno.readTextFile(fixture("sequential_burst.js"));
  let sourceId: string;
  let original: unknown;
  {
    await using t = await testManager({ home: home.path });
    const done = await t.manager.wait((await t.manager.start({ script }, LOCAL)).run_id, LOCAL);
    sourceId = done.run_id;
    original = done.result;
  }
  // The middle run answers replayed calls without waiting for their entries: killed now, it
  // may not have recorded all it replayed.
  const middle = await killMidBurst(home.path, 80, sourceId);
  await using t = await testManager({ home: home.path });
  const last = await t.manager.wait(
    (await t.manager.start({ script, resume_from: middle.runId }, LOCAL)).run_id,
    LOCAL,
  );
  assert.equal(last.state, "succeeded");
  assert.deepEqual([last.journal.replayed, last.journal.live], [CALLS, 0]);
  assert.deepEqual(last.result, original);
  const journal = await t.manager.journal(last.run_id, LOCAL);
  assert.ok(
    journal.every((e) => e.replayed_from === sourceId),
    "values credit the run that made them",
  );
});

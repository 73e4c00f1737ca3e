import assert from "node:assert/strict";
import { fixture, LOCAL, spawnWorkflowHost, tempDir, testManager, untilEvent } from "./helpers.ts";

/** Processes whose working directory lies under `dir` (a guest's is its scratch directory). */
async function processesUnder(dir: string): Promise<string[]> {
  // Deno wants --allow-all to read /proc; readlink in a shell needs only run permission.
  const script = 'for p in /proc/[0-9]*; do echo "$p $(readlink "$p/cwd" 2>/dev/null)"; done';
  const output = await new Deno.Command("bash", { args: ["-c", script], stdout: "piped" }).output();
  return new TextDecoder().decode(output.stdout).split("\n").filter((line) =>
    line.includes(` ${dir}`)
  );
}

Deno.test("a host killed mid-run leaves no run stuck in running: the next host marks it interrupted", async () => {
  await using home = await tempDir();
  const host = spawnWorkflowHost([fixture("three_steps.js")], {
    SVC_HOME: home.path,
    SVC_FAKE_LATENCY_MS: "400",
  });
  let stderr = "";
  const reader = host.stderr.getReader();
  const decoder = new TextDecoder();
  while (!stderr.includes("two steps done")) {
    const { value, done } = await reader.read();
    if (done) break;
    stderr += decoder.decode(value, { stream: true });
  }
  host.kill("SIGKILL");
  await host.status;
  await reader.cancel();
  const runId = /run (run_[0-9a-z]+) started/.exec(stderr)?.[1];
  assert.ok(runId, stderr);

  await using t = await testManager({ home: home.path });
  const status = await t.manager.get(runId, LOCAL);
  assert.equal(status?.state, "interrupted");
  assert.equal(status?.error?.code, "interrupted");
  const journal = await t.manager.journal(runId, LOCAL);
  assert.deepEqual(
    journal.map((e) => [e.seq, e.outcome]),
    [[1, "live"], [2, "live"]],
    "the journal is intact",
  );
  assert.equal(status?.journal.calls, 2, "counters were written with their entries");

  // The orphaned guest saw its stdin close and left.
  for (let i = 0; i < 50 && (await processesUnder(`${home.path}/tmp`)).length > 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(await processesUnder(`${home.path}/tmp`), []);

  const resumed = await t.manager.wait(
    (await t.manager.start({
      script: await Deno.readTextFile(fixture("three_steps.js")),
      resume_from: runId,
    }, LOCAL)).run_id,
    LOCAL,
  );
  assert.equal(resumed.state, "succeeded");
  assert.deepEqual([resumed.journal.replayed, resumed.journal.live], [2, 1]);
});

Deno.test("a run of a live host is not taken for interrupted by another host", async () => {
  await using first = await testManager({ fakeLatencyMs: 60_000 });
  const run = await first.manager.start({ script: `await agent("slow");` }, LOCAL);
  await untilEvent(first.manager, run.run_id, (e) => e.type === "calls" && e.calls.running === 1);
  await using second = await testManager({ home: first.home });
  assert.equal((await second.manager.get(run.run_id, LOCAL))?.state, "running");
  await first.manager.cancel(run.run_id, LOCAL);
  await first.manager.wait(run.run_id, LOCAL);
});

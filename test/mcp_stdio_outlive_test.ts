/**
 * Runs started over `svc mcp` (stdio) without a daemon go to worker processes of their own:
 * a client that hangs up (as coding agents do when they restart their MCP servers) ends the
 * server at once and never ends its runs; a launcher killed outright still takes everything
 * svc started down with it.
 */
import assert from "node:assert/strict";
import { type Ledger, openLedger, type RunStatus, TERMINAL_STATES } from "../src/ledger/mod.ts";
import { LOCAL, tempDir, testManager } from "./helpers.ts";
import { connectStdio, type TestClient } from "./mcp_helpers.ts";

/** Four calls one after another, each answered by the fake provider after the set latency. */
const SLOW_SCRIPT =
  "let out = ''; for (const n of [1, 2, 3, 4]) out = await agent('step ' + n); return out;";

/**
 * Every process and its command line. Zombies count: a dead host that is not yet reaped still
 * answers a signal, so the ledger would take it for alive.
 */
async function processes(): Promise<Map<number, string>> {
  const output = await new Deno.Command("ps", { args: ["-A", "-o", "pid=,args="] }).output();
  const live = new Map<number, string>();
  for (const line of new TextDecoder().decode(output.stdout).split("\n")) {
    const match = /^\s*(\d+)\s+(.*)$/.exec(line);
    if (match) live.set(Number(match[1]), match[2]!);
  }
  return live;
}

/** Polls `check` every 100 ms until it holds, for at most `ms`; false when it never did. */
async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return await check();
}

/** Waits, through the tools, until the run has started working. */
async function untilRunning(mcp: TestClient, runId: string): Promise<void> {
  const running = await eventually(async () => {
    const status = await mcp.ok("svc_task_status", { handle: runId });
    return status.state === "running";
  }, 30_000);
  assert.ok(running, `${runId} never started`);
}

/** Processes the ledger knows as hosts of this data directory, and any naming the run. */
async function leftovers(ledger: Ledger, runId: string): Promise<Map<number, string>> {
  const hostPids = new Set((await ledger.listHosts()).map((host) => host.pid));
  return new Map(
    [...await processes()].filter(([pid, args]) => hostPids.has(pid) || args.includes(runId)),
  );
}

/**
 * Waits (15 s at most) until no process of this data directory or naming the run is left;
 * those still there then are killed, so that a failing test leaks nothing, and returned.
 */
async function survivors(ledger: Ledger, runId: string): Promise<string[]> {
  let left = new Map<number, string>();
  await eventually(async () => (left = await leftovers(ledger, runId)).size === 0, 15_000);
  for (const pid of left.keys()) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
  return [...left].map(([pid, args]) => `${pid} ${args}`);
}

Deno.test("a run started over svc mcp outlives its client: svc mcp exits when standard input closes, the run ends succeeded, nothing is left running", async () => {
  await using home = await tempDir("svc-mcp-outlive-");
  const mcp = await connectStdio(home.path, { env: { SVC_FAKE_LATENCY_MS: "600" } });
  const launcher = mcp.pid;
  assert.ok(launcher, "the client started a process");
  const started = await mcp.ok("svc_workflow", { script: SLOW_SCRIPT, fake_dispatch: true });
  const runId = String(started.handle);
  const task = await mcp.ok("svc_dispatch", { prompt: "a task", fake_dispatch: true });
  const taskId = String(task.handle);
  await untilRunning(mcp, runId);
  // The SDK's close: standard input ends; SIGTERM follows only if svc mcp is still there 2 s later.
  const closing = performance.now();
  await mcp.client.close();
  const closeMs = performance.now() - closing;
  console.log(`svc mcp ended ${Math.round(closeMs)} ms after its standard input closed`);
  assert.ok(closeMs < 2000, `svc mcp ended by itself, before the client's SIGTERM (${closeMs} ms)`);
  assert.equal((await processes()).has(launcher), false, "svc mcp has exited");
  const ledger = await openLedger(home.path);
  try {
    let status: RunStatus | undefined;
    const ended = await eventually(async () => {
      status = await ledger.getRun(runId);
      return status !== undefined && TERMINAL_STATES.has(status.state);
    }, 60_000);
    assert.ok(ended, `${runId} did not end: ${status?.state}`);
    assert.equal(status?.state, "succeeded", JSON.stringify(status?.error));
    assert.equal(status?.result, "fake response to: step 4");
    assert.ok(
      await eventually(async () => (await ledger.getTask(taskId))?.state === "succeeded", 30_000),
      "the task ended succeeded",
    );
    // The worker that ran it ends with it: no process of this data directory is left.
    assert.deepEqual(await survivors(ledger, runId), [], "processes left running");
    assert.deepEqual(await survivors(ledger, taskId), [], "processes left running");
  } finally {
    await ledger.close();
  }
});

Deno.test("a launcher of svc mcp killed outright takes its run workers down too, and their runs are left interrupted", async () => {
  await using home = await tempDir("svc-mcp-outlive-");
  const mcp = await connectStdio(home.path, { env: { SVC_FAKE_LATENCY_MS: "3000" } });
  const launcher = mcp.pid;
  assert.ok(launcher, "the client started a process");
  try {
    const started = await mcp.ok("svc_workflow", { script: SLOW_SCRIPT, fake_dispatch: true });
    const runId = String(started.handle);
    await untilRunning(mcp, runId);
    Deno.kill(launcher, "SIGKILL");
    const ledger = await openLedger(home.path);
    try {
      assert.deepEqual(await survivors(ledger, runId), [], "processes left running");
    } finally {
      await ledger.close();
    }
    // The next host finds the run's host dead and marks the run interrupted, resumable.
    await using next = await testManager({ home: home.path });
    assert.equal((await next.manager.get(runId, LOCAL))?.state, "interrupted");
  } finally {
    await mcp.client.close();
  }
});

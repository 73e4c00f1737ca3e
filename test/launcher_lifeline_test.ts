/**
 * A host never outlives its launcher: `deno task svc` starts the host in a process group of its
 * own, so a supervisor's SIGKILL of the launcher (systemd's final kill, `docker kill`) would
 * leave the host and its guests running with parent 1, holding ports and runs. Killed with the
 * launcher, they are gone within seconds, and their runs are left as after any crash.
 */
import assert from "node:assert/strict";
import { startHostProcess } from "./host_process.ts";
import { fixture, LOCAL, svcCommand, tempDir, testManager } from "./helpers.ts";

/** How long the host and its guests may outlive the launcher, in ms. */
const GONE_WITHIN_MS = 5_000;

/** Live processes (zombies are dead) and their parents, from ps(1). */
async function liveParents(): Promise<Map<number, number>> {
  const output = await new Deno.Command("ps", {
    args: ["-A", "-o", "pid=", "-o", "ppid=", "-o", "stat="],
    stdout: "piped",
  }).output();
  const table = new Map<number, number>();
  for (const line of new TextDecoder().decode(output.stdout).split("\n")) {
    const [pid, ppid, stat] = line.trim().split(/\s+/);
    if (pid && ppid && !stat?.startsWith("Z")) table.set(Number(pid), Number(ppid));
  }
  return table;
}

/** Every live descendant of `root`. */
async function descendants(root: number): Promise<number[]> {
  const table = await liveParents();
  const found: number[] = [];
  let frontier = [root];
  while (frontier.length > 0) {
    const parents = new Set(frontier);
    frontier = [...table].filter(([, ppid]) => parents.has(ppid)).map(([pid]) => pid);
    found.push(...frontier);
  }
  return found;
}

/**
 * Waits until none of `pids` lives; resolves to those still alive after
 * {@linkcode GONE_WITHIN_MS}, which it then kills so that a failing test leaks nothing.
 */
async function survivors(pids: readonly number[]): Promise<number[]> {
  const deadline = Date.now() + GONE_WITHIN_MS;
  let alive = [...pids];
  while (alive.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const table = await liveParents();
    alive = alive.filter((pid) => table.has(pid));
  }
  for (const pid of alive) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
  return alive;
}

/**
 * Waits (a few seconds at most) until `pids` are reaped: a dead host the init process has not
 * yet reaped still answers a signal, so the ledger would take it for alive.
 */
async function reaped(pids: readonly number[]): Promise<void> {
  const deadline = Date.now() + GONE_WITHIN_MS;
  while (Date.now() < deadline) {
    const output = await new Deno.Command("ps", { args: ["-A", "-o", "pid="], stdout: "piped" })
      .output();
    const listed = new Set(new TextDecoder().decode(output.stdout).split(/\s+/).map(Number));
    if (!pids.some((pid) => listed.has(pid))) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Whether a listener can take `port` on the loopback address. */
function portFree(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return true;
  } catch {
    return false;
  }
}

for (const command of ["dashboard", "daemon"] as const) {
  Deno.test(`svc ${command} dies with its launcher: after a SIGKILL of the launcher no process it started lives and the port is free`, async () => {
    await using home = await tempDir();
    const host = await startHostProcess(home.path, command, { launcher: true });
    const port = Number(new URL(host.url).port);
    const started = await descendants(host.pid);
    assert.ok(started.length > 0, "the launcher started a host");
    assert.equal(portFree(port), false, "the host listens");
    // Killed here, not by stop(), which waits for the end of the stderr a survivor would hold.
    Deno.kill(host.pid, "SIGKILL");
    const left = await survivors(started);
    await host.stop("SIGKILL");
    assert.deepEqual(left, [], "processes left running after the launcher");
    assert.ok(portFree(port), `port ${port} is free again`);
  });
}

Deno.test("svc workflow run dies with its launcher: the host and its guest are gone, and the run is left interrupted and resumable", async () => {
  await using home = await tempDir();
  const launcher = svcCommand({
    args: ["workflow", "run", fixture("narrating.js"), "--args", '{"count":2}'],
    // Calls that take a minute: the run is still going when the launcher is killed.
    env: { SVC_HOME: home.path, SVC_FAKE_LATENCY_MS: "60000", NO_COLOR: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const reader = launcher.stderr.pipeThrough(new TextDecoderStream()).getReader();
  while (!/calls: 2 running/.test(stderr)) {
    const { value, done } = await reader.read();
    if (done) break;
    stderr += value;
  }
  const runId = /run (run_[0-9a-z]+) started/.exec(stderr)?.[1];
  assert.ok(runId, stderr);
  const started = await descendants(launcher.pid);
  // The host and the guest running the script, at least.
  assert.ok(started.length >= 2, `the host and its guest run: ${started.join(" ")}`);
  launcher.kill("SIGKILL");
  await launcher.status;
  const left = await survivors(started);
  await reader.cancel();
  assert.deepEqual(left, [], "processes left running after the launcher");
  await reaped(started);

  await using t = await testManager({ home: home.path });
  const status = await t.manager.get(runId, LOCAL);
  assert.equal(status?.state, "interrupted");
  const resumed = await t.manager.start({
    script: await Deno.readTextFile(fixture("narrating.js")),
    args: { count: 2 },
    resume_from: runId,
  }, LOCAL);
  assert.equal((await t.manager.wait(resumed.run_id, LOCAL)).state, "succeeded");
});

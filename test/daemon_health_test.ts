import assert from "node:assert/strict";
import { runCommand, tempDir } from "./helpers.ts";
import { startTestDaemon } from "./daemon_helpers.ts";
import { svcTaskCommand } from "./helpers.ts";

async function svcHealth(url: string, home: string, json = false) {
  const task = await svcTaskCommand();
  return await runCommand(task.command, [
    ...task.args,
    "health",
    "--url",
    url,
    ...(json ? ["--json"] : []),
  ], { env: { SVC_HOME: home, NO_COLOR: "1" } });
}

Deno.test("GET /health answers 200 with the kernel policy, scheduler mode, queue and ledger, without authentication", async () => {
  await using home = await tempDir("svc-health-");
  await using daemon = await startTestDaemon(home.path);
  const response = await fetch(`${daemon.url}/health`);
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.status, "ok");
  assert.deepEqual(body.problems, []);
  assert.match(body.version, /^\d+\.\d+\.\d+/);
  assert.equal(typeof body.uptime_s, "number");
  assert.deepEqual(body.kernel, { sandbox_ceiling: "write", full: "deny" });
  assert.ok(["leader", "standby"].includes(body.scheduler.mode));
  assert.deepEqual(body.queue, { runs: 0, tasks: 0 });
  assert.deepEqual(body.running, { runs: 0, tasks: 0 });
  assert.equal(body.ledger.ok, true);
  assert.equal(body.hosts.daemons, 1);
  // Nothing secret: no token, no path of the data directory.
  assert.ok(!JSON.stringify(body).includes(home.path));
});

Deno.test("svc health prints a healthy daemon and exits 0, exits 1 once the ledger cannot be written (503), and 5 when nothing answers", async () => {
  await using home = await tempDir("svc-health-cli-");
  const daemon = await startTestDaemon(home.path);
  try {
    const healthy = await svcHealth(`${daemon.url}/health`, home.path);
    assert.equal(healthy.code, 0, healthy.stderr);
    assert.match(healthy.stdout, /: ok \(svc /);
    assert.match(healthy.stdout, /kernel {5}sandbox ceiling write, full: deny/);
    assert.match(healthy.stdout, /ledger {5}ok/);
    // The ledger closes under the daemon: writes fail, and health says so with a 503.
    daemon.services.ledger.close();
    const response = await fetch(`${daemon.url}/health`);
    assert.equal(response.status, 503);
    const body = await response.json();
    assert.equal(body.status, "unhealthy");
    assert.equal(body.ledger.ok, false);
    assert.ok(body.problems.includes("the ledger cannot be written"), body.problems);
    const unhealthy = await svcHealth(daemon.url, home.path);
    assert.equal(unhealthy.code, 1, unhealthy.stderr);
    assert.match(unhealthy.stdout, /: unhealthy/);
    assert.match(unhealthy.stdout, /! the ledger cannot be written/);
    const json = await svcHealth(daemon.url, home.path, true);
    assert.equal(JSON.parse(json.stdout).status, "unhealthy");
  } finally {
    await daemon.daemon.stop();
    await daemon.server.close();
    await daemon.services.close().catch(() => {});
  }
  const gone = await svcHealth(daemon.url, home.path);
  assert.equal(gone.code, 5);
  assert.match(gone.stderr, /Cannot read the health of .*: nothing answers there/);
});

Deno.test("the daemon answers unknown routes with the API error object", async () => {
  await using home = await tempDir("svc-health-404-");
  await using daemon = await startTestDaemon(home.path);
  const response = await fetch(`${daemon.url}/nope`);
  assert.equal(response.status, 404);
  assert.deepEqual(await response.json(), {
    error: { status: 404, code: "not_found", message: "Cannot GET /nope: no such route" },
  });
});

import assert from "node:assert/strict";
import { runCommand, tempDir } from "./helpers.ts";
import { configOf, DAEMON_TOKENS, startTestDaemon } from "./daemon_helpers.ts";
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

Deno.test("GET /health answers liveness only without authentication; the snapshot is /health/detail, for the operator's token", async () => {
  await using home = await tempDir("svc-health-");
  await using daemon = await startTestDaemon(home.path, {
    config: configOf({
      webhooks: { "secret-hook-name": { secret_env: "NOPE", prompt_template: "x" } },
    }),
  });
  const open = await fetch(`${daemon.url}/health`);
  assert.equal(open.status, 200);
  assert.equal(open.headers.get("cache-control"), "no-store");
  // No host name, pid, host id, webhook name, queue or version for a stranger.
  assert.deepEqual(await open.json(), { status: "ok" });

  const detail = (token?: string) =>
    fetch(`${daemon.url}/health/detail`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
  const anonymous = await detail();
  assert.equal(anonymous.status, 401);
  assert.ok(!(await anonymous.text()).includes("secret-hook-name"));
  const owner = await detail(DAEMON_TOKENS.alice);
  assert.equal(owner.status, 403);
  assert.ok(!(await owner.text()).includes("secret-hook-name"));

  const response = await detail(DAEMON_TOKENS.operator);
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
  assert.deepEqual(body.webhooks.hooks, ["secret-hook-name"]);
  // Nothing secret even there: no token, no path of the data directory.
  assert.ok(!JSON.stringify(body).includes(home.path));
});

Deno.test("svc health prints a healthy daemon and exits 0, exits 1 once the ledger cannot be written (503), and 5 when nothing answers", async () => {
  await using home = await tempDir("svc-health-cli-");
  const daemon = await startTestDaemon(home.path);
  try {
    // Without a token svc health says only whether the daemon lives.
    const bare = await svcHealth(`${daemon.url}/health`, home.path);
    assert.equal(bare.code, 0, bare.stderr);
    assert.match(bare.stdout, /: ok \(the detail needs the operator's token/);
    // With the operator's token in SVC_HOME (as svc daemon makes it), the whole snapshot.
    await Deno.writeTextFile(`${home.path}/dashboard.token`, `${DAEMON_TOKENS.operator}\n`);
    const healthy = await svcHealth(`${daemon.url}/health`, home.path);
    assert.equal(healthy.code, 0, healthy.stderr);
    assert.match(healthy.stdout, /: ok \(svc /);
    assert.match(healthy.stdout, /kernel {5}sandbox ceiling write, full: deny/);
    assert.match(healthy.stdout, /ledger {5}ok/);
    // The ledger closes under the daemon: writes fail, and health says so with a 503.
    daemon.services.ledger.close();
    const response = await fetch(`${daemon.url}/health/detail`, {
      headers: { authorization: `Bearer ${DAEMON_TOKENS.operator}` },
    });
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

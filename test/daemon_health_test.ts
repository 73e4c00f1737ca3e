import assert from "node:assert/strict";
import { runCommand, tempDir } from "./helpers.ts";
import { daemonApp } from "../src/http/mod.ts";
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

Deno.test("GET /health answers status, kernel and scheduler mode without authentication; the snapshot is /health/detail, for the operator's token", async () => {
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
  const openBody = await open.json();
  assert.deepEqual(Object.keys(openBody).sort(), ["kernel", "scheduler", "status"]);
  assert.equal(openBody.status, "ok");
  assert.deepEqual(openBody.kernel, { sandbox_ceiling: "write", full: "deny" });
  assert.deepEqual(Object.keys(openBody.scheduler), ["mode"]);
  assert.ok(["leader", "standby"].includes(openBody.scheduler.mode));

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
    // Without a token svc health says what the open route says: status, kernel, scheduler.
    const bare = await svcHealth(`${daemon.url}/health`, home.path);
    assert.equal(bare.code, 0, bare.stderr);
    assert.match(bare.stdout, /: ok \(the detail needs the operator's token/);
    assert.match(bare.stdout, /kernel {5}sandbox ceiling write, full: deny/);
    assert.match(bare.stdout, /scheduler {2}(leader|standby)/);
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

Deno.test("the open GET /health of the daemon app names no path, token, owner, host or hook", async () => {
  await using home = await tempDir("svc-health-open-");
  const secrets = {
    token: "operator-secret-token-0123456789",
    ownerToken: "owner-secret-token-0123456789ab",
    owner: "carol-the-owner",
    hook: "hook-named-secretly",
  };
  await using daemon = await startTestDaemon(home.path, {
    config: configOf({
      webhooks: { [secrets.hook]: { secret_env: "NOPE", prompt_template: "x" } },
      sandbox: { full: "ask" },
    }),
    auth: {
      required: true,
      requireOwner: false,
      tokens: [{ token: secrets.token }, { token: secrets.ownerToken, owner: secrets.owner }],
      allowedOrigins: [],
    },
  });
  // A run of the owner's puts the owner's name in the ledger the snapshot reads.
  await daemon.services.tasks.start({ prompt: "x", fake_dispatch: true }, { owner: secrets.owner });
  const app = daemonApp(daemon.daemon, {
    auth: {
      required: true,
      requireOwner: false,
      tokens: [{ token: secrets.token }, { token: secrets.ownerToken, owner: secrets.owner }],
      allowedOrigins: [],
    },
  });
  const response = await app.fetch(new Request("http://127.0.0.1/health"));
  assert.equal(response.status, 200);
  const text = await response.text();
  const body = JSON.parse(text);
  assert.equal(body.status, "ok");
  assert.deepEqual(body.kernel, { sandbox_ceiling: "full", full: "ask" });
  assert.ok(["leader", "standby"].includes(body.scheduler.mode), text);
  const health = await daemon.daemon.health();
  for (
    const secret of [
      ...Object.values(secrets),
      home.path,
      String(health.host.pid),
      health.host.id,
      ...health.hosts.list.flatMap((host) => host.hostname ? [host.hostname] : []),
    ]
  ) {
    assert.ok(!text.includes(secret), `the open health names ${secret}: ${text}`);
  }
  // The detail stays behind the operator's token.
  const detail = await app.fetch(new Request("http://127.0.0.1/health/detail"));
  assert.equal(detail.status, 401);
  await detail.body?.cancel();
  const owned = await app.fetch(
    new Request("http://127.0.0.1/health/detail", {
      headers: { authorization: `Bearer ${secrets.ownerToken}` },
    }),
  );
  assert.equal(owned.status, 403);
  await owned.body?.cancel();
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

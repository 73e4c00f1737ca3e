/**
 * Paths a request names: a remote caller (the dashboard API here) names only directories inside
 * its owner's workspace roots, never svc's data directory, and without roots gets a fresh
 * scratch workdir. The command line keeps its free choice.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import type { SvcError } from "../src/errors/mod.ts";
import { callerOf } from "../src/ledger/mod.ts";
import { eventually, startTestDaemon } from "./daemon_helpers.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { tempDir } from "./helpers.ts";
import { connectHttp, errorText } from "./mcp_helpers.ts";

/** A dashboard whose owner alice has `root` as her only workspace root; bob has none. */
async function dashboardWithRoot(root: string) {
  return await startDashboard({ config: ConfigSchema.parse({ workspaces: { alice: [root] } }) });
}

function assertForbidden(
  answer: { status: number; body: Record<string, unknown> },
  options: { names: string; hides: string[] },
): void {
  assert.equal(answer.status, 403, JSON.stringify(answer.body));
  const error = answer.body.error as { code: string; message: string };
  assert.equal(error.code, "forbidden");
  assert.ok(error.message.includes(options.names), error.message);
  for (const hidden of options.hides) assert.ok(!error.message.includes(hidden), error.message);
}

const RUN = { script: "return 1;", fake_dispatch: true };

Deno.test("a remote workdir outside the owner's roots is refused with 403 naming the root", async () => {
  await using root = await tempDir("svc-root-");
  await using other = await tempDir("svc-other-");
  await using d = await dashboardWithRoot(root.path);
  const answer = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { ...RUN, workdir: other.path },
  });
  assertForbidden(answer, { names: root.path, hides: [d.home] });
});

Deno.test("a symbolic link inside a root that points outside it is refused", async () => {
  await using root = await tempDir("svc-root-");
  await using other = await tempDir("svc-other-");
  await Deno.mkdir(`${other.path}/secret`);
  await Deno.symlink(`${other.path}/secret`, `${root.path}/link`);
  await using d = await dashboardWithRoot(root.path);
  const answer = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { ...RUN, workdir: `${root.path}/link` },
  });
  assertForbidden(answer, { names: root.path, hides: [`${other.path}/secret`] });
});

Deno.test("SVC_HOME, or a root directory holding it, is never a remote workdir", async () => {
  await using outer = await tempDir("svc-outer-");
  const home = `${outer.path}/home`;
  await Deno.mkdir(home);
  await using d = await startDashboard({
    home,
    config: ConfigSchema.parse({ workspaces: { alice: [outer.path] } }),
  });
  for (const workdir of [home, outer.path, `${home}/tmp`]) {
    await Deno.mkdir(`${home}/tmp`, { recursive: true });
    const answer = await d.json("/api/workflow/run", {
      token: TOKENS.alice,
      body: { ...RUN, workdir },
    });
    assertForbidden(answer, { names: outer.path, hides: [] });
  }
});

Deno.test("an owner without roots cannot name a workdir, and gets a fresh scratch workdir without one", async () => {
  await using root = await tempDir("svc-root-");
  await using d = await dashboardWithRoot(root.path);
  const named = await d.json("/api/workflow/run", {
    token: TOKENS.bob,
    body: { ...RUN, workdir: root.path },
  });
  assertForbidden(named, { names: "no workspace root is configured for owner 'bob'", hides: [] });
  const started = await d.json("/api/workflow/run", { token: TOKENS.bob, body: RUN });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const status = await d.json(`/api/workflow/${started.body.run_id}`, { token: TOKENS.bob });
  // Named by role: the caller never learns where SVC_HOME is.
  const workdir = String(status.body.workdir);
  assert.match(workdir, /^\$SVC_HOME\/tmp\/work-[A-Za-z0-9_]+$/);
  assert.ok(!JSON.stringify(status.body).includes(d.home), "no host path of SVC_HOME");
  const info = await Deno.stat(workdir.replace("$SVC_HOME", d.home));
  assert.ok(info.isDirectory);
  assert.equal(info.mode! & 0o777, 0o700);
  assert.notEqual(workdir, Deno.cwd(), "the project is never the server's current directory");
});

Deno.test("a remote run's workflow() resolves in its scratch workdir, not the server's current directory", async () => {
  await using d = await startDashboard();
  // This file exists in the server's current directory (the checkout the tests run in).
  const script = `try { return await workflow({ scriptPath: "test/fixtures/three_steps.js" }); }
    catch (error) { return { refused: String(error) }; }`;
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script, fake_dispatch: true },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = String(started.body.run_id);
  const run = await d.services.runs.wait(runId, { owner: "alice" });
  assert.equal(run.state, "succeeded", JSON.stringify(run.error));
  // In the server's directory the fixture would have run and returned three answers.
  assert.ok(!Array.isArray(run.result), JSON.stringify(run.result));
  assert.match(JSON.stringify(run.result), /refused/);
});

Deno.test("POST /api/reviews of a directory outside the roots is refused with 403 before git runs", async () => {
  await using root = await tempDir("svc-root-");
  await using other = await tempDir("svc-other-");
  await using d = await dashboardWithRoot(root.path);
  // Not a git repository: had git run, the answer would be 400 invalid_argument.
  const answer = await d.json("/api/reviews", {
    token: TOKENS.alice,
    body: { workdir: other.path, fake_dispatch: true },
  });
  assertForbidden(answer, { names: root.path, hides: [] });
});

Deno.test("POST /api/dispatch with workdir SVC_HOME and the write sandbox is refused with 403", async () => {
  await using outer = await tempDir("svc-outer-");
  const home = `${outer.path}/home`;
  await Deno.mkdir(home);
  await using d = await startDashboard({
    home,
    config: ConfigSchema.parse({ workspaces: { alice: [outer.path] } }),
  });
  for (const token of [TOKENS.alice, TOKENS.bob]) {
    const answer = await d.json("/api/dispatch", {
      token,
      body: { prompt: "hi", workdir: home, sandbox: "write", fake_dispatch: true },
    });
    assertForbidden(answer, { names: home, hides: [] });
  }
  assert.equal((await d.services.tasks.list({ owner: "alice", admin: true })).length, 0);
});

Deno.test("a remote workdir inside a root is accepted, as its real path", async () => {
  await using root = await tempDir("svc-root-");
  await Deno.mkdir(`${root.path}/project`);
  await Deno.symlink(`${root.path}/project`, `${root.path}/alias`);
  await using d = await dashboardWithRoot(root.path);
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { ...RUN, workdir: `${root.path}/alias` },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const status = await d.json(`/api/workflow/${started.body.run_id}`, { token: TOKENS.alice });
  assert.equal(status.body.workdir, await Deno.realPath(`${root.path}/project`));
  const task = await d.json("/api/dispatch", {
    token: TOKENS.alice,
    body: { prompt: "hi", workdir: root.path, fake_dispatch: true },
  });
  assert.equal(task.status, 202, JSON.stringify(task.body));
});

Deno.test("a resumed remote run keeps its scratch workdir, which is its own", async () => {
  await using d = await startDashboard();
  const first = await d.json("/api/workflow/run", { token: TOKENS.bob, body: RUN });
  const runId = String(first.body.run_id);
  await d.services.runs.wait(runId, { owner: "bob" });
  const source = await d.json(`/api/workflow/${runId}`, { token: TOKENS.bob });
  const resumed = await d.json(`/api/workflow/${runId}/resume`, { token: TOKENS.bob, body: {} });
  assert.ok([200, 202].includes(resumed.status), JSON.stringify(resumed.body));
  const status = await d.json(`/api/workflow/${resumed.body.run_id}`, { token: TOKENS.bob });
  assert.match(String(source.body.workdir), /^\$SVC_HOME\/tmp\/work-/);
  assert.equal(status.body.workdir, source.body.workdir);
});

Deno.test("the command line names any workdir, as before", async () => {
  await using root = await tempDir("svc-root-");
  await using other = await tempDir("svc-other-");
  await using d = await dashboardWithRoot(root.path);
  const started = await d.services.runs.start({ ...RUN, workdir: other.path }, { owner: "alice" });
  assert.equal(started.workdir, other.path);
  await d.services.runs.wait(started.run_id, { owner: "alice" });
});

Deno.test("svc_dispatch over MCP with workdir SVC_HOME is a tool error naming the missing root", async () => {
  await using d = await startDashboard({ port: true });
  await using mcp = await connectHttp(d.url, { token: TOKENS.bob });
  const result = await mcp.call("svc_dispatch", {
    prompt: "hi",
    workdir: d.home,
    sandbox: "write",
    fake_dispatch: true,
  });
  assert.match(errorText(result), /no workspace root is configured for owner 'bob'/);
  assert.equal((await d.services.tasks.list({ owner: "bob", admin: true })).length, 0);
});

Deno.test("an automation made over the API works as its remote owner at every firing: a workdir outside the roots is refused when made, and its dispatches get a scratch workdir", async () => {
  await using home = await tempDir("svc-auto-ws-");
  await using root = await tempDir("svc-root-");
  const config = ConfigSchema.parse({
    workspaces: { bob: [root.path] },
    daemon: { automation_min_interval_s: 1 },
  });
  await using daemon = await startTestDaemon(home.path, { config, tickMs: 100 });
  const { automations, ledger, tasks } = daemon.services;
  const bob = callerOf("bob", { remote: true });
  const dispatch = { prompt: "tick", fake_dispatch: true };
  await assert.rejects(
    automations.create({
      name: "outside",
      cron: "* * * * * *",
      dispatch: { ...dispatch, workdir: home.path },
    }, bob),
    (error: SvcError) => error.code === "forbidden" && error.message.includes(root.path),
  );
  const made = await automations.create({ name: "tick", cron: "* * * * * *", dispatch }, bob);
  const fired = await eventually(async () => {
    const last = await ledger.lastSlot(made.automation_id);
    return last && "task_id" in last.item ? last.item.task_id : undefined;
  }, { what: "the automation to fire" });
  const task = await tasks.get(fired, { owner: "bob" });
  assert.match(String(task?.options.workdir), /^\$SVC_HOME\/tmp\/work-/);
  await daemon.daemon.scheduler.stop();
});

Deno.test("POST /api/workflow/legacy with workdir SVC_HOME is refused with 403, as a run is", async () => {
  await using d = await startDashboard();
  const answer = await d.json("/api/workflow/legacy", {
    token: TOKENS.bob,
    body: {
      chain: { version: 1, steps: [{ id: "only", prompt: "hi" }] },
      fake_dispatch: true,
      workdir: d.home,
    },
  });
  assertForbidden(answer, { names: "no workspace root is configured for owner 'bob'", hides: [] });
  assert.equal((await d.services.runs.list({ owner: "bob" })).length, 0);
});

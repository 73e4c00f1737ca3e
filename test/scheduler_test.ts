import assert from "node:assert/strict";
import type { RunStatus } from "../src/ledger/mod.ts";
import { fixture, tempDir } from "./helpers.ts";
import { configOf, eventually, startTestDaemon } from "./daemon_helpers.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";

const EVERY_SECOND = configOf({
  automations: {
    tick: {
      cron: "* * * * * *",
      workflow: "echo-args",
      args: { from: "config" },
      fake_dispatch: true,
    },
  },
});

async function homeWithWorkflow(prefix: string) {
  const home = await tempDir(prefix);
  await Deno.mkdir(`${home.path}/workflows`);
  await Deno.copyFile(fixture("daemon/echo_args.js"), `${home.path}/workflows/echo-args.js`);
  return home;
}

function slotsOf(runs: RunStatus[]): string[] {
  return runs
    .map((run) => run.trigger?.kind === "automation" ? run.trigger.slot : "")
    .filter(Boolean)
    .sort();
}

Deno.test("an automation fires once per slot with two daemons on one ledger, and the standby takes over when the leader stops", async () => {
  await using home = await homeWithWorkflow("svc-sched-");
  const options = { config: EVERY_SECOND, tickMs: 100, leaseMs: 600 };
  const first = await startTestDaemon(home.path, options);
  await using second = await startTestDaemon(home.path, options);
  try {
    const modes = await eventually(async () => {
      const both = await Promise.all([first, second].map((d) => d.daemon.health()));
      const list = both.map((h) => h.scheduler.mode).sort();
      return list.join() === "leader,standby" ? list : undefined;
    }, { what: "one leader and one standby" });
    assert.deepEqual(modes, ["leader", "standby"]);
    await eventually(async () => {
      const runs = await second.services.runs.list({ owner: "local" });
      return runs.length >= 3 ? runs : undefined;
    }, { what: "three slots to fire" });
  } finally {
    // The leader (or not) stops; the other carries on alone.
    await first[Symbol.asyncDispose]();
  }
  const before = (await second.services.runs.list({ owner: "local" })).length;
  await eventually(async () => {
    const runs = await second.services.runs.list({ owner: "local" });
    return runs.length >= before + 2 ? runs : undefined;
  }, { what: "the remaining daemon to fire two more slots" });
  assert.equal((await second.daemon.health()).scheduler.mode, "leader");
  // No more slots; the worker goes on until the fired runs have all run.
  await second.daemon.scheduler.stop();
  const runs = await eventually(async () => {
    const all = await second.services.runs.list({ owner: "local" });
    return all.every((run) => run.state !== "queued" && run.state !== "running") ? all : undefined;
  }, { what: "the fired runs to end" });
  const slots = slotsOf(runs);
  assert.equal(slots.length, runs.length, "every run came from a slot");
  assert.equal(new Set(slots).size, slots.length, `a slot fired twice: ${slots.join(", ")}`);
  // Slots are whole seconds, each after the one before.
  for (const slot of slots) assert.match(slot, /:\d\d\.000Z$/);
  for (const listed of runs) {
    const run = await second.services.runs.get(listed.run_id, { owner: "local" });
    // The daemon that stopped cancelled what it was running; everything else ran to its end.
    if (run?.state === "cancelled") {
      assert.match(run.error?.message ?? "", /shutting down/);
      continue;
    }
    assert.equal(run?.state, "succeeded", JSON.stringify(run?.error));
    assert.deepEqual(run?.result, { args: { from: "config" } });
  }
});

Deno.test("after downtime, the latest missed slot fires once when younger than catch_up_s, and not at all when older", async () => {
  for (const [catchUp, expected] of [[3600, 1], [0, 0]] as const) {
    await using home = await homeWithWorkflow("svc-catchup-");
    // A schedule whose latest slot is about ten minutes ago (at minute M of every hour).
    const minute = new Date(Date.now() - 10 * 60_000).getUTCMinutes();
    const config = configOf({ daemon: { catch_up_s: catchUp } });
    await using daemon = await startTestDaemon(home.path, { config, tickMs: 100 });
    const { ledger } = daemon.services;
    // Made three hours ago through the API, last fired two hours ago: it missed slots since.
    const created = new Date(Date.now() - 3 * 3600_000).toISOString();
    await ledger.saveAutomation({
      automation_id: "aut_01hzzzzzzzzzzzzzzz",
      name: "hourly",
      owner: "local",
      cron: `${minute} * * * *`,
      action: { workflow: "echo-args", args: { catch_up: catchUp }, fake_dispatch: true },
      source: "api",
      created_at: created,
    });
    assert.ok(
      await ledger.claimSlot(
        "aut_01hzzzzzzzzzzzzzzz",
        new Date(Date.now() - 2 * 3600_000).toISOString(),
      ),
    );
    // Several ticks pass.
    await eventually(async () => {
      const health = await daemon.daemon.health();
      return health.scheduler.mode === "leader" && health.scheduler.automations === 1
        ? true
        : undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, 600));
    const runs = await daemon.services.runs.list({ owner: "local" });
    assert.equal(runs.length, expected, `catch_up_s ${catchUp}`);
  }
});

Deno.test("GET/POST/DELETE /api/automations: create, list with the configuration's, refuse bad cron, delete only the owner's API ones", async () => {
  await using home = await homeWithWorkflow("svc-auto-api-");
  const config = configOf({
    automations: { nightly: { cron: "0 3 * * *", workflow: "echo-args", owner: "alice" } },
  });
  await using dash = await startDashboard({ home: home.path, config });
  const created = await dash.json("/api/automations", {
    token: TOKENS.alice,
    body: { name: "review-prs", cron: "*/15 * * * *", dispatch: { prompt: "Review open PRs" } },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.owner, "alice");
  assert.equal(created.body.source, "api");
  const id = created.body.automation_id as string;
  assert.match(id, /^aut_/);
  const listed = await dash.json("/api/automations", { token: TOKENS.alice });
  const names = (listed.body.automations as Array<{ name: string; source: string }>)
    .map((a) => `${a.name}:${a.source}`);
  assert.deepEqual(names, ["nightly:config", "review-prs:api"]);
  // Another owner sees none of alice's, and cannot delete hers.
  const bob = await dash.json("/api/automations", { token: TOKENS.bob });
  assert.deepEqual(bob.body.automations, []);
  const bobDelete = await dash.json(`/api/automations/${id}`, {
    token: TOKENS.bob,
    method: "DELETE",
  });
  assert.equal(bobDelete.status, 404);
  const bad = await dash.json("/api/automations", {
    token: TOKENS.alice,
    body: { name: "bad", cron: "61 * * * *", workflow: "echo-args" },
  });
  assert.equal(bad.status, 400);
  assert.match((bad.body.error as { message: string }).message, /cron/);
  const both = await dash.json("/api/automations", {
    token: TOKENS.alice,
    body: { name: "both", cron: "* * * * *", workflow: "echo-args", dispatch: { prompt: "x" } },
  });
  assert.equal(both.status, 400);
  assert.match(
    (both.body.error as { message: string }).message,
    /exactly one of 'workflow' and 'dispatch'/,
  );
  const configured = await dash.json("/api/automations/config.nightly", {
    token: TOKENS.alice,
    method: "DELETE",
  });
  assert.equal(configured.status, 409);
  const deleted = await dash.json(`/api/automations/${id}`, {
    token: TOKENS.alice,
    method: "DELETE",
  });
  assert.deepEqual(deleted.body, { automation_id: id, deleted: true });
  const after = await dash.json("/api/automations", { token: TOKENS.alice });
  assert.equal((after.body.automations as unknown[]).length, 1);
});

/**
 * What automations made over the API may cost the host: a quota per owner, counted atomically
 * in the ledger; a shortest interval between firings; and at most one queued or running item
 * per automation.
 */
import assert from "node:assert/strict";
import { shortestGapMs } from "../src/automations/mod.ts";
import { fixture, tempDir } from "./helpers.ts";
import { configOf, eventually, startTestDaemon } from "./daemon_helpers.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";

async function homeWithWorkflow(prefix: string) {
  const home = await tempDir(prefix);
  await Deno.mkdir(`${home.path}/workflows`);
  await Deno.copyFile(fixture("daemon/echo_args.js"), `${home.path}/workflows/echo-args.js`);
  return home;
}

function errorOf(body: Record<string, unknown>): { code: string; message: string } {
  return body.error as { code: string; message: string };
}

Deno.test("twelve parallel creates by one owner with a quota of three make exactly three, and another owner can still create", async () => {
  await using home = await homeWithWorkflow("svc-auto-quota-");
  const config = configOf({ daemon: { automations_per_owner: 3 } });
  await using dash = await startDashboard({ home: home.path, config });
  const create = (token: string, name: string) =>
    dash.request("/api/automations", {
      token,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name, cron: "0 3 * * *", workflow: "echo-args" }),
    });
  const answers = await Promise.all(
    Array.from({ length: 12 }, (_, i) => create(TOKENS.bob, `nightly-${i}`)),
  );
  const bodies = await Promise.all(answers.map((a) => a.json()));
  const statuses = answers.map((a) => a.status);
  assert.equal(statuses.filter((s) => s === 201).length, 3, statuses.join());
  assert.equal(statuses.filter((s) => s === 429).length, 9, statuses.join());
  for (const [i, answer] of answers.entries()) {
    if (answer.status !== 429) continue;
    assert.equal(answer.headers.get("retry-after"), null, "a quota frees up by deleting");
    assert.deepEqual(errorOf(bodies[i]), {
      ...errorOf(bodies[i]),
      code: "rate_limited",
      message: "Cannot create the automation: owner 'bob' has 3 automations, the most allowed",
    });
  }
  const listed = await dash.json("/api/automations", { token: TOKENS.bob });
  const mine = listed.body.automations as Array<{ automation_id: string }>;
  assert.equal(mine.length, 3);
  // Bob being full leaves alice's quota alone.
  const alice = await create(TOKENS.alice, "hers");
  assert.equal(alice.status, 201, await alice.text());
  // Deleting one frees one place, once.
  const deleted = await dash.json(`/api/automations/${mine[0]!.automation_id}`, {
    token: TOKENS.bob,
    method: "DELETE",
  });
  assert.equal(deleted.status, 200);
  const again = await Promise.all([create(TOKENS.bob, "again-1"), create(TOKENS.bob, "again-2")]);
  assert.deepEqual(again.map((a) => a.status).sort(), [201, 429]);
  await Promise.all(again.map((a) => a.body?.cancel()));
});

Deno.test("two parallel creates of one name by one owner make one automation", async () => {
  await using home = await homeWithWorkflow("svc-auto-name-");
  await using dash = await startDashboard({ home: home.path });
  const body = { name: "same", cron: "0 3 * * *", workflow: "echo-args" };
  const answers = await Promise.all(
    Array.from({ length: 6 }, () => dash.json("/api/automations", { token: TOKENS.bob, body })),
  );
  assert.deepEqual(answers.map((a) => a.status).sort(), [201, 409, 409, 409, 409, 409]);
  const listed = await dash.json("/api/automations", { token: TOKENS.bob });
  assert.equal((listed.body.automations as unknown[]).length, 1);
});

Deno.test("an automation made over the API may not fire more often than automation_min_interval_s", async () => {
  await using home = await homeWithWorkflow("svc-auto-interval-");
  await using dash = await startDashboard({ home: home.path });
  const create = (name: string, cron: string) =>
    dash.json("/api/automations", {
      token: TOKENS.alice,
      body: { name, cron, workflow: "echo-args" },
    });
  for (const cron of ["* * * * * *", "*/30 * * * * *", "0,59 * * * * *"]) {
    const refused = await create("fast", cron);
    assert.equal(refused.status, 400, cron);
    assert.equal(errorOf(refused.body).code, "invalid_argument");
    assert.match(
      errorOf(refused.body).message,
      /^Cannot create the automation: .* once every 60 s$/,
    );
  }
  // Once a minute is allowed, with or without a seconds field.
  assert.equal((await create("each-minute", "* * * * *")).status, 201);
  assert.equal((await create("at-second-7", "7 * * * * *")).status, 201);
});

Deno.test("the shortest gap of a schedule is found across a month's end, with bounded work", () => {
  const after = new Date("2026-01-15T00:00:00Z");
  // Minutes 0 and 59 of hours 0 and 23 on the 1st and 31st: gaps of 59 min in a day, and of
  // one minute only from 23:59 on the 31st to 00:00 on the 1st.
  assert.equal(shortestGapMs("0,59 0,23 1,31 * *", { after, below: 3_000_000 }), 60_000);
  assert.equal(shortestGapMs("0 3 * * *", { after, below: 60_000 }), 86_400_000);
  assert.equal(shortestGapMs("* * * * * *", { after, below: 60_000 }), 1000);
  // Once a year: two slots, a year apart.
  assert.equal(shortestGapMs("0 0 1 1 *", { after, below: 60_000 }), 365 * 86_400_000);
});

Deno.test("a slot due while the automation's earlier run is still running starts nothing and is recorded as skipped", async () => {
  await using home = await homeWithWorkflow("svc-auto-skip-");
  await Deno.writeTextFile(
    `${home.path}/workflows/slow.js`,
    `export const meta = { name: "slow" };\nawait agent("take a while", { label: "slow" });\nreturn 1;\n`,
  );
  // The operator's configuration may fire every second; the work takes about two seconds.
  const config = configOf({
    automations: { tick: { cron: "* * * * * *", workflow: "slow", fake_dispatch: true } },
  });
  await using daemon = await startTestDaemon(home.path, {
    config,
    tickMs: 100,
    fakeLatencyMs: 2000,
  });
  const { ledger, runs } = daemon.services;
  const live = async () =>
    (await runs.list({ owner: "local" })).filter((r) =>
      r.state === "queued" || r.state === "running"
    );
  const skipped = await eventually(async () => {
    assert.ok((await live()).length <= 1, "two runs of one automation queued or running");
    const last = await ledger.lastSlot("config.tick");
    return last && "skipped" in last.item && last.item.skipped ? last : undefined;
  }, { what: "a slot to be skipped" });
  const first = (await runs.list({ owner: "local" }))[0]!;
  assert.deepEqual(skipped.item, {
    run_id: first.run_id,
    skipped: `the run ${first.run_id} of an earlier slot is still queued or running`,
  });
  // Once the first run ends, a later slot fires again.
  await eventually(async () => {
    assert.ok((await live()).length <= 1, "two runs of one automation queued or running");
    return (await runs.list({ owner: "local" })).length >= 2 ? true : undefined;
  }, { what: "a later slot to fire" });
  await daemon.daemon.scheduler.stop();
});

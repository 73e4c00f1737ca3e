/**
 * `svc daemon`'s banner and its `/health/detail` say the same about the scheduler: the banner
 * is printed once the scheduler's election has settled, from the same state.
 */
import assert from "node:assert/strict";
import { startDaemon } from "../src/daemon/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { tempDir } from "./helpers.ts";

const LEADS = "svc: scheduler leader (it fires automations now)";
import { type HostProcess, startHostProcess } from "./host_process.ts";

/** The scheduler's mode as the banner says it, and as `/health/detail` says it. */
async function bothModes(host: HostProcess, token: string): Promise<[string, string]> {
  const modeOf = () => host.lines.map((line) => /; scheduler (\w+);/.exec(line)?.[1]).find(Boolean);
  // The line follows the address line at once; give the pipe a moment.
  for (let i = 0; i < 100 && modeOf() === undefined; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const banner = modeOf();
  assert.ok(banner, host.lines.join("\n"));
  const response = await fetch(`${host.url}/health/detail`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const health = await response.json() as { scheduler: { mode: string } };
  return [banner, health.scheduler.mode];
}

Deno.test("svc daemon's banner says what its /health says: the first daemon leads, a second on the same ledger stands by", async () => {
  await using home = await tempDir("svc-banner-");
  await using first = await startHostProcess(home.path, "daemon");
  const token = (await Deno.readTextFile(`${home.path}/dashboard.token`)).trim();
  // The banner's scheduler line is printed with the address: both are there once it listens.
  assert.deepEqual(await bothModes(first, token), ["leader", "leader"]);
  await using second = await startHostProcess(home.path, "daemon");
  assert.deepEqual(await bothModes(second, token), ["standby", "standby"]);
  // The leader stops (and lets the lease go): the second takes the lead, and says so.
  assert.equal(await first.stop(), 0);
  for (let i = 0; i < 200 && !second.lines.includes(LEADS); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(second.lines.includes(LEADS), second.lines.join("\n"));
  const health = await fetch(`${second.url}/health/detail`, {
    headers: { authorization: `Bearer ${token}` },
  }).then((r) => r.json()) as { scheduler: { mode: string } };
  assert.equal(health.scheduler.mode, "leader");
  assert.equal(await second.stop(), 0);
});

Deno.test("the scheduler's election settles before a banner reads it: standby until the first tick, then the lease's answer", async () => {
  await using home = await tempDir("svc-settle-");
  await using services = await openServices({ home: home.path, role: "daemon" });
  const daemon = await startDaemon(services, { tickMs: 60_000 });
  try {
    // Read at once, the mode is not yet the election's: a banner must wait for it.
    assert.equal(daemon.scheduler.state().mode, "standby");
    await daemon.scheduler.settled();
    assert.equal(daemon.scheduler.state().mode, "leader");
    assert.equal((await daemon.health()).scheduler.mode, "leader");
  } finally {
    await daemon.stop();
  }
});

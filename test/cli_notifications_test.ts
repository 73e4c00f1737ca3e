/**
 * `svc notifications` and `svc notifications read` through the launcher, as a user types them:
 * the list (table and JSON) of the local owner's notifications, and marking them read.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { LOCAL, runCli, tempDir } from "./helpers.ts";

Deno.test("svc notifications lists a failed run's notification; read marks it; bad ids are usage errors", async () => {
  await using home = await tempDir("svc-cli-notify-");
  {
    await using s = await openServices({
      home: home.path,
      dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    });
    const run = await s.runs.start(
      { script: `throw new Error("boom")`, fake_dispatch: true },
      LOCAL,
    );
    await s.runs.wait(run.run_id, LOCAL);
    // Another owner's: never listed for the local user.
    const other = await s.runs.start(
      { script: `throw new Error("x")`, fake_dispatch: true },
      { owner: "bob" },
    );
    await s.runs.wait(other.run_id, { owner: "bob" });
  }
  const table = await runCli(["notifications"], { home: home.path });
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^ID\s+KIND\s+WHAT\s+AGE$/m);
  assert.match(table.stdout, /ntf_[0-9a-f]{12}_\d+\s+●\s+failed\s+Run run_\S+ ended failed/);
  const listed = await runCli(["notifications", "--json", "--unread"], { home: home.path });
  assert.equal(listed.code, 0, listed.stderr);
  const page = JSON.parse(listed.stdout);
  assert.equal(page.notifications.length, 1);
  assert.equal(page.unread, 1);
  const id = page.notifications[0].id;
  const read = await runCli(["notifications", "read", id], { home: home.path });
  assert.equal(read.code, 0, read.stderr);
  assert.match(read.stderr, /marked 1 read; 0 unread/);
  const none = JSON.parse(
    (await runCli(["notifications", "--json", "--unread"], { home: home.path })).stdout,
  );
  assert.deepEqual(none.notifications, []);
  for (const args of [["read"], ["read", "../x"], ["read", "--all", id]]) {
    const bad = await runCli(["notifications", ...args], { home: home.path });
    assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.stderr}`);
  }
  assert.equal((await runCli(["notifications", "--limit", "1000"], { home: home.path })).code, 2);
});

import assert from "node:assert/strict";
import type { Pulse } from "../src/schemas/mod.ts";
import { runCli, tempDir } from "./helpers.ts";

Deno.test("svc status prints the pulse of the owner's work; --json prints it as the API answers", async () => {
  await using home = await tempDir();
  await Deno.writeTextFile(`${home.path}/ok.js`, `await agent("one"); return 1;`);
  await Deno.writeTextFile(`${home.path}/bad.js`, `throw new Error("broke\\u001b[31m here");`);
  const ok = await runCli(["workflow", "run", `${home.path}/ok.js`, "--fake-dispatch"], {
    home: home.path,
  });
  assert.equal(ok.code, 0, ok.stderr);
  const bad = await runCli(["workflow", "run", `${home.path}/bad.js`, "--fake-dispatch"], {
    home: home.path,
  });
  assert.notEqual(bad.code, 0);

  const shown = await runCli(["status"], { home: home.path });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^runs +0 running · 0 queued · 0 waiting$/m);
  assert.match(shown.stdout, /^approvals nothing waits for approval$/m);
  assert.match(shown.stdout, /^spend 1h +\$0\.00 · 1 calls/m);
  assert.match(shown.stdout, /^providers 1\/1 available$/m);
  assert.match(shown.stdout, /^failures +run_\w+ failed \d+s ago: .*broke\\e\[31m here/m);
  assert.ok(
    !shown.stdout.includes("\x1b"),
    "a script's control characters never reach the terminal",
  );

  const json = await runCli(["status", "--json"], { home: home.path });
  assert.equal(json.code, 0, json.stderr);
  const pulse = JSON.parse(json.stdout) as Pulse;
  assert.equal(pulse.owner, "local");
  assert.equal(pulse.spend.day.calls, 1);
  assert.equal(pulse.failures.length, 1);
  assert.equal(pulse.failures[0]!.kind, "run");

  const other = await runCli(["status", "--json"], {
    home: home.path,
    env: { SVC_OWNER: "someone-else" },
  });
  const theirs = JSON.parse(other.stdout) as Pulse;
  assert.equal(theirs.failures.length, 0, "another owner's pulse holds none of it");
  assert.equal(theirs.spend.day.calls, 0);
});

import assert from "node:assert/strict";
import { runCli, tempDir } from "./helpers.ts";

const CHAIN = `version: 1
name: review
steps:
  - id: plan
    prompt: "Plan a fix for: {{input}}"
  - id: apply
    prompt: "Apply this plan: {{steps.plan.output}}"
`;
const PLAN = "fake response to: Plan a fix for: the bug";
const APPLY = `fake response to: Apply this plan: ${PLAN}`;

Deno.test("svc workflow legacy runs a chain like svc workflow run: the returned value on stdout, the deprecation notice on stderr", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/review.yaml`, CHAIN);
  const result = await runCli([
    "workflow",
    "legacy",
    `${dir.path}/review.yaml`,
    "--input",
    "the bug",
    "--fake-dispatch",
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), {
    output: APPLY,
    steps: { plan: PLAN, apply: APPLY },
  });
  assert.match(result.stderr, /svc: deprecated: Version-1 workflow chains are deprecated/);
  assert.match(result.stderr, /svc workflow legacy --to-script/);
  assert.match(result.stderr, /run run_\w+ started \(review\.legacy\.js, "review"\)/);
});

Deno.test("--to-script prints a script that svc workflow run runs to the same value; a resume replays every step", async () => {
  await using home = await tempDir("svc-home-");
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/review.json`, JSON.stringify(CHAIN_JSON));
  const printed = await runCli(["workflow", "legacy", `${dir.path}/review.json`, "--to-script"]);
  assert.equal(printed.code, 0, printed.stderr);
  assert.match(printed.stdout, /^\/\/ A version-2 workflow script/);
  assert.match(printed.stderr, /deprecated/);
  await Deno.writeTextFile(`${dir.path}/review.js`, printed.stdout);
  const ran = await runCli([
    "workflow",
    "run",
    `${dir.path}/review.js`,
    "--args",
    '{"input": "the bug"}',
    "--fake-dispatch",
    "--json",
  ], { home: home.path });
  assert.equal(ran.code, 0, ran.stderr);
  const status = JSON.parse(ran.stdout);
  assert.deepEqual(status.result, { output: APPLY, steps: { plan: PLAN, apply: APPLY } });

  // The chain resumes from the script's run: the same calls, so every step is replayed.
  const resumed = await runCli([
    "workflow",
    "legacy",
    `${dir.path}/review.json`,
    "--input",
    "the bug",
    "--fake-dispatch",
    "--resume-from",
    status.run_id,
    "--json",
  ], { home: home.path });
  assert.equal(resumed.code, 0, resumed.stderr);
  const again = JSON.parse(resumed.stdout);
  assert.deepEqual([again.journal.replayed, again.journal.live], [2, 0]);
  assert.deepEqual(again.result, status.result);
});

const CHAIN_JSON = {
  version: 1,
  name: "review",
  steps: [
    { id: "plan", prompt: "Plan a fix for: {{input}}" },
    { id: "apply", prompt: "Apply this plan: {{steps.plan.output}}" },
  ],
};

Deno.test("a bad chain file exits 2 with a message naming the step and the field, and runs nothing", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/bad.yaml`;
  await Deno.writeTextFile(
    path,
    "version: 1\nsteps:\n  - id: plan\n    prompt: go\n  - id: apply\n    prompt: '{{steps.nope.output}}'\n",
  );
  const result = await runCli(["workflow", "legacy", path, "--fake-dispatch"]);
  assert.equal(result.code, 2);
  assert.equal(result.stdout, "");
  assert.match(
    result.stderr,
    /svc: Cannot read the legacy workflow 'bad\.yaml': step 'apply' \(steps\[1\]\): 'prompt' names \{\{steps\.nope\.output\}\}, which is no earlier step/,
  );
  assert.doesNotMatch(result.stderr, /started/);
  const stdin = await runCli(["workflow", "legacy", "-", "--to-script"], { input: "not: [yaml" });
  assert.equal(stdin.code, 2);
  assert.match(
    stdin.stderr,
    /Cannot read the legacy workflow 'stdin\.yaml': it is not YAML or JSON/,
  );
  const missing = await runCli(["workflow", "legacy", `${dir.path}/none.yaml`]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /Cannot read the chain '.*none\.yaml': no such file/);
});

import assert from "node:assert/strict";
import { fixture, ROOT, runCli, svcCommand, tempDir } from "./helpers.ts";

function assertNoStackTrace(stderr: string): void {
  assert.ok(!/\n\s+at .*\.(ts|js):\d+/.test(stderr), `stack trace on stderr:\n${stderr}`);
}

Deno.test("svc workflow run prints exactly the returned value on stdout and narrates on stderr", async () => {
  const result = await runCli([
    "workflow",
    "run",
    fixture("narrating.js"),
    "--args",
    '{"count": 12}',
    "--fake-dispatch",
  ], {
    env: { SVC_FAKE_LATENCY_MS: "300" },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), { answered: 12 });
  assert.equal(result.stdout.trim().split("\n").length, 1, "one JSON document");
  assert.match(result.stderr, /^svc: run run_[0-9a-z]+ started \(narrating\.js, "narrating"\)$/m);
  assert.match(result.stderr, /^== Gather$/m);
  assert.match(result.stderr, /^gathering 12 items$/m);
  assert.match(result.stderr, /^== Report$/m);
  assert.match(
    result.stderr,
    /^calls: 8 running, 4 queued, 0 done$/m,
    "the concurrency cap shows with latency",
  );
  assert.match(result.stderr, /^calls: 0 running, 0 queued, 12 done$/m);
  assert.match(
    result.stderr,
    /^svc: run run_[0-9a-z]+ succeeded \(12 calls: 12 live, 0 replayed\)$/m,
  );
});

Deno.test("--args nested too deep is a usage error that names the limit", async () => {
  const deep = `${"[".repeat(20_000)}${"]".repeat(20_000)}`;
  const result = await runCli(["workflow", "run", fixture("three_steps.js"), "--args", deep]);
  assert.equal(result.code, 2, result.stderr);
  assert.equal(result.stdout, "");
  assert.equal(
    result.stderr.trim(),
    "svc: Cannot use --args: it must be JSON nested at most 64 levels deep",
  );
  const ok = await runCli([
    "workflow",
    "run",
    fixture("three_steps.js"),
    "--fake-dispatch",
    "--args",
    `${"[".repeat(63)}${"]".repeat(63)}`,
  ]);
  assert.equal(ok.code, 0, ok.stderr);
});

Deno.test("svc workflow run --json prints the whole status object", async () => {
  const result = await runCli([
    "workflow",
    "run",
    fixture("narrating.js"),
    "--args",
    '{"count": 2}',
    "--json",
  ]);
  assert.equal(result.code, 0, result.stderr);
  const status = JSON.parse(result.stdout);
  assert.equal(status.state, "succeeded");
  assert.deepEqual(status.result, { answered: 2 });
  assert.equal(status.journal.calls, 2);
  assert.equal(status.name, "narrating");
  assert.deepEqual(status.narration.map((e: { kind: string }) => e.kind), [
    "phase",
    "log",
    "phase",
  ]);
});

Deno.test("a failed run exits 1 with empty stdout, or the status object with --json", async () => {
  const plain = await runCli(["workflow", "run", fixture("throws.js")]);
  assert.equal(plain.code, 1);
  assert.equal(plain.stdout, "");
  assert.match(
    plain.stderr,
    /failed: TypeError: Cannot read properties of null \(reading 'field'\) \(throws\.js:3:14\)/,
  );
  assertNoStackTrace(plain.stderr);
  const json = await runCli(["workflow", "run", fixture("throws.js"), "--json"]);
  assert.equal(json.code, 1);
  const status = JSON.parse(json.stdout);
  assert.equal(status.state, "failed");
  assert.equal(status.error.line, 3);
});

Deno.test("--timeout ends the run in state timeout with exit status 124", async () => {
  const result = await runCli(["workflow", "run", fixture("loops.js"), "--timeout", "1", "--json"]);
  assert.equal(result.code, 124);
  assert.equal(JSON.parse(result.stdout).state, "timeout");
  assert.match(result.stderr, /timeout: the run exceeded its timeout of 1 s/);
});

Deno.test("--isolation microvm fails closed with exit status 1", async () => {
  const result = await runCli([
    "workflow",
    "run",
    fixture("narrating.js"),
    "--args",
    '{"count":1}',
    "--isolation",
    "microvm",
  ]);
  assert.equal(result.code, 1);
  assert.equal(result.stdout, "");
  assert.match(
    result.stderr,
    /Cannot start the run in microvm isolation: limactl \(Lima, SVC_WORKFLOW_MICROVM_BACKEND=backend_a\) was not found on PATH/,
  );
});

Deno.test("bad input gets a clear message and exit status 2, never a stack trace", async () => {
  const cases: Array<[string[], RegExp]> = [
    [
      ["workflow", "run", "does/not/exist.js"],
      /^svc: Cannot read script 'does\/not\/exist\.js': no such file$/m,
    ],
    [["workflow", "run", "test"], /^svc: Cannot read script 'test': it is a directory$/m],
    [
      ["workflow", "run", fixture("narrating.js"), "--args", "@does/not/exist.json"],
      /^svc: Cannot read --args file 'does\/not\/exist\.json': no such file$/m,
    ],
    [["workflow", "run", fixture("narrating.js"), "--frobnicate"], /unknown option '--frobnicate'/],
    [
      ["workflow", "run", fixture("narrating.js"), "--timeout", "soon"],
      /--timeout 'soon': it must be a whole number of seconds/,
    ],
    [
      ["workflow", "run", fixture("narrating.js"), "--isolation", "docker"],
      /argument 'docker' is invalid\. Allowed choices are unsafe-local, microvm/,
    ],
    [
      ["workflow", "run", fixture("bad_meta.js")],
      /^svc: bad_meta\.js:1:44: meta must be a pure literal: calls are not allowed$/m,
    ],
    [
      ["workflow", "run", fixture("typescript.ts.js")],
      /typescript\.ts\.js:1:12: syntax error: .*TypeScript syntax/,
    ],
    [["workflow", "run"], /missing required argument 'script\.js'/],
    [["frobnicate"], /unknown command 'frobnicate'/],
  ];
  for (const [args, expected] of cases) {
    const result = await runCli(args);
    assert.equal(result.code, 2, `${args.join(" ")}: exit ${result.code}\n${result.stderr}`);
    assert.equal(result.stdout, "", args.join(" "));
    assert.match(result.stderr, expected, args.join(" "));
    assertNoStackTrace(result.stderr);
  }
});

Deno.test("an unreadable script file is a clear error", async () => {
  if (Deno.uid() === 0) {
    // root reads any file; use a path that is not a regular file instead.
    const result = await runCli(["workflow", "run", "/proc/self/mem"]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^svc: Cannot read script '\/proc\/self\/mem': /m);
    assertNoStackTrace(result.stderr);
    return;
  }
  const path = `${ROOT}/test/fixtures/narrating.js`;
  const copy = await Deno.makeTempFile({ suffix: ".js" });
  try {
    await Deno.copyFile(path, copy);
    await Deno.chmod(copy, 0o000);
    const result = await runCli(["workflow", "run", copy]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /permission denied/);
  } finally {
    await Deno.remove(copy);
  }
});

Deno.test("svc --help lists the commands and exits 0", async () => {
  const result = await runCli(["--help"]);
  assert.equal(result.code, 0);
  assert.match(result.stdout, /workflow/);
  const sub = await runCli(["workflow", "run", "--help"]);
  assert.equal(sub.code, 0);
  for (
    const flag of [
      "--args",
      "--fake-dispatch",
      "--timeout",
      "--isolation",
      "--json",
      "--sandbox-default",
      "--workdir",
    ]
  ) {
    assert.ok(sub.stdout.includes(flag), flag);
  }
});

Deno.test("Ctrl-C cancels the run: its guest is killed and svc exits 1 with the cancelled status", async () => {
  await using home = await tempDir();
  // Through the launcher of `deno task svc`: it must pass the signal on, once.
  const child = svcCommand({
    args: [
      "workflow",
      "run",
      fixture("narrating.js"),
      "--args",
      '{"count":2}',
      "--json",
    ],
    env: { SVC_HOME: home.path, SVC_FAKE_LATENCY_MS: "60000", NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdout = new Response(child.stdout).text();
  let stderr = "";
  let interrupted = false;
  const decoder = new TextDecoder();
  const reader = child.stderr.getReader();
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    stderr += decoder.decode(value, { stream: true });
    if (!interrupted && /calls: 2 running/.test(stderr)) {
      interrupted = true;
      child.kill("SIGINT");
    }
  }
  const status = await child.status;
  assert.equal(status.code, 1);
  const run = JSON.parse(await stdout);
  assert.equal(run.state, "cancelled");
  assert.match(stderr, /svc: cancelling the run \(press Ctrl-C again to quit at once\)/);
  assert.deepEqual(
    [...Deno.readDirSync(`${home.path}/tmp`)],
    [],
    "the guest's scratch space is gone",
  );
});

Deno.test("--resume-from replays the earlier run's calls and says how many replayed", async () => {
  await using home = await tempDir();
  const args = ["workflow", "run", fixture("narrating.js"), "--args", '{"count": 3}', "--json"];
  const first = await runCli(args, { home: home.path });
  assert.equal(first.code, 0, first.stderr);
  const firstRun = JSON.parse(first.stdout);
  const second = await runCli([...args, "--resume-from", firstRun.run_id], { home: home.path });
  assert.equal(second.code, 0, second.stderr);
  const resumed = JSON.parse(second.stdout);
  assert.equal(resumed.resumed_from, firstRun.run_id);
  assert.deepEqual([resumed.journal.replayed, resumed.journal.live], [3, 0]);
  assert.match(
    second.stderr,
    new RegExp(`started \\(narrating\\.js, "narrating", resuming ${firstRun.run_id}\\)`),
  );
  assert.match(second.stderr, /succeeded \(3 calls: 0 live, 3 replayed\)/);
  assert.match(second.stderr, /^calls: 0 running, 0 queued, 3 done \(3 replayed\)$/m);
  const unknown = await runCli([...args, "--resume-from", "run_0000000000unknown"], {
    home: home.path,
  });
  assert.equal(unknown.code, 3, "an unknown run exits as not_found does everywhere");
  assert.match(
    unknown.stderr,
    /^svc: Cannot resume from run 'run_0000000000unknown': no such run$/m,
  );
});

Deno.test("--budget-tokens stops starting calls at the cap and reports BudgetExceeded", async () => {
  const result = await runCli([
    "workflow",
    "run",
    fixture("narrating.js"),
    "--args",
    '{"count": 6}',
    "--budget-tokens",
    "20",
  ]);
  assert.equal(result.code, 0, result.stderr);
  const product = JSON.parse(result.stdout);
  assert.ok(product.answered >= 1 && product.answered < 6, result.stdout);
  assert.match(result.stderr, /^! BudgetExceeded: the budget of 20 tokens is reached/m);
  const bad = await runCli(["workflow", "run", fixture("narrating.js"), "--budget-tokens", "lots"]);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /^svc: Cannot use --budget-tokens 'lots': it must be a whole number above 0$/m,
  );
});

Deno.test("a run whose call has a 70 KB label is recorded and --json prints its status", async () => {
  await using dir = await tempDir();
  const script = `${dir.path}/huge_label.js`;
  await Deno.writeTextFile(
    script,
    `const r = await agent("x", { label: "L".repeat(70000) });\nthrow new Error("E".repeat(70000));\n`,
  );
  const result = await runCli(["workflow", "run", script, "--json", "--fake-dispatch"]);
  assert.equal(result.code, 1, result.stderr);
  assert.doesNotMatch(result.stderr, /Cannot record/);
  const status = JSON.parse(result.stdout);
  assert.equal(status.state, "failed");
  assert.equal(status.journal.calls, 1);
  assert.equal(status.journal.live, 1);
  assert.match(status.error.message, /^Error: E+… \[\d+ more characters\]/);
});

Deno.test("without a configured provider and without --fake-dispatch the run warns at its start", async () => {
  const unconfigured = await runCli(["workflow", "run", fixture("three_steps.js")]);
  assert.equal(unconfigured.code, 0, unconfigured.stderr);
  const lines = unconfigured.stderr.trim().split("\n");
  assert.match(lines[0]!, /^svc: run run_[0-9a-z]+ started/);
  assert.match(
    lines[1]!,
    /^svc: warning: no provider is configured, so every agent\(\) call goes to the fake provider and gets a made-up answer/,
  );
  const asked = await runCli(["workflow", "run", fixture("three_steps.js"), "--fake-dispatch"]);
  assert.equal(asked.code, 0, asked.stderr);
  assert.doesNotMatch(asked.stderr, /warning/);
  assert.match(
    asked.stderr.trim().split("\n").at(-1)!,
    /^svc: run run_[0-9a-z]+ succeeded \(3 calls: 3 live, 0 replayed\)$/,
    "nothing below the end line when nothing went wrong",
  );
});

Deno.test("below its end line a run says how many calls failed or were refused, by cause, and which items threw", async () => {
  const result = await runCli([
    "workflow",
    "run",
    fixture("fan_out_failures.js"),
    "--max-agents",
    "3",
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), {
    reviews: ["fake response to: review one", null, "fake response to: review two"],
    lost: null,
    extra: [null, null, null],
  });
  assert.match(
    result.stderr,
    /^! parallel\(\) item 1 threw Error: no reviewer \(fan_out_failures\.js:7:11\); its result is null$/m,
  );
  // The script's own log gets Claude Code's line for it too.
  assert.match(result.stderr, /^parallel\[1\] failed: no reviewer$/m);
  // An unknown option is ignored, as Claude Code ignores it, but never silently.
  assert.match(result.stderr, /^warning: agent\(\): unknown option 'colour' ignored/m);
  const end = result.stderr.trim().split("\n").slice(-4);
  assert.match(
    end[0]!,
    /^svc: run run_[0-9a-z]+ succeeded \(6 calls: 2 live, 0 replayed, 1 failed, 3 skipped\)$/,
  );
  assert.deepEqual(end.slice(1), [
    "svc: 1 agent() call failed: not_found 1",
    "svc: 3 agent() calls were refused: agent_limit 3",
    "svc: 1 item of parallel()/pipeline() threw and became null; the first: parallel() item 1 threw Error: no reviewer (fan_out_failures.js:7:11)",
  ]);
});

Deno.test("a script that loops over refused calls past --max-agents ends failed, with the reason", async () => {
  const result = await runCli([
    "workflow",
    "run",
    fixture("refused_loop.js"),
    "--fake-dispatch",
    "--max-agents",
    "5",
    "--concurrency",
    "2",
    "--json",
  ]);
  assert.equal(result.code, 1, result.stderr);
  const status = JSON.parse(result.stdout);
  assert.equal(status.state, "failed");
  assert.equal(status.error.code, "agent_limit_exceeded");
  assert.deepEqual(status.limits, { max_agents: 5, concurrency: 2 });
  assert.match(
    result.stderr,
    /^svc: run run_[0-9a-z]+ failed: AgentLimitExceeded: the script kept calling agent\(\) after its calls were refused: 1001 refused calls/m,
  );
  assert.match(result.stderr, /^svc: 1001 agent\(\) calls were refused: agent_limit 1001$/m);
});

Deno.test("--max-agents and --concurrency outside their ranges are usage errors naming the range", async () => {
  const cases: Array<[string, string, string]> = [
    [
      "--max-agents",
      "1001",
      "svc: Cannot use --max-agents '1001': it must be a whole number from 1 to 1000",
    ],
    ["--max-agents", "0", "svc: Cannot use --max-agents '0': it must be a whole number above 0"],
    [
      "--concurrency",
      "65",
      "svc: Cannot use --concurrency '65': it must be a whole number from 1 to 64",
    ],
    [
      "--concurrency",
      "1.5",
      "svc: Cannot use --concurrency '1.5': it must be a whole number above 0",
    ],
  ];
  for (const [flag, value, message] of cases) {
    const result = await runCli(["workflow", "run", fixture("three_steps.js"), flag, value]);
    assert.equal(result.code, 2, result.stderr);
    assert.equal(result.stderr.trim(), message);
  }
});

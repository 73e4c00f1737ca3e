import assert from "node:assert/strict";
import { fixture, ROOT, runCli, runCommand, tempDir } from "./helpers.ts";

const ECHO_ARGS = `return { args, type: typeof args };\n`;

Deno.test("--args that is not JSON reaches the script as a plain string, and svc says so", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/echo.js`, ECHO_ARGS);
  const result = await runCli([
    "workflow",
    "run",
    `${dir.path}/echo.js`,
    "--args",
    "fix the {parser",
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), { args: "fix the {parser", type: "string" });
  assert.match(result.stderr, /^svc: --args is not JSON: the script gets it as a string$/m);
  const json = await runCli(["workflow", "run", `${dir.path}/echo.js`, "--args", '{"n": 1}']);
  assert.deepEqual(JSON.parse(json.stdout), { args: { n: 1 }, type: "object" });
  assert.doesNotMatch(json.stderr, /is not JSON/);
});

Deno.test("--args @file reads the file; a missing one is a usage error naming it", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/echo.js`, ECHO_ARGS);
  await Deno.writeTextFile(`${dir.path}/args.json`, '{"files": ["a.ts", "b.ts"]}');
  const result = await runCli([
    "workflow",
    "run",
    `${dir.path}/echo.js`,
    "--args",
    `@${dir.path}/args.json`,
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout).args, { files: ["a.ts", "b.ts"] });
  const missing = await runCli([
    "workflow",
    "run",
    `${dir.path}/echo.js`,
    "--args",
    `@${dir.path}/nope.json`,
  ]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /^svc: Cannot read --args file '.*\/nope\.json': no such file$/m);
});

Deno.test("svc workflow run - reads the script from standard input", async () => {
  const result = await runCli(["workflow", "run", "-", "--fake-dispatch"], {
    input: `return await agent("from stdin");\n`,
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(JSON.parse(result.stdout), "fake response to: from stdin");
  assert.match(result.stderr, /started \(stdin\.js\)/);
  const empty = await runCli(["workflow", "run", "-"], { input: "" });
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /Cannot read the script from standard input: it is empty/);
});

Deno.test("from a checkout, relative paths resolve against the directory the command was typed in", async () => {
  await using dir = await tempDir();
  await using home = await tempDir();
  await Deno.mkdir(`${dir.path}/work`);
  await Deno.writeTextFile(`${dir.path}/flow.js`, `return await agent("hi");\n`);
  await Deno.writeTextFile(`${dir.path}/args.json`, `"from a file"`);
  const deno = Deno.execPath();
  const task = ["task", "-q", "--config", `${ROOT}/deno.json`, "svc", "workflow", "run"];
  // A clean environment: `deno task` keeps an INIT_CWD it inherits (this test runs under one).
  const env = {
    SVC_HOME: home.path,
    NO_COLOR: "1",
    PATH: Deno.env.get("PATH") ?? "",
    HOME: home.path,
  };
  const result = await runCommand(
    deno,
    [...task, "flow.js", "--fake-dispatch", "--workdir", "work", "--args", "@args.json", "--json"],
    { cwd: dir.path, env, clearEnv: true },
  );
  assert.equal(result.code, 0, result.stderr);
  const status = JSON.parse(result.stdout);
  assert.equal(status.workdir, await Deno.realPath(`${dir.path}/work`), "an absolute workdir");
  const missing = await runCommand(deno, [...task, "flow.js", "--workdir", "nowhere"], {
    cwd: dir.path,
    env,
    clearEnv: true,
  });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /^svc: Cannot use --workdir 'nowhere': no such directory$/m);
});

Deno.test("a run that does not succeed ends with the command that resumes it", async () => {
  await using dir = await tempDir();
  await using home = await tempDir();
  const script = `${dir.path}/flaky.js`;
  await Deno.writeTextFile(
    script,
    `const a = await agent("one"); if (args.fail) throw new Error("boom"); return a;\n`,
  );
  const failed = await runCli(
    ["workflow", "run", script, "--fake-dispatch", "--args", '{"fail": true}'],
    { home: home.path },
  );
  assert.equal(failed.code, 1);
  const hint = /^svc: resume it with: (.*)$/m.exec(failed.stderr)?.[1];
  assert.ok(hint, failed.stderr);
  const runId = /run (run_[0-9a-z]+) failed/.exec(failed.stderr)?.[1];
  assert.equal(
    hint,
    `svc workflow run ${script} --args '{"fail": true}' --fake-dispatch --resume-from ${runId}`,
  );
  // The hint works: the same command, with the script fixed by its args, replays the call.
  const resumed = await runCli(
    ["workflow", "run", script, "--fake-dispatch", "--args", "{}", "--resume-from", runId!],
    { home: home.path },
  );
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.match(resumed.stderr, /1 calls: 0 live, 1 replayed/);
  assert.match(resumed.stderr, new RegExp(`^replayed 1 call from run ${runId}$`, "m"));
});

Deno.test("a script from standard input is resumed with `svc workflow resume`, which runs the copy svc kept with its args", async () => {
  await using home = await tempDir();
  const failed = await runCli(["workflow", "run", "-", "--fake-dispatch", "--args", '{"n": 4}'], {
    home: home.path,
    input: `const a = await agent("one"); if (args.n > 3) throw new Error("boom"); return a;\n`,
  });
  assert.equal(failed.code, 1);
  const runId = /run (run_[0-9a-z]+) failed/.exec(failed.stderr)?.[1];
  assert.match(
    failed.stderr,
    new RegExp(`^svc: resume it with: svc workflow resume ${runId}$`, "m"),
  );
  // The same script and args: it fails again, after replaying its one call.
  const again = await runCli(["workflow", "resume", runId!, "--json"], { home: home.path });
  assert.equal(again.code, 1, again.stderr);
  const status = JSON.parse(again.stdout);
  assert.equal(status.resumed_from, runId);
  assert.equal(status.error.message, "Error: boom (stdin.js:1:53)", "the args came back");
  assert.deepEqual([status.journal.replayed, status.journal.live], [1, 0]);
  assert.match(
    again.stderr,
    new RegExp(`^svc: run ${status.run_id} started \\(stdin\\.js, resuming ${runId}\\)$`, "m"),
  );
  assert.match(
    again.stderr,
    new RegExp(`^svc: resume it with: svc workflow resume ${status.run_id}$`, "m"),
  );
});

Deno.test("svc workflow resume changes only what its flags name, and exits by the error of a run it cannot resume", async () => {
  await using home = await tempDir();
  const first = await runCli(
    ["workflow", "run", "-", "--fake-dispatch", "--timeout", "300", "--json"],
    { home: home.path, input: `return await agent("one");\n` },
  );
  assert.equal(first.code, 0, first.stderr);
  const source = JSON.parse(first.stdout);
  const resumed = await runCli(
    ["workflow", "resume", source.run_id, "--timeout", "60", "--budget-tokens", "9000", "--json"],
    { home: home.path },
  );
  assert.equal(resumed.code, 0, resumed.stderr);
  const status = JSON.parse(resumed.stdout);
  assert.deepEqual(
    [status.timeout, status.budget.tokens.cap, status.fake_dispatch, status.journal.replayed],
    [60, 9000, true, 1],
  );
  const live = await runCli(["workflow", "resume", source.run_id, "--no-fake-dispatch", "--json"], {
    home: home.path,
  });
  assert.equal(live.code, 0, live.stderr);
  assert.equal(JSON.parse(live.stdout).fake_dispatch, false);

  const unknown = await runCli(["workflow", "resume", "run_0000000000unknown"], {
    home: home.path,
  });
  assert.equal(unknown.code, 3, "an unknown run exits as not_found does everywhere");
  assert.match(unknown.stderr, /^svc: Cannot resume run 'run_0000000000unknown': no such run$/m);
  const badTimeout = await runCli(["workflow", "resume", source.run_id, "--timeout", "soon"], {
    home: home.path,
  });
  assert.equal(badTimeout.code, 2);
  assert.match(badTimeout.stderr, /^svc: Cannot use --timeout 'soon'/m);
});

Deno.test("without a terminal, call counts print only when they change, at most once a second", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(
    `${dir.path}/loop.js`,
    `for (let i = 0; i < 120; i++) await agent("step " + i);\nreturn "done";\n`,
  );
  const result = await runCli(
    ["workflow", "run", `${dir.path}/loop.js`, "--fake-dispatch", "--json"],
    { env: { SVC_FAKE_LATENCY_MS: "20" } },
  );
  assert.equal(result.code, 0, result.stderr);
  const status = JSON.parse(result.stdout);
  const seconds = (Date.parse(status.ended_at) - Date.parse(status.started_at)) / 1000;
  const counts = result.stderr.split("\n").filter((line) => line.startsWith("calls: "));
  assert.ok(
    counts.length <= Math.ceil(seconds) + 2,
    `${counts.length} counts lines for a ${seconds} s run:\n${counts.join("\n")}`,
  );
  assert.equal(counts.at(-1), "calls: 0 running, 0 queued, 120 done");
});

Deno.test("on a terminal, the counts live in one status line and narration prints above it", async () => {
  const script = await Deno.stat("/usr/bin/script").then(() => "/usr/bin/script", () => undefined);
  if (!script) throw new Error("this test needs util-linux's script(1) for a pseudo-terminal");
  await using home = await tempDir();
  await using out = await tempDir();
  const task = await import("./helpers.ts").then((m) => m.svcTaskCommand());
  const command = [task.command, ...task.args, "workflow", "run", fixture("narrating.js")]
    .concat(["--fake-dispatch", "--args", '{"count": 12}'])
    .map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(" ");
  const result = await runCommand(script, ["-qfec", command, `${out.path}/typescript`], {
    env: { SVC_HOME: home.path, SVC_FAKE_LATENCY_MS: "300", TERM: "xterm" },
  });
  assert.equal(result.code, 0, result.stdout);
  const screen = result.stdout;
  // Each redraw starts with "carriage return, erase line": what follows it is what was drawn.
  const drawn = screen.split("\r\x1b[K").slice(1);
  assert.ok(
    drawn.some((text) => /^\[Gather\] calls: \d+ running, \d+ queued, \d+ done · \d+ s/.test(text)),
    `a status line with the phase, the counts and the time:\n${JSON.stringify(screen)}`,
  );
  assert.ok(drawn.some((text) => /^== Report\r?\n/.test(text)), "a phase clears it, then prints");
  assert.ok(
    drawn.some((text) => /^calls: 0 running, 0 queued, 12 done\r?\n/.test(text)),
    "the last counts stay",
  );
  assert.doesNotMatch(screen, /\ncalls: 8 running/, "no counts lines of their own");
});

/**
 * The Deno host runs with explicit grants. A host lacking one fails with one clear line that
 * names the grant, never a stack trace; `deno task svc` starts it with the narrow set.
 */
import assert from "node:assert/strict";
import { HOST_ENV_VARS, hostPermissionFlags } from "../cli/permissions.ts";
import { fixture, ROOT, runCli, runCommand, svcCommand, tempDir } from "./helpers.ts";

const EXAMPLE = `${ROOT}/examples/review_fanout.js`;

function assertNoStackTrace(stderr: string): void {
  assert.ok(!/\n\s+at .*\.(ts|js):\d+/.test(stderr), `stack trace on stderr:\n${stderr}`);
  assert.ok(!/Stack backtrace|Uncaught/.test(stderr), `uncaught error on stderr:\n${stderr}`);
}

/** Runs the host directly with the given grants instead of the launcher's. */
async function hostWith(grants: string[], home: string, env: Record<string, string> = {}) {
  return await runCommand(
    Deno.execPath(),
    [
      "run",
      "--no-prompt",
      ...grants,
      `${ROOT}/cli/main.ts`,
      "workflow",
      "run",
      EXAMPLE,
      "--fake-dispatch",
    ],
    { env: { SVC_HOME: home, NO_COLOR: "1", ...env } },
  );
}

Deno.test("a host without --allow-run fails the run naming the grant", async () => {
  await using home = await tempDir();
  const result = await hostWith(["--allow-read", "--allow-write", "--allow-env"], home.path);
  assert.equal(result.code, 1);
  assert.equal(result.stdout, "");
  assert.match(
    result.stderr,
    /^svc: run run_\w+ failed: Cannot start the guest: svc needs --allow-run \(run access to "[^"]+"\)$/m,
  );
  assertNoStackTrace(result.stderr);
});

Deno.test("a host that may not write under SVC_HOME stops with one line naming the grant", async () => {
  await using home = await tempDir();
  await using elsewhere = await tempDir();
  const result = await hostWith(
    ["--allow-read", `--allow-write=${elsewhere.path}`, "--allow-run", "--allow-env"],
    home.path,
  );
  assert.equal(result.code, 1);
  assert.equal(result.stdout, "");
  // The ledger lives under SVC_HOME: without write access there, no run can even be recorded.
  assert.match(
    result.stderr,
    new RegExp(
      `^svc: Cannot continue: svc needs --allow-write \\(write access to "${home.path}"\\) \\(see docs/PERMISSIONS\\.md\\)$`,
      "m",
    ),
  );
  assertNoStackTrace(result.stderr);
});

Deno.test("a host without an environment grant stops with one line naming it", async () => {
  await using home = await tempDir();
  const result = await hostWith(
    ["--allow-read", "--allow-write", "--allow-run", "--allow-env=HOME,PATH"],
    home.path,
  );
  assert.equal(result.code, 1);
  assert.equal(result.stdout, "");
  assert.match(
    result.stderr,
    /^svc: Cannot continue: svc needs --allow-env \(env access to "SVC_\w+"\) \(see docs\/PERMISSIONS\.md\)$/m,
  );
  assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
  assertNoStackTrace(result.stderr);
});

Deno.test("a script the host may not read is a usage error naming the grant", async () => {
  await using home = await tempDir();
  const result = await runCommand(
    Deno.execPath(),
    [
      "run",
      "--no-prompt",
      `--allow-read=${ROOT}/cli,${ROOT}/src`,
      "--allow-env",
      `${ROOT}/cli/main.ts`,
      "workflow",
      "run",
      EXAMPLE,
    ],
    { env: { SVC_HOME: home.path } },
  );
  assert.equal(result.code, 2);
  assert.match(
    result.stderr,
    /^svc: Cannot read script '.*review_fanout\.js': svc may not read it \(it needs --allow-read \(read access to ".*review_fanout\.js"\)\)$/m,
  );
  assertNoStackTrace(result.stderr);
});

Deno.test("hostPermissionFlags grants write only under SVC_HOME and the board, run only the named binaries", () => {
  const flags = hostPermissionFlags({
    home: "/data/svc",
    boardDir: "/srv/board",
    executables: ["/opt/deno/bin/deno", "/usr/bin/prlimit"],
  });
  assert.deepEqual(flags, [
    "--no-prompt",
    "--allow-read",
    "--allow-write=/data/svc,/srv/board",
    "--allow-run=/opt/deno/bin/deno,/usr/bin/prlimit",
    `--allow-env=${HOST_ENV_VARS.join(",")}`,
  ]);
  assert.ok(!flags.some((f) => /^(-A|--allow-all|--allow-net|--allow-sys|--allow-ffi)/.test(f)));
  assert.throws(
    () => hostPermissionFlags({ home: "/a,b", executables: [] }),
    /Cannot grant --allow-write for '\/a,b': a path with a comma cannot be granted/,
  );
});

Deno.test("deno task svc starts the host with exactly the narrow grants of its configuration", async () => {
  await using home = await tempDir();
  await using board = await tempDir();
  const launcher = svcCommand({
    args: ["workflow", "run", EXAMPLE, "--fake-dispatch"],
    env: {
      SVC_HOME: home.path,
      SVC_DASHBOARD_BOARD_DIR: board.path,
      SVC_FAKE_LATENCY_MS: "60000",
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    // Wait until the host narrates a call: it is running, under the launcher.
    const reader = launcher.stderr.getReader();
    let stderr = "";
    const decoder = new TextDecoder();
    while (!/calls: \d+ running/.test(stderr)) {
      const { value, done } = await reader.read();
      if (done) assert.fail(`the host ended early:\n${stderr}`);
      stderr += decoder.decode(value, { stream: true });
    }
    reader.releaseLock();
    const hostPid = (await childPids(launcher.pid))[0];
    assert.ok(hostPid, "the launcher has a child");
    const argv = await cmdline(hostPid);
    const grants = argv.filter((arg) => arg.startsWith("--allow") || arg === "-A");
    // The binary on PATH, not a shell builtin of the same name.
    const which = async (name: string) =>
      (await runCommand("bash", ["-c", `type -P ${name}`])).stdout.trim();
    const executables = [
      Deno.execPath(),
      await which("prlimit"),
      await which("git"),
      await which("kill"),
      await which("setsid"),
      // The guests' OS sandbox, where installed: bubblewrap and the ldd it lists libraries
      // with (Linux), sandbox-exec (macOS).
      await which("bwrap"),
      await which("ldd"),
      await which("sandbox-exec"),
    ].filter(Boolean);
    assert.deepEqual(grants, [
      "--allow-read",
      `--allow-write=${home.path},${board.path}`,
      `--allow-run=${executables.join(",")}`,
      `--allow-env=${HOST_ENV_VARS.join(",")}`,
    ]);
    assert.ok(argv.includes("--no-prompt"));
  } finally {
    // One Ctrl-C, passed on by the launcher: the host cancels the run and exits.
    launcher.kill("SIGINT");
    await launcher.stderr.cancel().catch(() => {});
    await launcher.status;
  }
});

/** Pids of the direct children of `pid` (Deno wants --allow-all for /proc; `ps` needs none). */
async function childPids(pid: number): Promise<number[]> {
  const result = await runCommand("ps", ["-o", "pid=", "--ppid", String(pid)]);
  return result.stdout.trim().split(/\s+/).filter(Boolean).map(Number);
}

/** The argument vector of a live process, read by `cat` (run permission only). */
async function cmdline(pid: number): Promise<string[]> {
  const result = await runCommand("cat", [`/proc/${pid}/cmdline`]);
  return result.stdout.split("\0");
}

Deno.test("with the launcher's narrow grants a timed-out guest is killed at once, not by its CPU cap", async () => {
  // Deno.kill needs an unscoped --allow-run; the host must fall back to killing its own child.
  const result = await runCli(["workflow", "run", fixture("loops.js"), "--timeout", "1", "--json"]);
  assert.equal(result.code, 124, result.stderr);
  const status = JSON.parse(result.stdout);
  const seconds = (Date.parse(status.ended_at) - Date.parse(status.started_at)) / 1000;
  // The CPU cap (timeout + 5 s) would end it after 6 s at the earliest.
  assert.ok(seconds < 5, `the guest lived ${seconds} s`);
});

Deno.test("with the launcher's narrow grants a cancelled harness dies with its whole process group", async () => {
  // Deno.kill may not signal a group under a scoped --allow-run: kill(1), granted by path, must.
  const { assertAllGone, callDir, killAll, stub } = await import("./harness_helpers.ts");
  await using home = await tempDir();
  await using dir = await callDir();
  await Deno.writeTextFile(
    `${home.path}/config.json`,
    JSON.stringify({
      providers: { claude: { type: "claude", command: stub("claude") } },
    }),
  );
  const result = await runCli(
    [
      "dispatch",
      "STUB_HANG",
      "--provider",
      "claude",
      "--workdir",
      dir.path,
      "--timeout",
      "1",
      "--wait",
    ],
    { home: home.path },
  );
  const pids = await dir.pids();
  try {
    assert.equal(result.code, 124, result.stderr);
    assert.match(result.stderr, /task task_\w+ timeout/);
    await assertAllGone(pids);
  } finally {
    killAll(pids);
  }
});

/**
 * The `deno task` scripts answer a missing package or tool with one line on standard error that
 * names it and the command that installs it, exit status 1, and no stack trace: each task is run
 * as deno.json has it, with a PATH that lacks the tool or holds a stand-in `dpkg-query` that
 * knows no package.
 */
import assert from "node:assert/strict";
import { failureLine, missingTool } from "../scripts/task_failure.ts";
import { ROOT, runCommand, tempDir } from "./helpers.ts";

/** Runs a task's command line from deno.json with this Deno binary, `PATH` set to `path`. */
function runTaskWith(task: string, path: string) {
  const config = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`));
  const [deno, ...args] = String(config.tasks[task]).split(" ");
  assert.equal(deno, "deno");
  return runCommand(Deno.execPath(), args, {
    cwd: ROOT,
    clearEnv: true,
    env: { PATH: path, HOME: Deno.env.get("HOME") ?? "/root", NO_COLOR: "1" },
  });
}

/** Asserts one line on stderr matching `pattern`, a failed exit and no stack trace. */
function assertOneLine(result: { code: number; stderr: string }, pattern: RegExp): void {
  assert.equal(result.code, 1, result.stderr);
  const lines = result.stderr.trim().split("\n");
  assert.equal(lines.length, 1, result.stderr);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(result.stderr, /^\s+at |Uncaught|stack/im);
}

Deno.test("microvm:image without the kernel package names it and the apt-get line", async () => {
  await using bin = await tempDir("svc-task-bin-");
  // dpkg-query as Debian's answers for a package it does not know.
  await Deno.writeTextFile(
    `${bin.path}/dpkg-query`,
    '#!/bin/sh\nfor last; do :; done\necho "dpkg-query: no packages found matching $last" >&2\nexit 1\n',
    { mode: 0o755 },
  );
  const result = await runTaskWith("microvm:image", `${bin.path}:/usr/bin:/bin`);
  assertOneLine(
    result,
    /^Cannot build the micro-VM image: the package linux-image-cloud-amd64 is not installed; install them with: apt-get install -y --no-install-recommends qemu-system-x86 linux-image-cloud-amd64 busybox-static cpio squashfs-tools$/,
  );
});

Deno.test("microvm:image without dpkg-query names it and the command that installs it", async () => {
  await using bin = await tempDir("svc-task-bin-");
  const result = await runTaskWith("microvm:image", bin.path);
  assertOneLine(
    result,
    /^Cannot build the micro-VM image: dpkg-query is not installed; install it with: apt-get install -y dpkg/,
  );
});

Deno.test("agents:install and vendor:page without npm name it and the command that installs it", async () => {
  await using bin = await tempDir("svc-task-bin-");
  assertOneLine(
    await runTaskWith("agents:install", bin.path),
    /^Cannot install the coding agents: npm is not installed; install it with: apt-get install -y nodejs npm$/,
  );
  assertOneLine(
    await runTaskWith("vendor:page", bin.path),
    /^Cannot vendor the page's libraries: npm is not installed; install it with: apt-get install -y nodejs npm$/,
  );
});

Deno.test("a task's failure is its first line, with the action when it names none", () => {
  assert.equal(
    failureLine("build x", new Error("Cannot build x: no y\n    at z (file:///a.ts:1:1)")),
    "Cannot build x: no y",
  );
  assert.equal(failureLine("build x", new Error("boom")), "Cannot build x: boom");
  assert.equal(
    missingTool("build x", "unknown-tool"),
    "Cannot build x: unknown-tool is not installed (or not on PATH)",
  );
});

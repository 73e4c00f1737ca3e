/**
 * The command line's answers when a tool it starts is missing: one reason that names the tool
 * and the command that installs it (the coding agents from the npm registry at their tested
 * versions, git and bubblewrap from Debian's packages).
 */
import assert from "node:assert/strict";
import { claudeProvider, codexProvider } from "../src/dispatch/mod.ts";
import { TESTED_VERSIONS } from "../src/dispatch/harness/mod.ts";
import { findBubblewrap } from "../src/isolation/mod.ts";
import { safeGit } from "../src/worktrees/mod.ts";
import { tempDir } from "./helpers.ts";

/** Runs `fn` with PATH set to an empty directory, restoring it afterwards. */
async function withoutPath<T>(fn: () => Promise<T>): Promise<T> {
  await using empty = await tempDir("svc-empty-path-");
  const saved = Deno.env.get("PATH");
  Deno.env.set("PATH", empty.path);
  try {
    return await fn();
  } finally {
    if (saved === undefined) Deno.env.delete("PATH");
    else Deno.env.set("PATH", saved);
  }
}

Deno.test("a coding agent missing from PATH is reported with the npm line that installs its tested version", async () => {
  const claude = await withoutPath(() => claudeProvider().probe!());
  const { package: pkg, version } = TESTED_VERSIONS.claude;
  assert.deepEqual(claude, {
    available: false,
    reason: `claude not found on PATH (install it with: npm install -g ${pkg}@${version})`,
  });
  const named = await withoutPath(() => codexProvider({ command: "constructor" }).probe!());
  assert.deepEqual(named, { available: false, reason: "constructor not found on PATH" });
});

Deno.test("git and bubblewrap missing from PATH are reported with the apt-get line that installs them", async () => {
  await using dir = await tempDir("svc-git-");
  await withoutPath(async () => {
    await assert.rejects(
      safeGit(["status"], { cwd: dir.path }),
      /^SvcError: Cannot run git: it is not installed \(install it with: apt-get install -y git\)$/,
    );
    const bwrap = await findBubblewrap(Deno.execPath());
    assert.deepEqual(bwrap, {
      ok: false,
      reason:
        "bubblewrap (bwrap) is not installed (install it with: apt-get install -y bubblewrap)",
    });
  });
});

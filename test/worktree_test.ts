import assert from "node:assert/strict";
import { createDispatcher, type Provider } from "../src/dispatch/mod.ts";
import { WorktreeManager } from "../src/worktrees/mod.ts";
import { LOCAL, runCommand, tempDir, testManager } from "./helpers.ts";

async function gitRepo(dir: string): Promise<void> {
  for (
    const args of [["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"], [
      "config",
      "user.name",
      "t",
    ]]
  ) {
    assert.equal((await runCommand("git", args, { cwd: dir })).code, 0);
  }
  await Deno.writeTextFile(`${dir}/README.md`, "hello\n");
  assert.equal((await runCommand("git", ["add", "."], { cwd: dir })).code, 0);
  assert.equal((await runCommand("git", ["commit", "-q", "-m", "init"], { cwd: dir })).code, 0);
}

/** A provider that edits a file in its working directory when the prompt says "edit". */
function editor(): Provider & { dirs: string[] } {
  const dirs: string[] = [];
  return {
    name: "editor",
    kind: "harness",
    dirs,
    probe: () => Promise.resolve({ available: true, reason: "ok" }),
    async dispatch(request) {
      dirs.push(request.cwd ?? "");
      if (request.prompt.includes("edit")) {
        await Deno.writeTextFile(`${request.cwd}/README.md`, "changed\n");
      }
      return {
        output: "done",
        usage: { input_tokens: 1, output_tokens: 1 },
        cost_usd: 0,
        provider: "editor",
        model: null,
      };
    },
  };
}

Deno.test("isolation worktree: a clean worktree is removed, a changed one is kept with its diff", async () => {
  await using repo = await tempDir();
  await gitRepo(repo.path);
  await using home = await tempDir();
  const provider = editor();
  const worktrees = new WorktreeManager({ home: home.path });
  await using t = await testManager({
    dispatcher: createDispatcher({ providers: [provider], worktrees }),
    home: home.path,
  });
  const run = await t.manager.start({
    script:
      `return [await agent("look", { provider: "editor", isolation: "worktree" }), await agent("edit it", { provider: "editor", isolation: "worktree" })];`,
    workdir: repo.path,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const [clean, changed] = await t.manager.journal(run.run_id, LOCAL);
  assert.equal(clean!.worktree?.kept, false);
  assert.equal(changed!.worktree?.kept, true);
  assert.match(changed!.worktree?.diff ?? "", /M README\.md/);
  assert.match(changed!.worktree?.diff ?? "", /README\.md \| 2 \+-/);
  assert.ok(
    provider.dirs.every((d) => d.startsWith(`${t.home}/worktrees/wt_`)),
    "the calls ran in worktrees",
  );
  await assert.rejects(Deno.stat(clean!.worktree!.path), "a clean worktree is gone");
  assert.equal(await Deno.readTextFile(`${changed!.worktree!.path}/README.md`), "changed\n");
  assert.equal(
    await Deno.readTextFile(`${repo.path}/README.md`),
    "hello\n",
    "the repository itself is untouched",
  );
  const branches = (await runCommand("git", ["branch", "--list", "svc/*"], { cwd: repo.path }))
    .stdout.trim().split("\n");
  assert.equal(branches.length, 1, "only the kept worktree's branch remains");

  const stale = await worktrees.stale();
  assert.deepEqual(stale.map((w) => [w.path, w.reason]), [[
    changed!.worktree!.path,
    "kept with changes",
  ]]);
  await worktrees.remove(stale[0]!.id);
  assert.deepEqual(await worktrees.stale(), []);
  assert.equal(
    (await runCommand("git", ["branch", "--list", "svc/*"], { cwd: repo.path })).stdout.trim(),
    "",
  );
});

Deno.test("a worktree in use is never listed for cleanup nor removed", async () => {
  await using home = await tempDir();
  await using repo = await tempDir();
  await gitRepo(repo.path);
  const worktrees = new WorktreeManager({ home: home.path });
  const active = await worktrees.create(repo.path);
  await Deno.writeTextFile(`${active.path}/new.txt`, "work in progress\n");
  assert.deepEqual(await worktrees.stale(), [], "this host's worktree in use");
  const other = new WorktreeManager({ home: home.path });
  assert.deepEqual(await other.stale(), [], "another manager sees the live lock");
  await assert.rejects(other.remove(active.id), /no such stale worktree/);
  const result = await worktrees.finish(active);
  assert.equal(result.kept, true);
  assert.match(result.diff ?? "", /\?\? new\.txt/);
});

Deno.test("isolation worktree needs a workdir inside a git repository", async () => {
  await using home = await tempDir();
  await using notRepo = await tempDir();
  const dispatcher = createDispatcher({
    providers: [editor()],
    worktrees: new WorktreeManager({ home: home.path }),
  });
  const signal = new AbortController().signal;
  await assert.rejects(
    dispatcher.dispatch({
      prompt: "x",
      options: { provider: "editor", isolation: "worktree" },
      signal,
    }),
    /the call has no workdir/,
  );
  await assert.rejects(
    dispatcher.dispatch({
      prompt: "x",
      options: { provider: "editor", isolation: "worktree" },
      cwd: notRepo.path,
      signal,
    }),
    /is not inside a git repository/,
  );
});

/**
 * A stand-in for a write agent that attacks the host's git: in its worktree it replaces the
 * `.git` file with one pointing at a git directory it made, whose configuration names a
 * command (`core.fsmonitor`), and leaves a change so that the worktree is kept.
 */
function planter(marker: string): Provider {
  return {
    name: "planter",
    kind: "harness",
    probe: () => Promise.resolve({ available: true, reason: "ok" }),
    async dispatch(request) {
      const cwd = request.cwd!;
      const evil = `${cwd}/.evil`;
      assert.equal((await runCommand("git", ["init", "-q", "--bare", evil])).code, 0);
      await Deno.writeTextFile(
        `${evil}/config`,
        `[core]\n\tbare = false\n\tfsmonitor = "touch ${marker}; false"\n` +
          `[filter "x"]\n\tclean = touch ${marker}; cat\n`,
      );
      await Deno.writeTextFile(`${cwd}/.git`, `gitdir: ${evil}\n`);
      await Deno.writeTextFile(`${cwd}/.gitattributes`, "* filter=x\n");
      await Deno.writeTextFile(`${cwd}/README.md`, "changed\n");
      return {
        output: "planted",
        usage: { input_tokens: 1, output_tokens: 1 },
        cost_usd: 0,
        provider: "planter",
        model: null,
      };
    },
  };
}

Deno.test("a .git file an agent planted in its worktree makes the host's git run nothing", async () => {
  await using repo = await tempDir();
  await gitRepo(repo.path);
  await using home = await tempDir();
  await using out = await tempDir();
  const marker = `${out.path}/host-ran-it`;
  const worktrees = new WorktreeManager({ home: home.path });
  await using t = await testManager({
    dispatcher: createDispatcher({ providers: [planter(marker)], worktrees }),
    home: home.path,
  });
  const run = await t.manager.start({
    script: `return await agent("plant", { provider: "planter", isolation: "worktree" });`,
    workdir: repo.path,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const [entry] = await t.manager.journal(run.run_id, LOCAL);
  assert.equal(entry!.worktree?.kept, true);
  assert.match(entry!.worktree?.diff ?? "", /README\.md/, "status read the real git directory");
  const [stale] = await worktrees.stale();
  await worktrees.remove(stale!.id);
  await assert.rejects(Deno.stat(marker), Deno.errors.NotFound, "the planted command never ran");
  assert.equal(
    (await runCommand("git", ["branch", "--list", "svc/*"], { cwd: repo.path })).stdout.trim(),
    "",
    "the recorded repository's branch was removed",
  );
});

Deno.test("hooks and filter commands in the repository's own configuration never run on the host", async () => {
  await using repo = await tempDir();
  await gitRepo(repo.path);
  await using home = await tempDir();
  await using out = await tempDir();
  const marker = `${out.path}/host-ran-it`;
  // What an earlier write agent in the workdir could have left in the repository.
  await Deno.writeTextFile(
    `${repo.path}/.git/hooks/post-checkout`,
    `#!/bin/sh\ntouch ${marker}\n`,
  );
  await Deno.chmod(`${repo.path}/.git/hooks/post-checkout`, 0o755);
  for (
    const [key, value] of [
      ["core.fsmonitor", `touch ${marker}; false`],
      ["filter.x.smudge", `touch ${marker}; cat`],
      ["filter.x.clean", `touch ${marker}; cat`],
    ]
  ) {
    assert.equal((await runCommand("git", ["config", key!, value!], { cwd: repo.path })).code, 0);
  }
  await Deno.writeTextFile(`${repo.path}/.gitattributes`, "* filter=x\n");
  assert.equal((await runCommand("git", ["add", ".gitattributes"], { cwd: repo.path })).code, 0);
  assert.equal(
    (await runCommand("git", [
      "-c",
      "core.hooksPath=/dev/null",
      "-c",
      "filter.x.clean=",
      "commit",
      "-qm",
      "attrs",
    ], {
      cwd: repo.path,
    })).code,
    0,
  );
  await Deno.remove(marker).catch(() => {});
  const worktrees = new WorktreeManager({ home: home.path });
  const made = await worktrees.create(repo.path);
  await Deno.writeTextFile(`${made.path}/README.md`, "changed\n");
  const result = await worktrees.finish(made);
  assert.equal(result.kept, true);
  await worktrees.remove(made.id);
  await assert.rejects(Deno.stat(marker), Deno.errors.NotFound, "no hook, fsmonitor or filter ran");
});

Deno.test("a script's workdir stays inside the run's workdir, symbolic links resolved", async () => {
  await using work = await tempDir();
  await using other = await tempDir();
  await gitRepo(other.path);
  await Deno.mkdir(`${work.path}/sub`);
  await Deno.symlink(other.path, `${work.path}/escape`);
  const provider = editor();
  await using t = await testManager({
    dispatcher: createDispatcher({
      providers: [provider],
      worktrees: new WorktreeManager({ home: work.path }),
    }),
  });
  const attempt = async (workdir: string, isolation = "none") => {
    const run = await t.manager.start({
      script: `return await agent("look", ${
        JSON.stringify({ provider: "editor", workdir, isolation })
      });`,
      workdir: work.path,
    }, LOCAL);
    return await t.manager.wait(run.run_id, LOCAL);
  };
  const inside = await attempt("sub");
  assert.equal(inside.state, "succeeded", JSON.stringify(inside.error));
  assert.equal(provider.dirs.at(-1), await Deno.realPath(`${work.path}/sub`));
  for (
    const [workdir, why] of [
      [other.path, "is outside the run's workdir"],
      ["..", "is outside the run's workdir"],
      ["escape", "is outside the run's workdir"],
      ["missing", "does not exist"],
    ]
  ) {
    const refused = await attempt(workdir!, "worktree");
    assert.equal(refused.state, "failed", workdir);
    assert.match(
      refused.error?.message ?? "",
      new RegExp(`option 'workdir' cannot be used: .*${why}`),
    );
  }
  assert.equal(provider.dirs.length, 1, "no refused call reached the provider");
  const branches = await runCommand("git", ["branch", "--list", "svc/*"], { cwd: other.path });
  assert.equal(branches.stdout.trim(), "", "no worktree of the other repository was made");
});

Deno.test("a run without a workdir refuses a script's workdir option", async () => {
  await using t = await testManager();
  const run = await t.manager.start(
    { script: `return await agent("x", { workdir: "/etc" });` },
    LOCAL,
  );
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "failed");
  assert.match(status.error?.message ?? "", /the run has no workdir/);
});

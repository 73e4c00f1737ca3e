import assert from "node:assert/strict";
import { createDispatcher, type Provider, WorktreeManager } from "../src/dispatch/mod.ts";
import { runCommand, tempDir, testManager } from "./helpers.ts";

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
  });
  const status = await t.manager.wait(run.run_id);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const [clean, changed] = await t.manager.journal(run.run_id);
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
    /the call names no workdir/,
  );
  await assert.rejects(
    dispatcher.dispatch({
      prompt: "x",
      options: { provider: "editor", isolation: "worktree", workdir: notRepo.path },
      signal,
    }),
    /is not inside a git repository/,
  );
});

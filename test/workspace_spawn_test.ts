/**
 * The workspace re-checked at every spawn: a run's workdir is checked (and made real) when the
 * run starts, and each call's directory is resolved and checked again right before its
 * process starts, which then starts in the checked real path. A link an earlier call made in
 * place of a directory cannot redirect a later one.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { claudeProvider, createDispatcher } from "../src/dispatch/mod.ts";
import { WorktreeManager } from "../src/worktrees/mod.ts";
import { workingDir } from "../src/dispatch/harness/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { startTestDaemon } from "./daemon_helpers.ts";
import { fixture, narration, tempDir } from "./helpers.ts";

/** Alice's dashboard: `root` her only workspace root, the swapping agent as `claude`. */
async function dashboardWithSwapper(root: string, target: string, log: string) {
  const provider = claudeProvider({
    command: fixture("workspace_swap/claude"),
    env: { SWAP_LOG: log, SWAP_TARGET: target },
  });
  return await startDashboard({
    config: ConfigSchema.parse({ workspaces: { alice: [root] } }),
    providers: [provider],
  });
}

async function lines(path: string): Promise<string[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").filter(Boolean);
}

// A failed call answers null, as in Claude Code; the run narrates why.
const TWO_CALLS = `
const first = await agent("MOVE", { provider: "claude", sandbox: "write" });
const second = await agent("second", { provider: "claude", sandbox: "write" });
return { first, second };`;

Deno.test("a link an HTTP run's first agent leaves in place of its workdir is refused at the second call's spawn, and nothing starts outside the root", async () => {
  await using root = await tempDir("svc-root-");
  await using other = await tempDir("svc-other-");
  await using logs = await tempDir("svc-log-");
  const project = `${await Deno.realPath(root.path)}/proj`;
  await Deno.mkdir(project);
  const log = `${logs.path}/cwd.log`;
  await using d = await dashboardWithSwapper(root.path, other.path, log);
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: { script: TWO_CALLS, workdir: project },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = started.body.run_id as string;
  const done = await d.services.runs.wait(runId, { owner: "alice" });
  assert.equal(done.state, "succeeded", JSON.stringify(done.error));
  assert.deepEqual(done.result, { first: "done", second: null });
  const refusal = narration(done, "call").join("\n");
  assert.match(
    refusal,
    /agent call #2 failed: Cannot start the call: its working directory now leads outside the directory checked when the run or task started/,
  );
  assert.ok(!refusal.includes(other.path), refusal);
  assert.deepEqual(done.failures, { forbidden: 1 });
  // Only the first call started, in the checked real path; none in the other user's project.
  assert.deepEqual(await lines(log), [project]);
  assert.deepEqual([...Deno.readDirSync(other.path)], []);
});

Deno.test("a call whose workdir is untouched starts in the real path of the run's workdir", async () => {
  await using root = await tempDir("svc-root-");
  await using logs = await tempDir("svc-log-");
  const real = await Deno.realPath(root.path);
  await Deno.mkdir(`${real}/proj`);
  // Alice names her project through a link inside her root: the run records where it leads.
  await Deno.symlink(`${real}/proj`, `${real}/alias`);
  const log = `${logs.path}/cwd.log`;
  await using d = await dashboardWithSwapper(root.path, logs.path, log);
  const started = await d.json("/api/workflow/run", {
    token: TOKENS.alice,
    body: {
      script: `await agent("one", { provider: "claude" }); return "ok";`,
      workdir: `${real}/alias`,
    },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const done = await d.services.runs.wait(started.body.run_id as string, { owner: "alice" });
  assert.equal(done.state, "succeeded", JSON.stringify(done.error));
  assert.deepEqual(await lines(log), [`${real}/proj`]);
});

Deno.test("a queued remote task whose workdir was swapped for a link after its check is refused when its worker starts it", async () => {
  await using home = await tempDir("svc-home-");
  await using root = await tempDir("svc-root-");
  await using other = await tempDir("svc-other-");
  await using logs = await tempDir("svc-log-");
  const project = `${await Deno.realPath(root.path)}/proj`;
  await Deno.mkdir(project);
  const log = `${logs.path}/cwd.log`;
  const config = ConfigSchema.parse({ workspaces: { alice: [root.path] } });
  const alice = { owner: "alice", remote: true };
  await using queuer = await openServices({ home: home.path, config });
  const task = await queuer.tasks.enqueue(
    { prompt: "work", provider: "claude", sandbox: "write", workdir: project },
    alice,
  );
  // Checked and queued; then the directory is renamed and a link to another project left.
  await Deno.rename(project, `${project}-moved`);
  await Deno.symlink(other.path, project);
  const provider = claudeProvider({
    command: fixture("workspace_swap/claude"),
    env: { SWAP_LOG: log, SWAP_TARGET: other.path },
  });
  await using _daemon = await startTestDaemon(home.path, { config, providers: [provider] });
  const end = await queuer.tasks.wait(task.task_id, alice);
  assert.equal(end.state, "failed");
  assert.equal(end.error?.code, "forbidden");
  assert.match(
    end.error?.message ?? "",
    /Cannot start the call: its working directory now leads outside the directory checked when the run or task started/,
  );
  assert.deepEqual(await lines(log), []);
});

Deno.test("a session's kept directory replaced by a link is refused at the next turn's spawn", async () => {
  await using dirs = await tempDir("svc-dirs-");
  await using other = await tempDir("svc-other-");
  const options = {
    session: "s1",
    root: `${dirs.path}/tmp`,
    sessionRoot: `${dirs.path}/session_dirs`,
  };
  await Deno.mkdir(options.root);
  const first = await workingDir("claude", options);
  assert.equal(first.path, await Deno.realPath(first.path));
  await Deno.rename(first.path, `${first.path}-moved`);
  await Deno.symlink(other.path, first.path);
  await assert.rejects(
    workingDir("claude", options),
    /^SvcError: Cannot start the call: the directory svc keeps for it was replaced \(by a symbolic link or a file\), so nothing was started there$/,
  );
});

/** Worktrees as the host makes them, with the repositories they were asked of. */
class RecordingWorktrees extends WorktreeManager {
  readonly asked: string[] = [];
  override create(repo: string): ReturnType<WorktreeManager["create"]> {
    this.asked.push(repo);
    return super.create(repo);
  }
}

async function gitRepo(dir: string): Promise<void> {
  const git = (...args: string[]) =>
    new Deno.Command("git", {
      args: ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", ...args],
      stdout: "null",
      stderr: "null",
    }).output();
  await git("init", "-q");
  await Deno.writeTextFile(`${dir}/README`, "x\n");
  await git("add", "README");
  await git("commit", "-q", "-m", "x");
}

Deno.test("a worktree call whose workdir now leads outside the checked one is refused before any worktree is made of the other repository", async () => {
  await using home = await tempDir("svc-home-");
  await using root = await tempDir("svc-root-");
  await using other = await tempDir("svc-other-");
  await using logs = await tempDir("svc-log-");
  const project = `${await Deno.realPath(root.path)}/proj`;
  await Deno.mkdir(project);
  await gitRepo(other.path);
  // The run checked `project`; since then it became a link to another user's repository.
  await Deno.rename(project, `${project}-moved`);
  await Deno.symlink(other.path, project);
  const log = `${logs.path}/cwd.log`;
  const provider = claudeProvider({
    command: fixture("workspace_swap/claude"),
    env: { SWAP_LOG: log, SWAP_TARGET: other.path },
  });
  const worktrees = new RecordingWorktrees({ home: home.path });
  const dispatcher = createDispatcher({ providers: [provider], worktrees });
  await assert.rejects(
    dispatcher.dispatch({
      prompt: "work",
      options: { provider: "claude", sandbox: "write", isolation: "worktree" },
      signal: new AbortController().signal,
      cwd: project,
      cwdRoot: project,
    }, {}),
    /Cannot start the call: its working directory now leads outside the directory checked/,
  );
  assert.deepEqual(await lines(log), []);
  assert.deepEqual(worktrees.asked, []);
});

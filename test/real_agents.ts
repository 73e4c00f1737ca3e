/**
 * Shared pieces of the real-tool suite: where the real coding-agent command lines are (CI
 * installs them from the npm registry and names their directory in `SVC_TEST_AGENTS`), a
 * throw-away HOME per test, and a test wrapper that fails, not skips, when CI asked for the
 * tools and one is missing.
 * @module
 */
import { TESTED_VERSIONS } from "../src/dispatch/harness/tested_versions.ts";
import assert from "node:assert/strict";
import {
  claudeProvider,
  createDispatcher,
  type HarnessOptions,
  type Provider,
} from "../src/dispatch/mod.ts";
import { WorktreeManager } from "../src/worktrees/mod.ts";
import type { JsonValue } from "../src/schemas/mod.ts";
import type { Reply, Responder } from "./model_standin/mod.ts";
import { LOCAL, runCommand, tempDir, testManager } from "./helpers.ts";

/** The four real tools. */
export type RealTool = keyof typeof TESTED_VERSIONS;

/** The directory of the real tools' binaries, when this run has them. */
export function agentsDir(): string | undefined {
  const dir = Deno.env.get("SVC_TEST_AGENTS");
  return dir === undefined || dir === "" ? undefined : dir;
}

/** The path of a real tool's binary; throws when `SVC_TEST_AGENTS` is set and it is missing. */
export function agentBin(tool: RealTool): string {
  const dir = agentsDir();
  if (dir === undefined) throw new Error("SVC_TEST_AGENTS is not set");
  const path = `${dir}/${tool}`;
  try {
    Deno.statSync(path);
  } catch {
    throw new Error(`the real ${tool} is not installed at ${path} (deno task agents:install)`);
  }
  return path;
}

/** A throw-away HOME (with its own TMPDIR inside) for one test of a real tool. */
export interface AgentHome extends AsyncDisposable {
  /** The HOME directory. */
  home: string;
  /** A temporary directory of the test's own, under HOME. */
  tmp: string;
  /** A working directory for calls, under HOME. */
  work: string;
}

/** Makes a throw-away HOME with `tmp/` and `work/` inside. */
export async function agentHome(): Promise<AgentHome> {
  const dir = await tempDir("svc-agent-home-");
  const tmp = `${dir.path}/tmp`;
  const work = `${dir.path}/work`;
  await Deno.mkdir(tmp);
  await Deno.mkdir(work);
  return { home: dir.path, tmp, work, [Symbol.asyncDispose]: () => dir[Symbol.asyncDispose]() };
}

/**
 * A test of a real tool: run when `SVC_TEST_AGENTS` is set (CI sets it; a missing binary then
 * fails the test), ignored otherwise.
 */
export function realToolTest(
  tool: RealTool,
  name: string,
  fn: (bin: string) => Promise<void>,
): void {
  Deno.test({
    name: `real ${tool} ${TESTED_VERSIONS[tool].version}: ${name}`,
    ignore: agentsDir() === undefined,
    fn: () => fn(agentBin(tool)),
  });
}

/**
 * Claude Code's harness options pointed at the stand-in at `url`, with a throw-away HOME and a
 * fake key only; `env` adds variables (such as `IS_SANDBOX` for `full` as root).
 */
export function claudeOptions(
  bin: string,
  url: string,
  home: { home: string; tmp: string },
  env: Record<string, string> = {},
): HarnessOptions {
  return {
    command: bin,
    baseUrl: url,
    passEnv: [],
    env: {
      HOME: home.home,
      TMPDIR: home.tmp,
      CLAUDE_CODE_TMPDIR: home.tmp,
      ANTHROPIC_API_KEY: "sk-ant-standin-key",
      CLAUDE_CODE_MAX_RETRIES: "0",
      ...env,
    },
    scratchRoot: home.tmp,
    sessionRoot: home.tmp,
  };
}

/** Claude Code pointed at the stand-in at `url`, with a throw-away HOME and a fake key only. */
export function claudeAt(bin: string, url: string, home: { home: string; tmp: string }): Provider {
  return claudeProvider(claudeOptions(bin, url, home));
}

/**
 * Scripts one round of tool calls: a request without tool results gets `calls` (and `usage`),
 * the request carrying their results gets a text that quotes them, `tool said: <results>`.
 */
export function toolThenText(
  calls: NonNullable<Reply["toolCalls"]>,
  usage?: Reply["usage"],
): Responder {
  return (request) =>
    request.toolResults.length === 0
      ? { toolCalls: calls, ...(usage ? { usage } : {}) }
      : { text: `tool said: ${request.toolResults.map((r) => r.content).join(" | ")}` };
}

/** Waits until `check` holds, for at most 30 s; the error names `what` was awaited. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what = "the awaited condition",
): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** What a worktree-isolated call of a workflow run left. */
export interface WorktreeCall {
  /** The run's result: the call's answer. */
  result: JsonValue | undefined;
  /** Where the call's worktree is, whether it was kept, and its diff. */
  worktree: { path: string; kept: boolean; diff?: string | null };
}

/** Makes `dir` a git repository with one commit of `README.md`. */
async function gitRepo(dir: string): Promise<void> {
  await Deno.writeTextFile(`${dir}/README.md`, "hello\n");
  const who = ["-c", "user.email=t@example.com", "-c", "user.name=t"];
  for (
    const args of [["init", "-q", "-b", "main"], [...who, "add", "."], [
      ...who,
      "commit",
      "-q",
      "-m",
      "init",
    ]]
  ) {
    const done = await runCommand("git", args, { cwd: dir });
    assert.equal(done.code, 0, done.stderr);
  }
}

/**
 * Makes `options.work` a git repository and runs `prompt` there as the one `agent()` call of a
 * workflow run, with `isolation: "worktree"` and the `write` sandbox; worktrees go under
 * `options.home`. The run must succeed.
 */
export async function worktreeCall(
  provider: Provider,
  prompt: string,
  options: { work: string; home: string },
): Promise<WorktreeCall> {
  await gitRepo(options.work);
  const worktrees = new WorktreeManager({ home: options.home });
  await using t = await testManager({
    dispatcher: createDispatcher({ providers: [provider], worktrees, fakeLatencyMs: 0 }),
  });
  const run = await t.manager.start({
    script: `return await agent(${JSON.stringify(prompt)}, { provider: ${
      JSON.stringify(provider.name)
    }, isolation: "worktree", sandbox: "write" })`,
    workdir: options.work,
    sandbox_max: "write",
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const [entry] = await t.manager.journal(run.run_id, LOCAL);
  assert.ok(entry?.worktree, "the call ran in a worktree");
  return { result: status.result, worktree: entry.worktree };
}

/**
 * Scripts a write of `NOTES.md` ("new") into the worktree the tool works in, found under
 * `home`'s worktrees in what the tool told the model (its system prompt names its directory):
 * `input` gives the tool call's input for the file's path. The request carrying the result gets
 * `wrote: <result>`.
 */
export function writeInWorktree(
  home: string,
  tool: string,
  input: (file: string) => Record<string, unknown>,
): Responder {
  const inWorktrees = new RegExp(
    `${home.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/worktrees/wt_[A-Za-z0-9_-]+`,
  );
  return (request) => {
    if (request.toolResults.length > 0) {
      return { text: `wrote: ${request.toolResults.map((r) => r.content).join(" | ")}` };
    }
    const dir = inWorktrees.exec(`${request.system}\n${request.transcript}`)?.[0];
    if (dir === undefined) return { text: "no worktree named to the model" };
    return { toolCalls: [{ name: tool, input: input(`${dir}/NOTES.md`) }] };
  };
}

/** Asserts that a worktree call wrote `NOTES.md` in its kept worktree and not in `work`. */
export async function assertWroteInWorktree(call: WorktreeCall, work: string): Promise<void> {
  assert.match(String(call.result), /^wrote: /);
  assert.equal(call.worktree.kept, true);
  assert.match(call.worktree.diff ?? "", /NOTES\.md/);
  assert.equal(await Deno.readTextFile(`${call.worktree.path}/NOTES.md`), "new\n");
  const leaked = await Deno.stat(`${work}/NOTES.md`).then(() => true, () => false);
  assert.equal(leaked, false, "the repository is untouched");
}

/**
 * A run started from a saved workflow of the project, as Claude Code's Workflow tool takes one
 * (`name`, `scriptPath`, with `title` and `description`): over HTTP, MCP, A2A and the command
 * line, under the workspace policy of remote callers.
 */
import assert from "node:assert/strict";
import { TaskState } from "@a2a-js/sdk";
import {
  ARGS_KEY,
  DESCRIPTION_KEY,
  FAKE_KEY,
  SCRIPT_PATH_KEY,
  TITLE_KEY,
  WORKFLOW_KEY,
} from "../src/a2a/mod.ts";
import { ConfigSchema } from "../src/config/mod.ts";
import { asTask, sdkClient, sendRequest, startA2a, userMessage } from "./a2a_helpers.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { LOCAL, narration, runCli, tempDir, testManager } from "./helpers.ts";
import { connectHttp, errorText, untilDone } from "./mcp_helpers.ts";

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(path.replace(/\/[^/]+$/, ""), { recursive: true });
  await Deno.writeTextFile(path, text);
}

/** A project with a saved workflow known by its meta.name, in Claude Code's folder. */
async function project(dir: string): Promise<string> {
  const path = `${dir}/project`;
  await write(
    `${path}/.claude/workflows/validate-everything.js`,
    `export const meta = { name: "validate", description: "checks" };
    const r = await agent("check " + args.what, { label: "check" });
    return { r, sub: await workflow("./helper.js") };`,
  );
  await write(`${path}/.claude/workflows/helper.js`, `return "helped";`);
  return path;
}

const RESULT = { r: "fake response to: check x", sub: "helped" };

Deno.test("a run names a saved workflow by meta.name or by scriptPath, with a title and a description it records", async () => {
  await using t = await testManager({ projectDir: undefined });
  const dir = await project(t.home);
  const real = await Deno.realPath(dir);
  for (
    const ref of [
      { name: "validate" },
      { scriptPath: ".claude/workflows/validate-everything.js" },
      { scriptPath: `${dir}/.claude/workflows/validate-everything.js` },
      { scriptPath: `${real}/.claude/workflows/validate-everything.js` },
    ]
  ) {
    const run = await t.manager.start({
      ...ref,
      args: { what: "x" },
      workdir: dir,
      title: "Validate x",
      description: "Line one\nline two",
    }, LOCAL);
    const status = await t.manager.wait(run.run_id, LOCAL);
    assert.equal(status.state, "succeeded", JSON.stringify([ref, status.error]));
    assert.deepEqual(status.result, RESULT);
    assert.equal(status.name, "validate");
    assert.equal(status.filename, "validate-everything.js");
    assert.equal(status.title, "Validate x");
    assert.equal(status.description, "Line one\nline two");
    // The script ran is recorded, so that the run can be resumed after the file changed.
    assert.match((await t.manager.input(run.run_id, LOCAL)).script, /meta = \{ name: "validate"/);
  }
});

Deno.test("scriptPath wins over name and script, as in Claude Code, and the run narrates what it ignored", async () => {
  await using t = await testManager({ projectDir: undefined });
  const dir = await project(t.home);
  const run = await t.manager.start({
    scriptPath: ".claude/workflows/helper.js",
    name: "validate",
    script: "return 'text';",
    workdir: dir,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.result, "helped");
  assert.deepEqual(narration(status, "warning"), [
    "'name' and 'script' ignored: 'scriptPath' names what runs",
  ]);
});

Deno.test("a run refuses a scriptPath outside the project, a missing name, an oversized title, and names no host path", async () => {
  await using t = await testManager({ projectDir: undefined });
  const dir = await project(t.home);
  await write(`${t.home}/outside.js`, "return 'OUTSIDE';");
  await Deno.symlink(`${t.home}/outside.js`, `${dir}/link.js`);
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ scriptPath: "../outside.js" }, /^Cannot start the run: '\.\.\/outside\.js' must be a path/],
    [{ scriptPath: `${t.home}/outside.js` }, /^Cannot start the run: an absolute path must be/],
    [{ scriptPath: "link.js" }, /leads outside the project directory through a symbolic link/],
    [{ name: "nothing" }, /^Cannot start the run: no workflow 'nothing' \(looked for meta\.name/],
    [{ name: "../x" }, /'name' must be a workflow name/],
    [{}, /'script' is required unless 'name' or 'scriptPath' names a saved workflow/],
    [{ script: "return 1", title: "x".repeat(201) }, /'title' must be at most 200 characters/],
    [{ script: "return 1", title: "a\nb" }, /'title' must be one line/],
  ];
  for (const [body, pattern] of cases) {
    await assert.rejects(
      t.manager.start({ ...body, workdir: dir }, LOCAL),
      (error: Error) => {
        assert.match(error.message, pattern);
        assert.ok(!error.message.includes(t.home), error.message);
        return true;
      },
      JSON.stringify(body),
    );
  }
});

Deno.test("POST /api/workflow/run takes name, scriptPath, title and description inside the owner's roots; another owner gets nothing", async () => {
  await using root = await tempDir("svc-root-");
  const dir = await project(root.path);
  await using d = await startDashboard({
    config: ConfigSchema.parse({ workspaces: { alice: [root.path] } }),
  });
  for (
    const ref of [{ name: "validate" }, { scriptPath: ".claude/workflows/validate-everything.js" }]
  ) {
    const started = await d.json("/api/workflow/run", {
      token: TOKENS.alice,
      body: {
        ...ref,
        args: { what: "x" },
        workdir: dir,
        title: "T",
        description: "D",
        fake_dispatch: true,
      },
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    await d.services.runs.wait(String(started.body.run_id), { owner: "alice" });
    const status = await d.json(`/api/workflow/${started.body.run_id}`, { token: TOKENS.alice });
    assert.deepEqual(status.body.result, RESULT);
    assert.deepEqual([status.body.title, status.body.description], ["T", "D"]);
    const list = await d.json("/api/workflow?limit=1", { token: TOKENS.alice });
    assert.equal((list.body.runs as Array<{ title?: string }>)[0]!.title, "T");
  }
  // Bob has no roots: he cannot name Alice's project, and his own scratch project holds no
  // such workflow.
  const named = await d.json("/api/workflow/run", {
    token: TOKENS.bob,
    body: { name: "validate", workdir: dir, fake_dispatch: true },
  });
  assert.equal(named.status, 403, JSON.stringify(named.body));
  for (
    const ref of [{ name: "validate" }, { scriptPath: ".claude/workflows/validate-everything.js" }]
  ) {
    const answer = await d.json("/api/workflow/run", {
      token: TOKENS.bob,
      body: { ...ref, fake_dispatch: true },
    });
    assert.equal(answer.status, 404, JSON.stringify(answer.body));
    const message = (answer.body.error as { message: string }).message;
    assert.ok(!message.includes(root.path) && !message.includes(d.home), message);
  }
  const absolute = await d.json("/api/workflow/run", {
    token: TOKENS.bob,
    body: { scriptPath: `${dir}/.claude/workflows/validate-everything.js`, fake_dispatch: true },
  });
  assert.equal(absolute.status, 400, JSON.stringify(absolute.body));
  assert.ok(!JSON.stringify(absolute.body).includes(root.path), JSON.stringify(absolute.body));
  assert.equal((await d.services.runs.list({ owner: "bob" })).length, 0);
});

Deno.test("svc_workflow over MCP takes name, scriptPath, title and description", async () => {
  await using root = await tempDir("svc-root-");
  const dir = await project(root.path);
  await using d = await startDashboard({
    port: true,
    config: ConfigSchema.parse({ workspaces: { alice: [root.path] } }),
  });
  await using mcp = await connectHttp(d.url, { token: TOKENS.alice });
  for (
    const ref of [{ name: "validate" }, { scriptPath: ".claude/workflows/validate-everything.js" }]
  ) {
    const handle = await mcp.ok("svc_workflow", {
      ...ref,
      args: { what: "x" },
      workdir: dir,
      title: "From MCP",
      description: "D",
      fake_dispatch: true,
    });
    const done = await untilDone(mcp, String(handle.handle));
    assert.equal(done.state, "succeeded", JSON.stringify(done));
    const status = await d.json(`/api/workflow/${handle.handle}`, { token: TOKENS.alice });
    assert.deepEqual(status.body.result, RESULT);
    assert.equal(status.body.title, "From MCP");
  }
  await using bob = await connectHttp(d.url, { token: TOKENS.bob });
  const refused = await bob.call("svc_workflow", { name: "validate", fake_dispatch: true });
  assert.match(errorText(refused), /no workflow 'validate'/);
});

Deno.test("svc workflow run takes --title and --description, and a saved workflow by its meta.name", async () => {
  await using home = await tempDir("svc-cli-");
  const dir = await project(home.path);
  const result = await runCli([
    "workflow",
    "run",
    "validate",
    "--fake-dispatch",
    "--args",
    '{"what":"x"}',
    "--title",
    "From the CLI",
    "--description",
    "D",
    "--json",
  ], { cwd: dir, env: { SVC_HOME: `${home.path}/svc` } });
  assert.equal(result.code, 0, result.stderr);
  const status = JSON.parse(result.stdout);
  assert.deepEqual(status.result, RESULT);
  assert.equal(status.title, "From the CLI");
  assert.equal(status.description, "D");
});

Deno.test("an A2A message names a published workflow by meta.name or svc.scriptPath, with a title; no other file of the project", async () => {
  await using root = await tempDir("svc-a2a-");
  const dir = await project(root.path);
  await write(`${dir}/lib/other.js`, `return "unpublished";`);
  await using a2a = await startA2a({ projectDir: dir });
  const client = await sdkClient(a2a.url, TOKENS.alice);
  // The card lists a saved workflow by the name it is called by: its meta.name.
  const skills = (await client.getAgentCard()).skills.map((skill) => skill.id);
  assert.ok(skills.includes("workflow:validate"), skills.join(", "));
  assert.ok(!skills.includes("workflow:validate-everything"), skills.join(", "));
  const send = async (metadata: Record<string, unknown>) =>
    asTask(
      await client.sendMessage(sendRequest(userMessage("run it", {
        metadata: { ...metadata, [ARGS_KEY]: { what: "x" }, [FAKE_KEY]: true },
      }))),
    );
  for (
    const ref of [
      { [WORKFLOW_KEY]: "validate" },
      { [SCRIPT_PATH_KEY]: ".claude/workflows/validate-everything.js" },
    ]
  ) {
    const task = await send({ ...ref, [TITLE_KEY]: "By a peer", [DESCRIPTION_KEY]: "D" });
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(task.status));
    const run = await a2a.services.runs.get(String(task.metadata?.["svc.run_id"]), {
      owner: "alice",
    });
    assert.deepEqual(run?.result, RESULT);
    assert.deepEqual([run?.title, run?.description], ["By a peer", "D"]);
  }
  for (const path of ["lib/other.js", `${dir}/lib/other.js`, "../outside.js"]) {
    const task = await send({ [SCRIPT_PATH_KEY]: path });
    assert.equal(task.status?.state, TaskState.TASK_STATE_REJECTED, path);
    const reason = String(task.status?.message?.parts[0]?.content?.value);
    assert.ok(!reason.includes(root.path), reason);
  }
  assert.equal((await a2a.services.runs.list({ owner: "alice" })).length, 2);
});

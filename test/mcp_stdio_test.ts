import assert from "node:assert/strict";
import { ROOT, runCli, runCommand, svcTaskCommand, tempDir } from "./helpers.ts";
import { eventually } from "./daemon_helpers.ts";
import {
  connectStdio,
  ERAS,
  errorText,
  exchangeFrames,
  INITIALIZE,
  untilDone,
} from "./mcp_helpers.ts";

for (const era of ERAS) {
  Deno.test(`svc mcp serves the tools over stdio (${era} era): a fake workflow, a cancel, a board card, bad arguments`, async () => {
    await using home = await tempDir("svc-mcp-");
    await using mcp = await connectStdio(home.path, { era, env: { SVC_FAKE_LATENCY_MS: "20" } });
    const { tools } = await mcp.client.listTools();
    assert.equal(tools.length, 6);
    const started = await mcp.ok("svc_workflow", {
      script: "log('from stdio'); return await agent('over stdio');",
      fake_dispatch: true,
    });
    const status = await untilDone(mcp, String(started.handle));
    assert.equal(status.state, "succeeded");
    assert.equal(status.result, "fake response to: over stdio");
    const slow = await mcp.ok("svc_workflow", {
      script: "await agent('one'); await agent('two'); return await agent('three');",
      fake_dispatch: true,
    });
    await mcp.ok("svc_task_cancel", { handle: String(slow.handle) });
    assert.equal((await untilDone(mcp, String(slow.handle))).state, "cancelled");
    const card = (await mcp.ok("svc_board_write", {
      action: "new",
      mode: "apply",
      title: "Written over stdio",
    })).card as { issue_id: string; owner: string };
    assert.equal(card.owner, "local");
    const chain = await mcp.ok("svc_workflow_legacy", {
      chain: { version: 1, steps: [{ id: "only", prompt: "Say {{input}}" }] },
      input: "hello",
      fake_dispatch: true,
    });
    assert.deepEqual((await untilDone(mcp, String(chain.handle))).result, {
      output: "fake response to: Say hello",
      steps: { only: "fake response to: Say hello" },
    });
    assert.match(
      errorText(await mcp.call("svc_workflow", { script: "return 1", budget_usd: -1 })),
      /budget_usd/,
    );
    assert.deepEqual(mcp.errors, [], "nothing but protocol frames on stdout");
    await mcp[Symbol.asyncDispose]();
    // The same ledger, read by the command line: the run and the card are there.
    const listed = await runCli(["board", "show", card.issue_id], { home: home.path });
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(JSON.parse(listed.stdout).title, "Written over stdio");
    const run = await runCli(["workflow", "status", String(started.handle), "--json"], {
      home: home.path,
    });
    assert.equal(JSON.parse(run.stdout).state, "succeeded");
  });
}

Deno.test("svc mcp writes nothing but protocol frames to standard output and exits when standard input closes", async () => {
  await using home = await tempDir("svc-mcp-");
  const task = await svcTaskCommand();
  const { INIT_CWD: _inherited, ...env } = Deno.env.toObject();
  const exchange = await exchangeFrames(task.command, [...task.args, "mcp"], {
    env: { ...env, SVC_HOME: home.path, NO_COLOR: "1" },
    frames: [
      INITIALIZE,
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} },
      {
        jsonrpc: "2.0",
        id: 3,
        method: "tools/call",
        params: { name: "svc_workflow", arguments: { script: "console.log('noise'); return 1" } },
      },
      { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "nope", arguments: {} } },
      { jsonrpc: "2.0", id: 5, method: "no/such/method", params: {} },
    ],
  });
  assert.equal(exchange.code, 0, exchange.stderr);
  // Every line of standard output is a protocol frame (JSON.parse would have thrown).
  for (const answer of exchange.answers) assert.equal(answer.jsonrpc, "2.0");
  // deno-lint-ignore no-explicit-any -- frames are checked field by field
  const byId = new Map<unknown, any>(exchange.answers.map((a) => [a.id, a]));
  assert.equal(byId.get(1).result.serverInfo.name, "svc");
  assert.equal(byId.get(2).result.tools.length, 6);
  assert.match(byId.get(3).result.structuredContent.handle, /^run_/);
  assert.ok(byId.get(4).error ?? byId.get(4).result?.isError, "an unknown tool is refused");
  assert.equal(byId.get(5).error.code, -32601);
  // The run went to a worker of its own: it ends before the test removes its home.
  const handle = String(byId.get(3).result.structuredContent.handle);
  await eventually(async () => {
    const run = await runCli(["workflow", "status", handle, "--json"], { home: home.path });
    return run.code === 0 && JSON.parse(run.stdout).state === "succeeded" ? true : undefined;
  }, { what: "the run of the worker to succeed" });
});

Deno.test("docs/MCP.md's client configuration starts svc mcp, from the package and from a checkout", async () => {
  const readme = await Deno.readTextFile(`${ROOT}/docs/MCP.md`);
  const block = /```json\n(\{\n {2}"mcpServers"[\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, "docs/MCP.md has an mcpServers block");
  const servers = JSON.parse(block).mcpServers;
  assert.deepEqual(servers.svc, { command: "svc", args: ["mcp"] });
  assert.equal(servers["svc-http"].url, "http://127.0.0.1:41521/mcp");
  // From a checkout: `npx` with these args; here the same Deno without npx.
  const args = /use `npx` with the args\s+`-y deno@[\d.]+ (task [^`]+)`/.exec(readme)?.[1];
  assert.ok(args, "docs/MCP.md names the checkout's args");
  await using home = await tempDir("svc-mcp-");
  const { INIT_CWD: _inherited, ...env } = Deno.env.toObject();
  const result = await runCommand(
    Deno.execPath(),
    args.replace("/path/to/svc", ROOT).split(" "),
    {
      env: { ...env, SVC_HOME: home.path },
      cwd: home.path,
      clearEnv: true,
      input: `${JSON.stringify(INITIALIZE)}\n`,
    },
  );
  assert.equal(result.code, 0, result.stderr);
  assert.equal(JSON.parse(result.stdout.trim()).result.serverInfo.name, "svc");
});

import assert from "node:assert/strict";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { connectHttp, ERAS, errorText, INITIALIZE, untilDone } from "./mcp_helpers.ts";

const SCRIPT = "phase('one'); log('starting'); const a = await agent('alpha'); " +
  "const [b, c] = await parallel([() => agent('beta'), () => agent('gamma')]); return {a, b, c};";

Deno.test("the /mcp endpoint lists svc's tools with the HTTP routes' input schemas, output schemas and annotations", async () => {
  await using d = await startDashboard({ port: true });
  await using mcp = await connectHttp(d.url, { token: TOKENS.alice });
  const { tools } = await mcp.client.listTools();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  assert.deepEqual([...byName.keys()].sort(), [
    "svc_board_write",
    "svc_dispatch",
    "svc_task_cancel",
    "svc_task_status",
    "svc_workflow",
    "svc_workflow_legacy",
  ]);
  const document = (await d.json("/api/openapi.json", { token: TOKENS.alice })).body as {
    paths: Record<string, Record<string, { requestBody?: unknown }>>;
    components: { schemas: Record<string, unknown> };
  };
  const bodyProperties = (path: string) => {
    const body = document.paths[path]?.post?.requestBody as {
      content: { "application/json": { schema: { properties?: object; $ref?: string } } };
    };
    let schema = body.content["application/json"].schema;
    if (schema.$ref) {
      schema = document.components.schemas[schema.$ref.split("/").pop()!] as typeof schema;
    }
    return Object.keys(schema.properties ?? {}).sort();
  };
  // The tools take what the HTTP routes take (one schema per request shape), except the two
  // keys a tool client must not send: `owner_user_id` (ignored over HTTP) and `board_dir`
  // (always refused).
  const unadvertised = new Set(["owner_user_id", "board_dir"]);
  const pairs = [
    ["svc_workflow", "/api/workflow/run"],
    ["svc_dispatch", "/api/dispatch"],
    ["svc_board_write", "/api/board/write"],
    ["svc_workflow_legacy", "/api/workflow/legacy"],
  ] as const;
  for (const [tool, path] of pairs) {
    const schema = byName.get(tool)!.inputSchema;
    assert.deepEqual(
      Object.keys(schema.properties ?? {}).sort(),
      bodyProperties(path).filter((key) => !unadvertised.has(key)),
      tool,
    );
    for (const key of unadvertised) assert.equal(schema.properties?.[key], undefined, tool);
  }
  const workflow = byName.get("svc_workflow")!;
  // As in Claude Code's Workflow tool, nothing is required: `script`, `name` or `scriptPath`.
  assert.equal(workflow.inputSchema.required, undefined);
  for (
    const name of [
      "script",
      "name",
      "scriptPath",
      "title",
      "description",
      "args",
      "fake_dispatch",
      "timeout",
      "budget_usd",
      "resume_from",
    ]
  ) {
    assert.ok(workflow.inputSchema.properties?.[name], name);
  }
  for (const tool of tools) {
    assert.ok(tool.title, `${tool.name} has a title`);
    assert.ok(tool.description, `${tool.name} has a description`);
    assert.equal(tool.outputSchema?.type, "object", `${tool.name} has an output schema`);
    assert.ok(tool.annotations, `${tool.name} has annotations`);
  }
  assert.equal(byName.get("svc_task_status")!.annotations?.readOnlyHint, true);
  assert.equal(byName.get("svc_task_cancel")!.annotations?.destructiveHint, true);
  assert.equal(byName.get("svc_task_cancel")!.annotations?.idempotentHint, true);
  assert.equal(byName.get("svc_workflow")!.annotations?.readOnlyHint, false);
});

for (const era of ERAS) {
  Deno.test(`a fake workflow started over /mcp (${era} era) runs to its end, followed with svc_task_status`, async () => {
    await using d = await startDashboard({ port: true, fakeLatencyMs: 30 });
    await using mcp = await connectHttp(d.url, { token: TOKENS.alice, era });
    const started = await mcp.ok("svc_workflow", { script: SCRIPT, fake_dispatch: true });
    assert.equal(started.kind, "run");
    assert.match(String(started.handle), /^run_/);
    const handle = String(started.handle);
    // Waiting with a progress token brings progress notifications, one per finished call.
    const progress: number[] = [];
    const logs: string[] = [];
    mcp.client.setNotificationHandler("notifications/message", (note) => {
      logs.push(String(note.params.data));
    });
    let status = (await mcp.client.callTool(
      { name: "svc_task_status", arguments: { handle, wait_seconds: 30 } },
      { onprogress: (p) => void progress.push(p.progress) },
    )).structuredContent as Record<string, unknown>;
    if (status.done !== true) status = await untilDone(mcp, handle);
    assert.equal(status.state, "succeeded");
    assert.deepEqual(status.result, {
      a: "fake response to: alpha",
      b: "fake response to: beta",
      c: "fake response to: gamma",
    });
    assert.deepEqual(
      (status.narration as Array<{ text: string }>).map((n) => n.text),
      ["one", "starting"],
    );
    const journal = status.journal as Record<string, number>;
    assert.deepEqual([journal.calls, journal.live, journal.replayed], [3, 3, 0]);
    assert.ok(progress.length > 0, "progress notifications arrived");
    assert.deepEqual(progress, [...progress].sort((x, y) => x - y), "progress only grows");
    // The 2025 era sends log messages unasked (logging/setLevel filters them); the 2026 era
    // only when a request names a log level.
    if (era === "legacy") {
      assert.ok(logs.includes("run succeeded"), `log messages: ${JSON.stringify(logs)}`);
    }
    // It is Alice's run, as the dashboard shows it; Bob's token does not find it.
    const shown = await d.json(`/api/workflow/${handle}`, { token: TOKENS.alice });
    assert.equal(shown.body.owner, "alice");
    await using bob = await connectHttp(d.url, { token: TOKENS.bob, era });
    assert.match(errorText(await bob.call("svc_task_status", { handle })), /no such run/);
    assert.deepEqual(mcp.errors, []);
  });
}

Deno.test("svc_task_cancel cancels a run and a dispatch task over /mcp, and svc_dispatch runs a task", async () => {
  await using d = await startDashboard({ port: true, fakeLatencyMs: 20_000 });
  await using mcp = await connectHttp(d.url, { token: TOKENS.alice });
  const run = await mcp.ok("svc_workflow", {
    script: "return await agent('slow');",
    fake_dispatch: true,
  });
  const task = await mcp.ok("svc_dispatch", { prompt: "slow too", fake_dispatch: true });
  assert.equal(task.kind, "task");
  for (const handle of [String(run.handle), String(task.handle)]) {
    const asked = await mcp.ok("svc_task_cancel", { handle });
    assert.equal(asked.handle, handle);
    const ended = await untilDone(mcp, handle);
    assert.equal(ended.state, "cancelled", handle);
    // Idempotent: cancelling again changes nothing.
    assert.equal((await mcp.ok("svc_task_cancel", { handle })).state, "cancelled");
  }
});

Deno.test("svc_dispatch answers a task whose status carries the provider's answer", async () => {
  await using d = await startDashboard({ port: true });
  await using mcp = await connectHttp(d.url, { token: TOKENS.alice });
  const task = await mcp.ok("svc_dispatch", { prompt: "say hi", fake_dispatch: true });
  const done = await untilDone(mcp, String(task.handle));
  assert.equal(done.state, "succeeded");
  assert.equal(done.result, "fake response to: say hi");
  assert.equal(done.provider, "fake");
});

Deno.test("svc_board_write over /mcp writes through the board service: a dry run, then a card", async () => {
  await using d = await startDashboard({ port: true });
  await using mcp = await connectHttp(d.url, { token: TOKENS.alice });
  const dry = await mcp.ok("svc_board_write", { action: "new", title: "From a tool" });
  assert.equal(dry.applied, false);
  assert.deepEqual((await d.json("/api/board", { token: TOKENS.alice })).body.cards, []);
  const applied = await mcp.ok("svc_board_write", {
    action: "new",
    mode: "apply",
    title: "From a tool",
    labels: ["mcp"],
  });
  const card = applied.card as { issue_id: string; owner: string; title: string };
  assert.deepEqual([card.owner, card.title], ["alice", "From a tool"]);
  const shown = await d.json(`/api/board/${card.issue_id}`, { token: TOKENS.alice });
  assert.equal(shown.status, 200);
  assert.deepEqual(shown.body.labels, ["mcp"]);
});

Deno.test("bad tool arguments over /mcp come back as tool errors that name the field", async () => {
  await using d = await startDashboard({ port: true });
  await using mcp = await connectHttp(d.url, { token: TOKENS.alice });
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ["svc_workflow", {}, /script/],
    ["svc_workflow", { script: 5 }, /script/],
    ["svc_workflow", { script: "return 1", timeout: 0 }, /timeout/],
    ["svc_workflow", { script: "return 1", sandbox_default: "root" }, /sandbox_default/],
    ["svc_workflow", { script: "return 1", surprise: true }, /surprise/],
    ["svc_workflow", { script: "return 1", resume_from: "../etc" }, /resume_from/],
    ["svc_workflow", { script: "return 1", owner_user_id: "bob" }, /owner_user_id/],
    ["svc_task_status", { handle: "../../etc/passwd" }, /handle/],
    ["svc_task_status", { handle: "run_0abc", wait_seconds: 3600 }, /wait_seconds/],
    ["svc_task_cancel", { handle: "run_doesnotexist" }, /run_doesnotexist/],
    ["svc_dispatch", { prompt: "" }, /prompt/],
    ["svc_board_write", { action: "new", title: "x", board_dir: "/tmp" }, /board_dir/],
    ["svc_board_write", { action: "explode" }, /action/],
    ["svc_board_write", { action: "new", mode: "apply" }, /title/],
  ];
  for (const [tool, args, field] of cases) {
    const text = errorText(await mcp.call(tool, args));
    assert.match(text, field, `${tool} ${JSON.stringify(args)}: ${text}`);
    assert.doesNotMatch(text, /\n\s+at |\.ts:\d+/, "no stack trace");
  }
  // A script the engine refuses is a tool error too, with the engine's message.
  const refused = errorText(await mcp.call("svc_workflow", { script: "return (" }));
  assert.match(refused, /Cannot|SyntaxError|Unexpected/);
  // The server is still serving.
  assert.equal((await mcp.client.listTools()).tools.length, 6);
});

const CHAIN = `version: 1
name: plan-and-apply
steps:
  - id: plan
    prompt: "Plan a fix for: {{input}}"
  - id: apply
    prompt: "Apply this plan: {{steps.plan.output}}"
`;

Deno.test("svc_workflow_legacy runs a version-1 chain with its placeholders, with the deprecation notice and the equivalent script", async () => {
  await using d = await startDashboard({ port: true });
  await using mcp = await connectHttp(d.url, { token: TOKENS.alice });
  const started = await mcp.ok("svc_workflow_legacy", {
    chain: CHAIN,
    input: "the login form",
    fake_dispatch: true,
  });
  assert.match(String(started.deprecation), /deprecated/i);
  assert.match(String(started.deprecation), /svc_workflow|workflow run/);
  assert.match(String(started.script), /await step\(|agent\(/);
  const done = await untilDone(mcp, String(started.handle));
  assert.equal(done.state, "succeeded");
  const plan = "fake response to: Plan a fix for: the login form";
  const apply = `fake response to: Apply this plan: ${plan}`;
  assert.deepEqual(done.result, { output: apply, steps: { plan, apply } });
  // The equivalent script, run by svc_workflow, returns the same.
  const again = await mcp.ok("svc_workflow", {
    script: String(started.script),
    args: { input: "the login form" },
    fake_dispatch: true,
  });
  assert.deepEqual((await untilDone(mcp, String(again.handle))).result, done.result);
  // A bad chain: a tool error naming the step and the field.
  const bad = errorText(
    await mcp.call("svc_workflow_legacy", {
      chain: CHAIN.replace("{{steps.plan.output}}", "{{steps.later.output}}"),
    }),
  );
  assert.match(bad, /step 'apply' \(steps\[1\]\): 'prompt' names \{\{steps\.later\.output\}\}/);
  assert.match(bad, /invalid_request/);
});

Deno.test("the /mcp endpoint refuses a missing or wrong token, and a Host that is not the server's", async () => {
  await using d = await startDashboard({ port: true });
  const initialize = JSON.stringify(INITIALIZE);
  const post = (headers: Record<string, string>) =>
    d.request("/mcp", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers,
      },
      body: initialize,
    });
  const refused: Array<Record<string, string>> = [{}, { authorization: "Bearer not-a-token-0123" }];
  for (const headers of refused) {
    const response = await post(headers);
    assert.equal(response.status, 401);
    assert.match(response.headers.get("www-authenticate") ?? "", /^Bearer/);
    const body = await response.json();
    assert.equal(body.error.code, "unauthenticated");
  }
  await assert.rejects(connectHttp(d.url, {}));
  await assert.rejects(connectHttp(d.url, { token: "wrong-token-0123456789abcdef" }));
  // DNS rebinding: the right token, but a page of another site reached the loopback address.
  // (fetch() cannot set Host, so this request is written by hand.)
  const port = Number(new URL(d.url).port);
  for (const host of ["attacker.example", `attacker.example:${port}`, "127.0.0.1.nip.io"]) {
    const raw = await rawPost(port, host, TOKENS.alice, initialize);
    assert.match(raw, /^HTTP\/1\.1 403 /, host);
    assert.match(raw, /"code":"forbidden"/);
  }
  assert.match(
    await rawPost(port, `localhost:${port}`, TOKENS.alice, initialize),
    /^HTTP\/1\.1 200 /,
  );
  const foreign = await post({
    authorization: `Bearer ${TOKENS.alice}`,
    origin: "https://attacker.example",
  });
  assert.equal(foreign.status, 403);
  await foreign.body?.cancel();
  const fine = await post({ authorization: `Bearer ${TOKENS.alice}` });
  assert.equal(fine.status, 200);
  await fine.body?.cancel();
});

/** A POST written on a socket by hand, with any Host; answers the response's head and start. */
async function rawPost(port: number, host: string, token: string, body: string): Promise<string> {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const bytes = new TextEncoder().encode(body);
    const head = [
      "POST /mcp HTTP/1.1",
      `Host: ${host}`,
      `Authorization: Bearer ${token}`,
      "Content-Type: application/json",
      "Accept: application/json, text/event-stream",
      `Content-Length: ${bytes.length}`,
      "Connection: close",
      "",
      "",
    ].join("\r\n");
    await connection.write(new TextEncoder().encode(head));
    await connection.write(bytes);
    const buffer = new Uint8Array(4096);
    let text = "";
    while (!text.includes("\r\n\r\n{") && !/event: message\ndata: /.test(text)) {
      const n = await connection.read(buffer);
      if (n === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
    return text;
  } finally {
    connection.close();
  }
}

Deno.test("a 2025-era session belongs to the caller that opened it", async () => {
  await using d = await startDashboard();
  const post = (token: string, body: object, headers: Record<string, string> = {}) =>
    d.request("/mcp", {
      method: "POST",
      token,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers,
      },
      body: JSON.stringify(body),
    });
  const opened = await post(TOKENS.alice, INITIALIZE);
  const session = opened.headers.get("mcp-session-id");
  await opened.body?.cancel();
  assert.ok(session, "a session id");
  const list = (token: string) =>
    post(token, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, {
      "mcp-session-id": session,
      "mcp-protocol-version": "2025-11-25",
    });
  const bob = await list(TOKENS.bob);
  assert.equal(bob.status, 404);
  await bob.body?.cancel();
  const alice = await list(TOKENS.alice);
  assert.equal(alice.status, 200);
  await alice.body?.cancel();
});

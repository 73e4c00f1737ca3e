/**
 * What the A2A server does with what peers send: named workflows through metadata, refusals,
 * hostile JSON-RPC input, the collaboration record (listed by the dashboard), and a streaming
 * client that goes away before its task ends.
 */
import assert from "node:assert/strict";
import { TaskState } from "@a2a-js/sdk";
import { serveDashboard } from "../src/http/mod.ts";
import { A2A_SEQ_PREFIX, newId } from "../src/ledger/mod.ts";
import { ARGS_KEY, FAKE_KEY, WORKFLOW_KEY } from "../src/a2a/mod.ts";
import {
  answerText,
  asTask,
  fetchWithToken,
  finalTask,
  sdkClient,
  sendRequest,
  startA2a,
  TOKENS,
  TWO_OWNERS,
  userMessage,
} from "./a2a_helpers.ts";
import { tempDir } from "./helpers.ts";

const SUMMARISE =
  `export const meta = { name: "summarise", description: "Summarises items one agent call each." };
const parts = await parallel(args.items.map((item) => () => agent("summarise " + item)));
return { topic: args.topic, count: parts.filter(Boolean).length };
`;

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(path.replace(/\/[^/]+$/, ""), { recursive: true });
  await Deno.writeTextFile(path, text);
}

/** Posts a raw JSON-RPC body (1.0 unless `legacy`) as alice. */
async function rpc(
  url: string,
  body: string,
  options: { legacy?: boolean } = {},
): Promise<{ status: number; text: string }> {
  const response = await fetchWithToken(TOKENS.alice)(`${url}/a2a`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(options.legacy ? {} : { "A2A-Version": "1.0" }),
    },
    body,
  });
  return { status: response.status, text: await response.text() };
}

Deno.test("the open cards name no saved workflow; the authenticated extended card lists each as a skill, through the SDK client of both protocol versions", async () => {
  await using project = await tempDir("svc-a2a-project-");
  await write(`${project.path}/workflows/summarise.js`, SUMMARISE);
  await using a2a = await startA2a({ projectDir: project.path });
  for (
    const [path, headers] of [
      ["/.well-known/agent-card.json", { "A2A-Version": "1.0" }],
      ["/.well-known/agent-card.json", {}],
      ["/.well-known/agent.json", {}],
    ] as const
  ) {
    const text = await (await fetch(`${a2a.url}${path}`, { headers })).text();
    assert.ok(!text.includes("summarise"), `${path} names a saved workflow: ${text}`);
    const card = JSON.parse(text);
    assert.deepEqual(card.skills.map((s: { id: string }) => s.id), ["dispatch", "workflow"]);
  }
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const extended = await client.getAgentCard();
  const skill = extended.skills.find((s) => s.id === "workflow:summarise");
  assert.equal(skill?.description, "Summarises items one agent call each.");
  const legacy = await sdkClient(a2a.url, TOKENS.alice, {
    legacyCompat: true,
    cardPath: "/.well-known/agent.json",
  });
  assert.equal(legacy.protocolVersion, "0.3");
  const legacyCard = await legacy.getAgentCard();
  assert.ok(legacyCard.skills.some((s) => s.id === "workflow:summarise"));
  // Without a token the extended card is refused like every JSON-RPC call.
  const anonymous = await fetch(`${a2a.url}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", "A2A-Version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetExtendedAgentCard", params: {} }),
  });
  assert.equal(anonymous.status, 401);
  assert.ok(!(await anonymous.text()).includes("summarise"));
});

Deno.test("a message whose metadata names a workflow runs it with svc.args", async () => {
  await using project = await tempDir("svc-a2a-project-");
  await write(`${project.path}/workflows/summarise.js`, SUMMARISE);
  await using a2a = await startA2a({ projectDir: project.path });
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const task = asTask(
    await client.sendMessage(sendRequest(userMessage("run it", {
      metadata: {
        [WORKFLOW_KEY]: "summarise",
        [ARGS_KEY]: { topic: "t", items: ["a", "b"] },
        [FAKE_KEY]: true,
      },
    }))),
  );
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  const content = task.artifacts[0]?.parts[0]?.content;
  assert.deepEqual(content, { $case: "data", value: { topic: "t", count: 2 } });
  const runId = task.metadata?.["svc.run_id"];
  const run = await a2a.services.runs.get(runId, { owner: "alice" });
  assert.equal(run?.state, "succeeded");
  assert.deepEqual(run?.started_by, { via: "a2a", text: "an agent-to-agent (A2A) client" });
});

Deno.test("a message naming an unknown workflow, or a file part, ends rejected with the reason, which names no host path", async () => {
  await using a2a = await startA2a();
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const unknown = asTask(
    await client.sendMessage(
      sendRequest(userMessage("x", { metadata: { [WORKFLOW_KEY]: "nowhere" } })),
    ),
  );
  assert.equal(unknown.status?.state, TaskState.TASK_STATE_REJECTED);
  const reason = unknown.status?.message?.parts[0]?.content;
  assert.equal(reason?.$case, "text");
  assert.match(String(reason?.value), /Cannot find workflow 'nowhere'/);
  // The folders searched are named by role: a peer learns no path of the host.
  assert.match(
    String(reason?.value),
    /in the project's \.claude\/workflows\/ folder, .*svc's saved workflows/,
  );
  assert.ok(!String(reason?.value).includes(a2a.home), String(reason?.value));

  const message = userMessage("see file");
  message.parts.push({
    content: { $case: "url", value: "https://example.com/x" },
    metadata: undefined,
    filename: "x",
    mediaType: "text/plain",
  });
  const file = asTask(await client.sendMessage(sendRequest(message)));
  assert.equal(file.status?.state, TaskState.TASK_STATE_REJECTED);
});

Deno.test("bad JSON-RPC input answers a JSON-RPC error, never a 5xx or a stack", async () => {
  await using a2a = await startA2a();
  const send = (params: unknown) =>
    JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params });
  const cases: { body: string; code: number; status?: number; legacy?: boolean }[] = [
    { body: "{not json", code: -32700 },
    { body: "[1,2]", code: -32600 },
    {
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "NoSuchMethod", params: {} }),
      code: -32601,
    },
    {
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "no/such", params: {} }),
      code: -32601,
      legacy: true,
    },
    { body: send({ message: { messageId: "m", role: "ROLE_USER", parts: "x" } }), code: -32602 },
    { body: send({ message: { messageId: 5, role: "ROLE_USER", parts: [] } }), code: -32602 },
    {
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "GetTask", params: { id: 42 } }),
      code: -32602,
    },
    {
      body: send({
        message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "x".repeat(300 * 1024) }] },
      }),
      code: -32602,
    },
    {
      body: send({
        message: {
          messageId: "m",
          role: "ROLE_USER",
          parts: Array.from({ length: 33 }, () => ({ text: "x" })),
        },
      }),
      code: -32602,
    },
    { body: `{"a":${"[".repeat(100)}${"]".repeat(100)}}`, code: -32600 },
    {
      body: send({
        message: { messageId: "m\u001b[31m", role: "ROLE_USER", parts: [{ text: "x" }] },
      }),
      code: -32602,
    },
    {
      body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tasks/get", params: { id: "a\nb" } }),
      code: -32602,
      legacy: true,
    },
    {
      body: send({ message: { messageId: "m", parts: [{ text: "y".repeat(1100 * 1024) }] } }),
      code: -32600,
      status: 413,
    },
  ];
  for (const c of cases) {
    const answer = await rpc(a2a.url, c.body, { legacy: c.legacy ?? false });
    assert.equal(
      answer.status,
      c.status ?? 200,
      `${c.body.slice(0, 80)}: ${answer.text.slice(0, 300)}`,
    );
    const parsed = JSON.parse(answer.text);
    assert.equal(parsed.jsonrpc, "2.0");
    assert.equal(
      parsed.error?.code,
      c.code,
      `${c.body.slice(0, 80)}: ${answer.text.slice(0, 300)}`,
    );
    assert.doesNotMatch(answer.text, /\bat .*\.(ts|js):\d+/, "no stack trace");
  }
  // The server still serves after all that.
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const task = asTask(await client.sendMessage(sendRequest(userMessage("still fine"))));
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
});

Deno.test("every exchange is recorded as an inbound collaboration, listed by the dashboard for its owner only", async () => {
  await using a2a = await startA2a();
  await using dashboard = await serveDashboard(a2a.services, {
    hostname: "127.0.0.1",
    port: 0,
    auth: TWO_OWNERS,
  });
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const task = asTask(await client.sendMessage(sendRequest(userMessage("record me"))));
  const svcTaskId = task.metadata?.["svc.task_id"];
  const list = async (token: string) =>
    await (await fetch(`${dashboard.url}/api/collaborations`, {
      headers: { authorization: `Bearer ${token}` },
    })).json();
  const mine = await list(TOKENS.alice);
  assert.equal(mine.collaborations.length, 1);
  const record = mine.collaborations[0];
  assert.equal(record.direction, "inbound");
  assert.equal(record.state, "completed");
  assert.equal(record.skill, "dispatch");
  assert.equal(record.task_id, svcTaskId);
  assert.equal(record.collaboration_id, task.metadata?.["svc.collaboration_id"]);
  assert.equal(record.peer, `a2a:${task.contextId}`);
  assert.equal((await list(TOKENS.bob)).collaborations.length, 0);
});

Deno.test("a streaming client that goes away leaves the task to reach its final state", async () => {
  await using a2a = await startA2a({ fakeLatencyMs: 400 });
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const controller = new AbortController();
  let taskId = "";
  try {
    for await (
      const event of client.sendMessageStream(sendRequest(userMessage("leave early")), {
        signal: controller.signal,
      })
    ) {
      if (event.payload?.$case === "task") {
        taskId = event.payload.value.id;
        controller.abort();
      }
    }
  } catch {
    // The abort ends the client's stream.
  }
  assert.notEqual(taskId, "");
  const done = await finalTask(client, taskId);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.ok(answerText(done) !== undefined);
});

Deno.test("a contextId continues one svc session across messages", async () => {
  await using a2a = await startA2a();
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const first = asTask(await client.sendMessage(sendRequest(userMessage("one"))));
  const second = asTask(
    await client.sendMessage(sendRequest(userMessage("two", { contextId: first.contextId }))),
  );
  assert.equal(second.contextId, first.contextId);
  const a = await a2a.services.tasks.get(first.metadata?.["svc.task_id"], { owner: "alice" });
  const b = await a2a.services.tasks.get(second.metadata?.["svc.task_id"], { owner: "alice" });
  assert.equal(a?.options.session, `a2a-${first.contextId}`);
  assert.equal(b?.options.session, a?.options.session);
});

Deno.test("a task whose svc work was interrupted by a dead host reads as failed, not working forever", async () => {
  await using a2a = await startA2a();
  const alice = { owner: "alice" };
  const svcTask = await a2a.services.tasks.enqueue({ prompt: "orphan" }, alice);
  assert.ok(
    await a2a.services.ledger.saveTask(
      { ...svcTask, state: "interrupted", ended_at: new Date().toISOString() },
      { eventSeq: 1, expect: "queued" },
    ),
  );
  // The A2A task as the dead host left it: working, naming its svc task.
  const id = crypto.randomUUID();
  await a2a.services.ledger.saveA2aTask({
    task_id: id,
    owner: "alice",
    seq: newId(A2A_SEQ_PREFIX),
    context_id: "ctx",
    state: "TASK_STATE_WORKING",
    created_at: new Date().toISOString(),
    updated_at: new Date().toISOString(),
    task: {
      id,
      contextId: "ctx",
      status: { state: "TASK_STATE_WORKING" },
      metadata: { "svc.task_id": svcTask.task_id },
    },
  });
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const task = await client.getTask({ tenant: "", id, historyLength: undefined });
  assert.equal(task.status?.state, TaskState.TASK_STATE_FAILED);
  const stored = await a2a.services.ledger.getA2aTask("alice", id);
  assert.equal(stored?.state, "TASK_STATE_FAILED");
});

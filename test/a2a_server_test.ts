/**
 * The A2A server over real HTTP on 127.0.0.1, driven by the protocol's own clients: the 1.x SDK
 * client (card, send, get, list, stream, cancel, resubscribe), the same client with its 0.3
 * compatibility on, and the 0.3.x SDK as an older peer.
 */
import assert from "node:assert/strict";
import { TaskState } from "@a2a-js/sdk";
import {
  ClientFactory as ClientFactoryV03,
  ClientFactoryOptions as ClientFactoryOptionsV03,
  DefaultAgentCardResolver as DefaultAgentCardResolverV03,
  JsonRpcTransportFactory as JsonRpcTransportFactoryV03,
} from "@a2a-js/sdk-v03/client";
import { VERSION } from "../src/version.ts";
import { ConfigSchema } from "../src/config/mod.ts";
import { eventually } from "./daemon_helpers.ts";
import { USAGE_KEY } from "../src/a2a/mod.ts";
import {
  answerText,
  asTask,
  fetchWithToken,
  finalTask,
  sdkClient,
  sendRequest,
  startA2a,
  TOKENS,
  userMessage,
} from "./a2a_helpers.ts";

Deno.test("the A2A server answers its health and both agent cards without a token", async () => {
  await using a2a = await startA2a();
  const health = await fetch(`${a2a.url}/health`);
  assert.deepEqual(await health.json(), { status: "ok", version: VERSION });

  const card = await (await fetch(`${a2a.url}/.well-known/agent-card.json`, {
    headers: { "A2A-Version": "1.0" },
  })).json();
  assert.deepEqual(card.name, "svc");
  assert.deepEqual(card.version, VERSION);
  assert.deepEqual(card.capabilities.streaming, true);
  assert.deepEqual(card.supportedInterfaces[0], {
    url: `${a2a.url}/a2a`,
    protocolBinding: "JSONRPC",
    protocolVersion: "1.0",
  });
  assert.deepEqual(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme, "bearer");
  assert.deepEqual(card.skills[0].id, "dispatch");

  const legacy = await (await fetch(`${a2a.url}/.well-known/agent.json`)).json();
  assert.deepEqual(legacy.url, `${a2a.url}/a2a`);
  assert.deepEqual(legacy.protocolVersion, "0.3.0");
  assert.deepEqual(legacy.preferredTransport, "JSONRPC");
  assert.deepEqual(legacy.securitySchemes.bearer, {
    type: "http",
    scheme: "bearer",
    description: "A token of the dashboard's",
  });
  const unversioned = await (await fetch(`${a2a.url}/.well-known/agent-card.json`)).json();
  assert.deepEqual(unversioned.protocolVersion, "0.3.0");
});

Deno.test("the 1.x client sends a message and gets the completed task with its answer and usage", async () => {
  await using a2a = await startA2a({ fakeCostUsd: 0.25 });
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const task = asTask(await client.sendMessage(sendRequest(userMessage("say hello"))));
  assert.deepEqual(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.ok(answerText(task) !== undefined);
  const usage = task.metadata?.[USAGE_KEY];
  assert.deepEqual(usage.cost_usd, 0.25);
  assert.ok(usage.input_tokens > 0);

  const again = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });
  assert.deepEqual(again.status?.state, TaskState.TASK_STATE_COMPLETED);
  const listed = await client.listTasks({
    tenant: "",
    contextId: "",
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: 10,
    pageToken: "",
    historyLength: undefined,
    statusTimestampAfter: undefined,
    includeArtifacts: undefined,
  });
  assert.deepEqual(listed.tasks.map((t) => t.id), [task.id]);
});

Deno.test("the 1.x client streams a message to its final state and resubscribes to a running task", async () => {
  await using a2a = await startA2a({ fakeLatencyMs: 300 });
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const states: TaskState[] = [];
  let taskId = "";
  for await (const event of client.sendMessageStream(sendRequest(userMessage("stream me")))) {
    if (event.payload?.$case === "task") taskId = event.payload.value.id;
    if (event.payload?.$case === "statusUpdate") states.push(event.payload.value.status!.state);
  }
  assert.deepEqual(states.at(-1), TaskState.TASK_STATE_COMPLETED);
  assert.ok(states.includes(TaskState.TASK_STATE_WORKING));

  const started = asTask(
    await client.sendMessage(sendRequest(userMessage("slow"), { returnImmediately: true })),
  );
  const seen: TaskState[] = [];
  for await (const event of client.resubscribeTask({ tenant: "", id: started.id })) {
    if (event.payload?.$case === "statusUpdate") seen.push(event.payload.value.status!.state);
  }
  assert.deepEqual(seen.at(-1), TaskState.TASK_STATE_COMPLETED);
  assert.ok(taskId !== "");
});

Deno.test("a cancel through the 1.x client stops the svc task behind the A2A task", async () => {
  await using a2a = await startA2a({ fakeLatencyMs: 30_000 });
  const client = await sdkClient(a2a.url, TOKENS.alice);
  const started = asTask(
    await client.sendMessage(sendRequest(userMessage("long"), { returnImmediately: true })),
  );
  let svcTaskId: string | undefined;
  for (let i = 0; i < 200 && svcTaskId === undefined; i++) {
    const t = await client.getTask({ tenant: "", id: started.id, historyLength: undefined });
    svcTaskId = t.metadata?.["svc.task_id"];
    if (svcTaskId === undefined) await new Promise((r) => setTimeout(r, 25));
  }
  assert.ok(svcTaskId !== undefined);
  const cancelled = await client.cancelTask({ tenant: "", id: started.id, metadata: undefined });
  assert.deepEqual(cancelled.status?.state, TaskState.TASK_STATE_CANCELED);
  const svcTask = await a2a.services.tasks.get(svcTaskId, { owner: "alice" });
  assert.deepEqual(svcTask?.state, "cancelled");
});

Deno.test("the 1.x client with its 0.3 compatibility talks 0.3 to the server's 0.3 card", async () => {
  await using a2a = await startA2a();
  const client = await sdkClient(a2a.url, TOKENS.alice, {
    legacyCompat: true,
    cardPath: "/.well-known/agent.json",
  });
  assert.deepEqual(client.protocolVersion, "0.3");
  const task = asTask(await client.sendMessage(sendRequest(userMessage("hello from 0.3"))));
  assert.deepEqual(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  const again = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });
  assert.deepEqual(again.id, task.id);
  const states: TaskState[] = [];
  for await (const event of client.sendMessageStream(sendRequest(userMessage("stream 0.3")))) {
    if (event.payload?.$case === "statusUpdate") states.push(event.payload.value.status!.state);
  }
  assert.deepEqual(states.at(-1), TaskState.TASK_STATE_COMPLETED);
});

/** A client of the 0.3.x SDK line (an older peer), sending `token`. */
async function v03Client(url: string, token: string) {
  const fetchImpl = fetchWithToken(token);
  const factory = new ClientFactoryV03(
    ClientFactoryOptionsV03.createFrom(ClientFactoryOptionsV03.default, {
      transports: [new JsonRpcTransportFactoryV03({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolverV03({ fetchImpl }),
    }),
  );
  return await factory.createFromUrl(url);
}

function v03Message(text: string) {
  return {
    kind: "message" as const,
    messageId: crypto.randomUUID(),
    role: "user" as const,
    parts: [{ kind: "text" as const, text }],
  };
}

Deno.test("the 0.3.x SDK as an older peer sends, gets and streams", async () => {
  await using a2a = await startA2a({ fakeLatencyMs: 200 });
  const client = await v03Client(a2a.url, TOKENS.alice);
  const result = await client.sendMessage({ message: v03Message("hello from an old peer") });
  assert.equal(result.kind, "task");
  if (result.kind !== "task") return;
  assert.equal(result.status.state, "completed");
  const got = await client.getTask({ id: result.id });
  assert.equal(got.status.state, "completed");

  const states: string[] = [];
  for await (const event of client.sendMessageStream({ message: v03Message("stream, old peer") })) {
    if (event.kind === "status-update") states.push(event.status.state);
  }
  assert.equal(states.at(-1), "completed");
});

Deno.test("the 0.3.x SDK as an older peer cancels a running task and resubscribes", async () => {
  await using a2a = await startA2a({ fakeLatencyMs: 30_000 });
  const client = await v03Client(a2a.url, TOKENS.alice);
  // A cancel that meets the task's claim on the host is a race: several rounds meet it.
  for (let round = 0; round < 8; round++) {
    const started = await client.sendMessage({
      message: v03Message("long, old peer"),
      configuration: { blocking: false },
    });
    assert.equal(started.kind, "task");
    if (started.kind !== "task") return;
    const stream = client.resubscribeTask({ id: started.id })[Symbol.asyncIterator]();
    // The first event is the task as it is: the subscription is in place before the cancel.
    const first = await stream.next();
    assert.equal(first.done, false);
    const watching = (async () => {
      const states: string[] = [];
      for (let next = await stream.next(); !next.done; next = await stream.next()) {
        if (next.value.kind === "status-update") states.push(next.value.status.state);
      }
      return states;
    })();
    const cancelled = await client.cancelTask({ id: started.id });
    assert.equal(cancelled.status.state, "canceled", `round ${round}`);
    assert.equal((await watching).at(-1), "canceled", `round ${round}`);
  }
});

Deno.test("a JSON-RPC call without a token, or with a wrong one, is refused with 401", async () => {
  await using a2a = await startA2a();
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } });
  for (const token of [undefined, "wrong-token-0123456789abcdef"]) {
    const response = await fetchWithToken(token)(`${a2a.url}/a2a`, {
      method: "POST",
      headers: { "content-type": "application/json", "A2A-Version": "1.0" },
      body,
    });
    assert.deepEqual(response.status, 401);
    const answer = await response.json();
    assert.deepEqual(answer.error.code, "unauthenticated");
  }
  await assert.rejects(async () => {
    const client = await sdkClient(a2a.url, undefined);
    await client.sendMessage(sendRequest(userMessage("no token")));
  });
});

Deno.test("push-notification configuration answers PushNotificationNotSupported in both protocol versions, params or not", async () => {
  await using a2a = await startA2a();
  const cases = [
    [undefined, "tasks/pushNotificationConfig/set"],
    [undefined, "tasks/pushNotificationConfig/get"],
    [undefined, "tasks/pushNotificationConfig/list"],
    [undefined, "tasks/pushNotificationConfig/delete"],
    ["1.0", "CreateTaskPushNotificationConfig"],
    ["1.0", "GetTaskPushNotificationConfig"],
  ] as const;
  for (const [version, method] of cases) {
    // The 0.3 SDK's own handler read `params.pushNotificationConfig.id` of an empty params
    // object and answered an internal error; the fuzz battery found it.
    for (const params of [{}, undefined, { taskId: "t", pushNotificationConfig: {} }]) {
      const response = await fetchWithToken(TOKENS.alice)(`${a2a.url}/a2a`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(version !== undefined ? { "A2A-Version": version } : {}),
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
      });
      assert.equal(response.status, 200);
      const answer = await response.json();
      assert.equal(answer.id, 7);
      assert.equal(answer.error.code, -32003, `${method} ${JSON.stringify(params)}`);
      assert.match(answer.error.message, /^Cannot configure push notifications/);
    }
  }
});

Deno.test("another owner's task answers exactly as an unknown id", async () => {
  await using a2a = await startA2a();
  const alice = await sdkClient(a2a.url, TOKENS.alice);
  const bob = await sdkClient(a2a.url, TOKENS.bob);
  const task = asTask(await alice.sendMessage(sendRequest(userMessage("mine"))));
  const call = (id: string) =>
    fetchWithToken(TOKENS.bob)(`${a2a.url}/a2a`, {
      method: "POST",
      headers: { "content-type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "GetTask", params: { id } }),
    }).then((r) => r.json());
  const theirs = await call(task.id);
  const unknown = await call(crypto.randomUUID());
  assert.deepEqual(theirs.error.code, -32001);
  assert.deepEqual(theirs.error.code, unknown.error.code);
  assert.deepEqual(
    theirs.error.message.replace(task.id, "ID"),
    unknown.error.message.replace(/[0-9a-f-]{36}/, "ID"),
  );
  const listed = await bob.listTasks({
    tenant: "",
    contextId: "",
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: 10,
    pageToken: "",
    historyLength: undefined,
    statusTimestampAfter: undefined,
    includeArtifacts: undefined,
  });
  assert.deepEqual(listed.tasks, []);
  await assert.rejects(() => bob.cancelTask({ tenant: "", id: task.id, metadata: undefined }));
  const stillDone = await finalTask(alice, task.id);
  assert.deepEqual(stillDone.status?.state, TaskState.TASK_STATE_COMPLETED);
});

Deno.test("a send beyond the owner's cap is the rate_limited JSON-RPC error with its retry time, through the SDK client too, and another owner still sends", async () => {
  await using a2a = await startA2a({
    fakeLatencyMs: 60_000,
    config: ConfigSchema.parse({ admission: { owner_live_tasks: 1, retry_after_s: 9 } }),
  });
  const alice = await sdkClient(a2a.url, TOKENS.alice);
  const first = asTask(
    await alice.sendMessage(sendRequest(userMessage("long"), { returnImmediately: true })),
  );
  await eventually(async () => {
    const task = await alice.getTask({ tenant: "", id: first.id, historyLength: undefined });
    return task.status?.state === TaskState.TASK_STATE_WORKING ? true : undefined;
  }, { what: "the first task to work" });
  const raw = await fetchWithToken(TOKENS.alice)(`${a2a.url}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", "A2A-Version": "1.0" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 3,
      method: "SendMessage",
      params: sendRequest(userMessage("one more")),
    }),
  }).then((r) => r.json());
  assert.equal(raw.error.code, -32059);
  assert.deepEqual(raw.error.data, { retry_after_s: 9 });
  assert.match(raw.error.message, /owner 'alice' has 1 live tasks, the most allowed/);
  await assert.rejects(
    () => alice.sendMessage(sendRequest(userMessage("and another"))),
    /the most allowed/,
  );
  const bob = await sdkClient(a2a.url, TOKENS.bob);
  const theirs = asTask(
    await bob.sendMessage(sendRequest(userMessage("bob's"), { returnImmediately: true })),
  );
  assert.notEqual(theirs.status?.state, TaskState.TASK_STATE_REJECTED);
});

import assert from "node:assert/strict";
import { createDispatcher, type Provider } from "../src/dispatch/mod.ts";
import { SessionStore, TaskManager } from "../src/tasks/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { openLedger } from "../src/ledger/mod.ts";
import { denoCommand, LOCAL, tempDir } from "./helpers.ts";
import { type RecordingProvider, recordingProvider } from "./providers.ts";

/** A harness-like provider: answers with the history length and hands out a new session id each turn. */
function conversational(name: string, kind: Provider["kind"]): RecordingProvider {
  return recordingProvider(name, {
    kind,
    async answer(request, requests) {
      if (request.prompt.includes("hang")) {
        await new Promise((_, reject) =>
          request.signal.addEventListener("abort", () => reject(request.signal.reason), {
            once: true,
          })
        );
      }
      return {
        output: `${name} turn ${(request.history?.length ?? 0) / 2 + 1}: ${request.prompt}`,
        usage: { input_tokens: 5, output_tokens: 7 },
        cost_usd: 0.01,
        provider: name,
        model: "m",
        session_id: kind === "harness" ? `${name}-session-${requests.length}` : null,
      };
    },
  });
}

async function setup(providers: Provider[]) {
  const home = await tempDir();
  const ledger = await openLedger(home.path);
  const sessions = new SessionStore(ledger);
  const tasks = new TaskManager({
    dispatcher: createDispatcher({ providers, fakeLatencyMs: 0 }),
    ledger,
    sessions,
    cancelPollMs: 20,
  });
  return {
    ledger,
    sessions,
    tasks,
    home: home.path,
    async [Symbol.asyncDispose]() {
      await tasks.close();
      ledger.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

Deno.test("an asynchronous dispatch returns a task_id at once; status, result, usage and events can be read", async () => {
  await using t = await setup([conversational("claude", "harness")]);
  const started = await t.tasks.start({ prompt: "fix the bug", provider: "claude", label: "bug" }, {
    owner: "alice",
  });
  assert.equal(started.state, "queued");
  assert.match(started.task_id, /^task_[0-9a-z]{18}$/);
  const done = await t.tasks.wait(started.task_id, { owner: "alice" });
  assert.equal(done.state, "succeeded");
  assert.equal(done.result, "claude turn 1: fix the bug");
  assert.deepEqual(done.usage, { input_tokens: 5, output_tokens: 7 });
  assert.equal(done.cost_usd, 0.01);
  assert.deepEqual([done.provider, done.route, done.sandbox], [
    "claude",
    "asked for by name",
    "read-only",
  ]);
  assert.deepEqual(
    (await Array.fromAsync(t.tasks.events(started.task_id, { owner: "alice" }, { follow: false })))
      .filter(({ event }) => !event.progress)
      .map((
        { event },
      ) => "state" in event && event.state),
    [
      "queued",
      "running",
      "succeeded",
    ],
  );
  assert.equal(
    await t.tasks.get(started.task_id, { owner: "bob" }),
    undefined,
    "another owner's task is not found",
  );
  assert.deepEqual((await t.tasks.list({ owner: "alice" })).map((task) => task.task_id), [
    started.task_id,
  ]);
});

Deno.test("a bad dispatch request is refused, naming the field", async () => {
  await using t = await setup([]);
  await assert.rejects(
    t.tasks.start({ prompt: "" }, LOCAL),
    /Cannot dispatch: 'prompt' must not be empty/,
  );
  await assert.rejects(
    t.tasks.start({ prompt: "x", sandbox: "root" }, LOCAL),
    /'sandbox' invalid option/,
  );
  await assert.rejects(t.tasks.start({ prompt: "x", colour: 1 }, LOCAL), /unknown field 'colour'/);
  // Found by the fuzz battery: a schema nested 3,000 levels deep made the copy of the request
  // throw, an internal error.
  let deep: Record<string, unknown> = {};
  for (let i = 0; i < 3000; i++) deep = { a: deep };
  await assert.rejects(
    t.tasks.start({ prompt: "x", schema: deep }, LOCAL),
    (error: unknown) =>
      error instanceof SvcError && error.code === "invalid_request" &&
      /'schema' must be JSON nested at most 64 levels deep/.test(error.message),
  );
});

Deno.test("cancel is idempotent: a running task stops and ends cancelled, again and again", async () => {
  await using t = await setup([conversational("claude", "harness")]);
  const task = await t.tasks.start({ prompt: "hang please", provider: "claude" }, LOCAL);
  while ((await t.tasks.get(task.task_id, LOCAL))?.state !== "running") {
    await new Promise((r) => setTimeout(r, 5));
  }
  const first = await t.tasks.cancel(task.task_id, LOCAL);
  const second = await t.tasks.cancel(task.task_id, LOCAL);
  assert.equal(first.state, "cancelled");
  assert.deepEqual(second, first);
  assert.equal(first.error?.message, "the task was cancelled");
});

Deno.test("a task started by one process is cancelled from another through the ledger", async () => {
  await using home = await tempDir();
  const providers = [conversational("claude", "harness")];
  const ledgerA = await openLedger(home.path);
  const ledgerB = await openLedger(home.path);
  const worker = new TaskManager({
    dispatcher: createDispatcher({ providers, fakeLatencyMs: 0 }),
    ledger: ledgerA,
    sessions: new SessionStore(ledgerA),
    cancelPollMs: 20,
  });
  const client = new TaskManager({
    dispatcher: createDispatcher({ providers, fakeLatencyMs: 0 }),
    ledger: ledgerB,
    sessions: new SessionStore(ledgerB),
  });
  try {
    const queued = await client.enqueue({ prompt: "hang", provider: "claude" }, LOCAL);
    const working = worker.work(queued.task_id, LOCAL);
    while ((await client.get(queued.task_id, LOCAL))?.state !== "running") {
      await new Promise((r) => setTimeout(r, 5));
    }
    await client.cancel(queued.task_id, LOCAL);
    assert.equal((await working).state, "cancelled");
    assert.equal((await client.wait(queued.task_id, LOCAL)).state, "cancelled");
    await assert.rejects(
      worker.work(queued.task_id, LOCAL),
      /Cannot work on task '.*': it is cancelled/,
    );
  } finally {
    await worker.close();
    ledgerA.close();
    ledgerB.close();
  }
});

Deno.test("a queued task cancelled before it starts never runs", async () => {
  await using t = await setup([conversational("claude", "harness")]);
  const queued = await t.tasks.enqueue({ prompt: "never", provider: "claude" }, LOCAL);
  assert.equal((await t.tasks.cancel(queued.task_id, LOCAL)).state, "cancelled");
  await assert.rejects(t.tasks.work(queued.task_id, LOCAL), /it is cancelled/);
});

Deno.test("a task that hangs ends at its timeout", async () => {
  await using t = await setup([conversational("claude", "harness")]);
  const task = await t.tasks.start({ prompt: "hang", provider: "claude", timeout: 1 }, LOCAL);
  const done = await t.tasks.wait(task.task_id, LOCAL);
  assert.equal(done.state, "timeout");
  assert.equal(done.error?.message, "the task exceeded its timeout of 1 s");
});

Deno.test("a harness session continues across turns and follows a changing session id", async () => {
  const claude = conversational("claude", "harness");
  await using t = await setup([claude]);
  const session = await t.sessions.create({ name: "pairing", provider: "claude" }, {
    owner: "alice",
  });
  for (const prompt of ["one", "two", "three"]) {
    const task = await t.tasks.start({ prompt, session: "pairing" }, { owner: "alice" });
    assert.equal(
      (await t.tasks.wait(task.task_id, { owner: "alice" })).session_id,
      session.session_id,
    );
  }
  assert.deepEqual(claude.requests.map((r) => r.resumeSession), [
    undefined,
    "claude-session-1",
    "claude-session-2",
  ]);
  const detail = await t.sessions.get("pairing", { owner: "alice" });
  assert.equal(detail.turns, 3);
  assert.equal(detail.harness_session_id, "claude-session-3");
  assert.deepEqual(detail.messages.map((m) => m.role), [
    "user",
    "assistant",
    "user",
    "assistant",
    "user",
    "assistant",
  ]);
  await assert.rejects(t.sessions.get(session.session_id, { owner: "bob" }), /no such session/);
});

Deno.test("an API session sends its stored history with every turn", async () => {
  const api = conversational("api", "api");
  await using t = await setup([api]);
  for (const prompt of ["hello", "and then?"]) {
    const task = await t.tasks.start({ prompt, provider: "api", session: "chat" }, LOCAL);
    await t.tasks.wait(task.task_id, LOCAL);
  }
  assert.deepEqual(api.requests[1]!.history, [
    { role: "user", content: "hello" },
    { role: "assistant", content: "api turn 1: hello" },
  ]);
  const sessions = await t.sessions.list({ owner: "local" });
  assert.deepEqual(sessions.map((s) => [s.name, s.provider, s.turns]), [["chat", "api", 2]]);
});

Deno.test("a session stays with its provider and names are unique per owner", async () => {
  await using t = await setup([
    conversational("claude", "harness"),
    conversational("codex", "harness"),
  ]);
  await t.sessions.create({ name: "mine", provider: "claude" }, { owner: "alice" });
  await assert.rejects(
    t.sessions.create({ name: "mine" }, { owner: "alice" }),
    (e: unknown) => e instanceof SvcError && e.code === "conflict",
  );
  await t.sessions.create({ name: "mine" }, { owner: "bob" });
  const task = await t.tasks.start({ prompt: "x", provider: "codex", session: "mine" }, {
    owner: "alice",
  });
  const done = await t.tasks.wait(task.task_id, { owner: "alice" });
  assert.equal(done.state, "failed");
  assert.match(
    done.error?.message ?? "",
    /Cannot continue session 'mine': it talks to claude, not codex/,
  );
  const unknown = await t.tasks.wait(
    (await t.tasks.start({ prompt: "x", session: "ses_0000000000nothere" }, LOCAL)).task_id,
    LOCAL,
  );
  assert.match(
    unknown.error?.message ?? "",
    /Cannot continue session 'ses_0000000000nothere': no such session/,
  );
});

Deno.test("agent() calls of a workflow continue a session across calls", async () => {
  const claude = conversational("claude", "harness");
  await using home = await tempDir();
  const ledger = await openLedger(home.path);
  try {
    const { RunManager } = await import("../src/engine/mod.ts");
    const manager = await RunManager.create({
      dispatcher: createDispatcher({ providers: [claude], fakeLatencyMs: 0 }),
      ledger,
    });
    const run = await manager.start({
      script:
        `return [await agent("first", { provider: "claude", session: "review" }), await agent("second", { session: "review" })];`,
    }, LOCAL);
    const status = await manager.wait(run.run_id, LOCAL);
    await manager.close();
    assert.deepEqual(status.result, ["claude turn 1: first", "claude turn 2: second"]);
    assert.deepEqual(claude.requests.map((r) => r.resumeSession), [undefined, "claude-session-1"]);
  } finally {
    ledger.close();
  }
});

Deno.test("a fake-dispatch run or task never changes a real session: provider, harness session id and history stay", async () => {
  const claude = conversational("claude", "harness");
  await using t = await setup([claude]);
  await t.sessions.create({ name: "pairing", provider: "claude" }, { owner: "local" });
  await t.tasks.wait(
    (await t.tasks.start({ prompt: "real turn", session: "pairing" }, LOCAL)).task_id,
    LOCAL,
  );
  const before = await t.sessions.get("pairing", { owner: "local" });
  assert.equal(before.harness_session_id, "claude-session-1");

  const { RunManager } = await import("../src/engine/mod.ts");
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ providers: [claude], fakeLatencyMs: 0 }),
    ledger: t.ledger,
    sessions: t.sessions,
  });
  try {
    const run = await manager.start({
      script:
        `return [await agent("fake turn", { session: "pairing" }), await agent("new", { session: "scratch" })];`,
      fake_dispatch: true,
    }, LOCAL);
    const status = await manager.wait(run.run_id, LOCAL);
    assert.deepEqual(status.result, ["fake response to: fake turn", "fake response to: new"]);
  } finally {
    await manager.close();
  }
  const task = await t.tasks.start({
    prompt: "fake task",
    session: "pairing",
    fake_dispatch: true,
  }, LOCAL);
  assert.equal((await t.tasks.wait(task.task_id, LOCAL)).state, "succeeded");

  assert.deepEqual(await t.sessions.get("pairing", { owner: "local" }), before);
  assert.deepEqual((await t.sessions.list({ owner: "local" })).map((s) => s.name), ["pairing"]);
  // The user's next real turn continues the real conversation.
  await t.tasks.wait(
    (await t.tasks.start({ prompt: "real again", session: "pairing" }, LOCAL)).task_id,
    LOCAL,
  );
  assert.deepEqual(claude.requests.map((r) => r.resumeSession), [undefined, "claude-session-1"]);
});

Deno.test("a task whose worker process is killed is marked interrupted by the next host", async () => {
  const { ROOT } = await import("./helpers.ts");
  await using home = await tempDir();
  const ledger = await openLedger(home.path);
  try {
    const tasks = new TaskManager({
      dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
      ledger,
      sessions: new SessionStore(ledger),
    });
    const queued = await tasks.enqueue({ prompt: "slow", fake_dispatch: true }, LOCAL);
    const worker = denoCommand({
      args: [
        "run",
        "--allow-read",
        "--allow-write",
        "--allow-run",
        "--allow-env",
        `${ROOT}/cli/main.ts`,
        "task",
        "work",
        queued.task_id,
      ],
      env: { SVC_HOME: home.path, SVC_FAKE_LATENCY_MS: "60000" },
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    while ((await ledger.getTask(queued.task_id))?.state !== "running") {
      await new Promise((r) => setTimeout(r, 20));
    }
    worker.kill("SIGKILL");
    await worker.status;
    assert.deepEqual(await tasks.recover(), [queued.task_id]);
    const task = await ledger.getTask(queued.task_id);
    assert.equal(task?.state, "interrupted");
    assert.equal(task?.error?.message, "the process running this task stopped before it ended");
    assert.deepEqual(
      (await ledger.readEvents({ kind: "task", id: queued.task_id }))
        .filter(({ event }) => !("progress" in event && event.progress))
        .map(({ event }) => "state" in event && event.state),
      [
        "queued",
        "running",
        "interrupted",
      ],
    );
    await tasks.close();
  } finally {
    ledger.close();
  }
});

Deno.test("a dispatch with a schema is validated and asked again until an answer is valid", async () => {
  let attempts = 0;
  const flaky: Provider = {
    name: "flaky",
    kind: "api",
    probe: () => Promise.resolve({ available: true, reason: "ok" }),
    dispatch(request) {
      attempts++;
      return Promise.resolve({
        output: attempts < 2 ? "no json here" : '```json\n{"ok": true}\n```',
        usage: { input_tokens: 10, output_tokens: 5 },
        cost_usd: 0.1,
        provider: "flaky",
        model: request.model ?? null,
      });
    },
  };
  await using t = await setup([flaky]);
  const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] };
  const done = await t.tasks.wait(
    (await t.tasks.start({ prompt: "judge", provider: "flaky", schema }, LOCAL)).task_id,
    LOCAL,
  );
  assert.equal(done.state, "succeeded", JSON.stringify(done.error));
  assert.deepEqual(done.result, { ok: true });
  assert.deepEqual(done.usage, { input_tokens: 20, output_tokens: 10 }, "both attempts are paid");
  assert.equal(Math.round(done.cost_usd! * 100) / 100, 0.2);

  attempts = -10;
  const failed = await t.tasks.wait(
    (await t.tasks.start({ prompt: "judge", provider: "flaky", schema, schema_attempts: 2 }, LOCAL))
      .task_id,
    LOCAL,
  );
  assert.equal(failed.state, "failed");
  assert.match(
    failed.error?.message ?? "",
    /^Cannot get an answer valid against the schema: 2 attempts failed \(\(root\) must be object\)$/,
  );
  assert.deepEqual(failed.usage, { input_tokens: 20, output_tokens: 10 });

  const unknown = await t.tasks.wait(
    (await t.tasks.start({ prompt: "x", provider: "flaky", schema_id: "nope" }, LOCAL)).task_id,
    LOCAL,
  );
  assert.match(unknown.error?.message ?? "", /^Cannot dispatch: no registered schema 'nope'/);
});

Deno.test("a session turn whose answer is over what one ledger value holds returns it whole; the history keeps it clipped", async () => {
  const big = "y".repeat(300_000);
  const claude = recordingProvider("claude", {
    answer: () =>
      Promise.resolve({
        output: big,
        usage: { input_tokens: 1, output_tokens: 1 },
        cost_usd: 0,
        provider: "claude",
        model: null,
      }),
  });
  await using t = await setup([claude]);
  const prompt = "p".repeat(30_000);
  const task = await t.tasks.start({ prompt, provider: "claude", session: "long" }, LOCAL);
  const done = await t.tasks.wait(task.task_id, LOCAL);
  assert.equal(done.state, "succeeded", JSON.stringify(done.error));
  assert.equal(done.result, big);
  const detail = await t.sessions.get("long", LOCAL);
  assert.equal(detail.turns, 1);
  assert.deepEqual(detail.messages.map((m) => m.role), ["user", "assistant"]);
  assert.equal(detail.messages[0]!.content, prompt);
  assert.ok(detail.messages[1]!.content.length < big.length);
  assert.ok(detail.messages[1]!.content.startsWith("yyyy"));
});

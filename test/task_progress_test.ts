/**
 * A dispatch task's live output: its call's progress is recorded in the task's own feed
 * (bounded, batched, redacted, before its end), served as `progress` events, printed by
 * `svc dispatch --wait --output`, and never writes over a cancel another process asked for.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import type { DispatchRequest, DispatchResult, Provider } from "../src/dispatch/mod.ts";
import { openLedger, type TaskEvent } from "../src/ledger/mod.ts";
import { SessionStore, TaskManager } from "../src/tasks/mod.ts";
import { eventName } from "../src/http/feed_stream.ts";
import { LOCAL, runCli, tempDir } from "./helpers.ts";

const SECRET = "sk-ant-api03-Zq8vY2xW4tR6uP0oN3mL5kJ7hG9fD1sA";

function answer(name: string): DispatchResult {
  return {
    output: "done",
    usage: { input_tokens: 1, output_tokens: 1 },
    cost_usd: 0,
    provider: name,
    model: name,
  };
}

/** Reports a tool use, a secret cut in two, 300 lines of text and a file, over ~0.2 s. */
const chatty: Provider = {
  name: "chatty",
  kind: "api",
  async dispatch(request: DispatchRequest): Promise<DispatchResult> {
    const say = request.onProgress!;
    say({ kind: "tool", name: "Read", target: "src/\u001b[31mapp.ts" });
    say({ kind: "text", text: `my key is ${SECRET.slice(0, 20)}` });
    say({ kind: "text", text: `${SECRET.slice(20)} ok\n` });
    for (let i = 0; i < 300; i++) {
      say({ kind: "text", text: `line ${i} of the answer\n` });
      if (i % 100 === 0) await new Promise((resolve) => setTimeout(resolve, 70));
    }
    say({ kind: "file", path: "NOTES.md", change: "write" });
    return answer("chatty");
  },
};

/** Reports a line every 40 ms until it is stopped. */
const endless: Provider = {
  name: "endless",
  kind: "api",
  async dispatch(request: DispatchRequest): Promise<DispatchResult> {
    for (let i = 0; !request.signal.aborted; i++) {
      request.onProgress!({ kind: "text", text: `still working ${i}\n` });
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    throw request.signal.reason;
  },
};

async function tasksOver(
  providers: Provider[],
  options: { progressBytes?: number; cancelPollMs?: number } = {},
) {
  const home = await tempDir("svc-task-progress-");
  const ledger = await openLedger(home.path);
  const tasks = new TaskManager({
    dispatcher: createDispatcher({ providers, fakeLatencyMs: 0 }),
    ledger,
    sessions: new SessionStore(ledger),
    ...options,
  });
  return {
    tasks,
    ledger,
    async [Symbol.asyncDispose]() {
      await tasks.close();
      ledger.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

async function feed(tasks: TaskManager, taskId: string): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const item of tasks.events(taskId, LOCAL, { follow: false })) events.push(item.event);
  return events;
}

Deno.test("a task's live output is in its feed: bounded, batched, redacted, before its end", async () => {
  await using t = await tasksOver([chatty], { progressBytes: 2048 });
  const started = await t.tasks.start({ prompt: "go", provider: "chatty" }, LOCAL);
  const ended = await t.tasks.wait(started.task_id, LOCAL);
  assert.equal(ended.state, "succeeded");
  const events = await feed(t.tasks, started.task_id);
  const progress = events.filter((event) => event.progress !== undefined);
  assert.ok(progress.length >= 1, "the call's output is in the task's feed");
  assert.ok(progress.length <= 6, `batched: ${progress.length} progress events`);
  assert.ok(progress.every((event) => event.state === "running"));
  assert.ok(progress.every((event) => eventName(event) === "progress"));
  assert.equal(eventName(events.at(-1)!), "state");
  const items = progress.flatMap((event) => event.progress!);
  assert.deepEqual(items[0], { kind: "tool", name: "Read", target: "src/app.ts" });
  const kept = items.filter((item) => item.kind !== "truncated");
  const bytes = kept.reduce((sum, item) => sum + JSON.stringify(item).length, 0);
  assert.ok(bytes <= 2048, `${bytes} bytes recorded`);
  assert.equal(items.at(-1)?.kind, "truncated");
  const text = items.map((item) => item.kind === "text" ? item.text : "").join("");
  assert.match(text, /my key is \[redacted\] ok/);
  assert.ok(!JSON.stringify([events, ended]).includes(SECRET.slice(0, 20)));
  // The state changes keep their order around the output, and the end is last.
  assert.deepEqual(
    events.filter((event) => event.progress === undefined).map((event) => event.state),
    ["queued", "running", "succeeded"],
  );
});

Deno.test("a task's progress never writes over a cancel another process asked for", async () => {
  // The cancel poll is slow on purpose: progress lands several times before it looks.
  await using t = await tasksOver([endless], { cancelPollMs: 1500 });
  const started = await t.tasks.start({ prompt: "go", provider: "endless" }, LOCAL);
  for (let i = 0; i < 100; i++) {
    if ((await feed(t.tasks, started.task_id)).some((event) => event.progress)) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // As `svc task cancel` in another process does it: on the task's record only.
  await t.ledger.requestCancel(started.task_id);
  await new Promise((resolve) => setTimeout(resolve, 600));
  assert.equal((await t.ledger.getTask(started.task_id))?.cancel_requested, true);
  const ended = await t.tasks.wait(started.task_id, LOCAL);
  assert.equal(ended.state, "cancelled");
});

Deno.test("svc dispatch --wait --output all prints the call's live output; --output needs --wait", async () => {
  await using home = await tempDir();
  const shown = await runCli(
    ["dispatch", "hello there", "--wait", "--fake-dispatch", "--output", "all"],
    // The fake streams its answer over its latency; with none it has nothing to show live.
    { home: home.path, env: { SVC_FAKE_LATENCY_MS: "20" } },
  );
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stderr, /^ {2}#1 │ fake response to: hello there$/m);
  assert.equal(JSON.parse(shown.stdout), "fake response to: hello there");
  const quiet = await runCli(["dispatch", "hello", "--wait", "--fake-dispatch"], {
    home: home.path,
  });
  assert.doesNotMatch(quiet.stderr, /#1 │/);
  const refused = await runCli(["dispatch", "hello", "--output", "all"], { home: home.path });
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /Cannot use --output without --wait/);
});

Deno.test("svc workflow run --output all prints its calls' live output under the narration", async () => {
  await using home = await tempDir();
  const shown = await runCli(
    ["workflow", "run", "-", "--fake-dispatch", "--output", "all"],
    {
      home: home.path,
      env: { SVC_FAKE_LATENCY_MS: "20" },
      input: `return await agent("say hi", { label: "greet" })`,
    },
  );
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stderr, /^ {2}#1 │ fake response to: say hi$/m);
  const bad = await runCli(["workflow", "run", "-", "--output", "loud"], {
    home: home.path,
    input: `return 1`,
  });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Cannot use --output 'loud': it must be one of none, tools, all/);
});

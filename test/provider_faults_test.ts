/**
 * Faults of what a run stands on, through the real engine: a model API (a local server speaking
 * the OpenAI or Anthropic wire format) that hangs, answers garbage or drops the connection in the
 * middle of a stream, and a coding-agent harness that ignores SIGTERM and hangs. Each run must
 * end (never stay `running`), its failed call must say what went wrong in words (no stack
 * trace), no process may be left behind, and once the fault is gone a resume must replay the
 * calls that had succeeded and return exactly what an unfaulted run returns.
 */
import assert from "node:assert/strict";
import {
  anthropicProvider,
  claudeProvider,
  createDispatcher,
  openaiCompatibleProvider,
  type Provider,
} from "../src/dispatch/mod.ts";
import type { JournalEntry, RunStatus } from "../src/ledger/mod.ts";
import { assertAllGone, killAll, running } from "./harness_helpers.ts";
import { fixture, LOCAL, processesMentioning, tempDir, testManager } from "./helpers.ts";

/** How the local API misbehaves on the faulted call. */
type Fault =
  | "none"
  | "hang"
  | "not_json"
  | "wrong_shape"
  | "html_for_a_stream"
  | "drop_mid_stream"
  | "huge_garbage";

type Wire = "openai" | "anthropic";

/** The prompt the fault hits: calls before it succeed, so that a resume has something to replay. */
const FAULTED = "two";

/** Three calls; a script that cannot go on without the second one throws, as a real one would. */
function script(provider: string): string {
  return `
    const one = await agent("one", { provider: "${provider}" });
    const two = await agent("${FAULTED}", { provider: "${provider}" });
    if (two === null) throw new Error("the second call failed");
    const three = await agent("three", { provider: "${provider}" });
    return [one, two, three];
  `;
}

function openaiAnswer(prompt: string, stream: boolean): Response {
  const text = `answer to ${prompt}`;
  if (!stream) {
    return Response.json({
      id: "c1",
      object: "chat.completion",
      model: "gpt-local",
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
  }
  return sse([
    `data: ${
      JSON.stringify({ model: "gpt-local", choices: [{ index: 0, delta: { content: text } }] })
    }`,
    `data: ${
      JSON.stringify({
        model: "gpt-local",
        choices: [],
        usage: { prompt_tokens: 3, completion_tokens: 4 },
      })
    }`,
    `data: [DONE]`,
  ]);
}

function anthropicAnswer(prompt: string, stream: boolean): Response {
  const text = `answer to ${prompt}`;
  if (!stream) {
    return Response.json({
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-local",
      content: [{ type: "text", text }],
      stop_reason: "end_turn",
      usage: { input_tokens: 3, output_tokens: 4 },
    });
  }
  const events = [
    {
      type: "message_start",
      message: { model: "claude-local", content: [], usage: { input_tokens: 3, output_tokens: 0 } },
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } },
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 4 } },
    { type: "message_stop" },
  ];
  return sse(events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}`));
}

function sse(events: string[]): Response {
  return new Response(events.map((e) => `${e}\n\n`).join(""), {
    headers: { "content-type": "text/event-stream" },
  });
}

/** The answer of a faulted call. */
function faulty(fault: Fault, wire: Wire, signal: AbortSignal): Response | Promise<Response> {
  switch (fault) {
    case "hang":
      // Never answers: holds the request until the client gives up on it.
      return new Promise((resolve) => {
        signal.addEventListener("abort", () => resolve(new Response("late")), { once: true });
      });
    case "not_json":
      return new Response("<html><body>502 upstream gone</body></html>", {
        headers: { "content-type": "application/json" },
      });
    case "wrong_shape":
      return Response.json({ id: "x", object: "nothing-you-know", data: [1, 2, 3] });
    case "html_for_a_stream":
      return new Response("<html><body>Please log in to the proxy</body></html>", {
        headers: { "content-type": "text/html" },
      });
    case "huge_garbage": {
      // 48 MiB of bytes that are not JSON, announced as JSON.
      const chunk = new TextEncoder().encode("garbage ".repeat(8192));
      let sent = 0;
      return new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent >= 48 * 1024 * 1024) return controller.close();
            sent += chunk.length;
            controller.enqueue(chunk);
          },
        }),
        { headers: { "content-type": "application/json" } },
      );
    }
    case "drop_mid_stream": {
      const first = wire === "openai"
        ? `data: ${
          JSON.stringify({ model: "m", choices: [{ index: 0, delta: { content: "half" } }] })
        }\n\n`
        : `event: message_start\ndata: ${
          JSON.stringify({ type: "message_start", message: { model: "m", content: [], usage: {} } })
        }\n\n`;
      let step = 0;
      return new Response(
        new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (step++ === 0) return controller.enqueue(new TextEncoder().encode(first));
            await new Promise((resolve) => setTimeout(resolve, 20));
            // The connection is cut: the body errors, and the server drops the connection.
            controller.error(new Error("connection dropped"));
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    }
    case "none":
      throw new Error("unreachable");
  }
}

/** A local model API whose calls with the prompt {@linkcode FAULTED} misbehave while `fault` is set. */
function faultyApi(wire: Wire) {
  const prompts: string[] = [];
  const state = { fault: "none" as Fault };
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen() {},
    // The dropped stream's error is the fault itself, not news.
    onError: () => new Response("dropped", { status: 500 }),
  }, async (request) => {
    const body = await request.json();
    const messages = body.messages as { content: string }[];
    const prompt = messages.at(-1)!.content;
    prompts.push(prompt);
    if (state.fault !== "none" && prompt === FAULTED) {
      return await faulty(state.fault, wire, request.signal);
    }
    return wire === "openai"
      ? openaiAnswer(prompt, body.stream === true)
      : anthropicAnswer(prompt, body.stream === true);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    state,
    prompts,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** The variable the providers read their key from (the local API checks none). */
const KEY_ENV = "SVC_TEST_FAULTS_KEY";

/** The provider under test, quick to give up so that a fault costs the test little. */
function apiProvider(wire: Wire, url: string, stream: boolean, timeoutMs = 500): Provider {
  Deno.env.set(KEY_ENV, "sk-local-fault-test-key");
  const common = { apiKeyEnv: KEY_ENV, stream, timeoutMs, maxRetries: 1, retryBaseMs: 10 };
  return wire === "openai"
    ? openaiCompatibleProvider({ baseUrl: url, model: "m", ...common })
    : anthropicProvider({ baseUrl: url, model: "m", ...common });
}

/** Asserts that a failure reason is words: the provider named, no stack trace, no source path. */
function assertClear(reason: string | undefined, pattern: RegExp): void {
  assert.ok(reason !== undefined, "the failed call has a reason");
  assert.match(reason, pattern);
  assert.doesNotMatch(reason, /\n\s*at |file:\/\/|\.ts:\d+/, "no stack trace in the reason");
}

/** The failed call's journal entry. */
function failedEntry(journal: JournalEntry[]): JournalEntry {
  const entry = journal.find((e) => e.outcome === "failed");
  assert.ok(entry, `a failed call in ${JSON.stringify(journal.map((e) => e.outcome))}`);
  return entry;
}

/** Each fault in words, for the tests' names. */
const SAYS: Record<Fault, string> = {
  none: "works",
  hang: "never answers",
  not_json: "answers an HTML page as JSON",
  wrong_shape: "answers JSON of another shape",
  html_for_a_stream: "answers a streaming request with an HTML page",
  drop_mid_stream: "drops the connection in the middle of a stream",
  huge_garbage: "answers 48 MiB of garbage",
};

/** What the three calls return when nothing is wrong. */
const UNFAULTED = ["answer to one", "answer to two", "answer to three"];

const CASES: Array<{ wire: Wire; fault: Fault; stream: boolean; reason: RegExp }> = [
  {
    wire: "openai",
    fault: "hang",
    stream: false,
    reason: /^Cannot dispatch to openai: the API did not answer within 0\.5 s after 2 attempts$/,
  },
  {
    wire: "openai",
    fault: "not_json",
    stream: false,
    reason: /^Cannot dispatch to openai: the answer is not JSON \(<html><body>502 upstream gone/,
  },
  {
    wire: "openai",
    fault: "wrong_shape",
    stream: false,
    reason: /^Cannot dispatch to openai: the answer has an unexpected shape \(choices: /,
  },
  {
    wire: "openai",
    fault: "html_for_a_stream",
    stream: true,
    reason:
      /^Cannot dispatch to openai: the API answered with content type text\/html, not an event stream or JSON$/,
  },
  {
    wire: "openai",
    fault: "drop_mid_stream",
    stream: true,
    reason: /^Cannot dispatch to openai: the connection to the API failed after 2 attempts: .*body/,
  },
  {
    wire: "openai",
    fault: "huge_garbage",
    stream: false,
    reason: /^Cannot dispatch to openai: the answer is larger than 16 MiB$/,
  },
  {
    wire: "anthropic",
    fault: "wrong_shape",
    stream: false,
    reason: /^Cannot dispatch to anthropic: the answer has an unexpected shape \(/,
  },
  {
    wire: "anthropic",
    fault: "drop_mid_stream",
    stream: true,
    reason:
      /^Cannot dispatch to anthropic: the connection to the API failed after 2 attempts: .*body/,
  },
  {
    wire: "anthropic",
    fault: "html_for_a_stream",
    stream: true,
    reason:
      /^Cannot dispatch to anthropic: the API answered with content type text\/html, not an event stream or JSON$/,
  },
];

for (const c of CASES) {
  Deno.test(`${c.wire}: an API that ${SAYS[c.fault]}: the call fails in words, the run ends, and a resume after the fault finishes with the unfaulted result`, async () => {
    await using api = faultyApi(c.wire);
    await using t = await testManager({
      dispatcher: createDispatcher({ providers: [apiProvider(c.wire, api.url, c.stream)] }),
    });
    const source = script(c.wire);
    api.state.fault = c.fault;
    const faulted = await t.manager.wait(
      (await t.manager.start({ script: source, timeout: 60 }, LOCAL)).run_id,
      LOCAL,
    );
    assert.equal(faulted.state, "failed", JSON.stringify(faulted.error));
    assert.equal(faulted.error?.code, "script_error");
    assert.match(faulted.error!.message, /^Error: the second call failed/);
    const journal = await t.manager.journal(faulted.run_id, LOCAL);
    assert.deepEqual(journal.map((e) => e.outcome), ["live", "failed"]);
    assertClear(failedEntry(journal).reason, c.reason);
    assert.deepEqual(faulted.failures, { provider_failed: 1 });

    // The fault is gone: the resume replays the first call and runs the rest.
    api.state.fault = "none";
    api.prompts.length = 0;
    const resumed = await t.manager.wait(
      (await t.manager.start({ script: source, resume_from: faulted.run_id }, LOCAL)).run_id,
      LOCAL,
    );
    assert.equal(resumed.state, "succeeded", JSON.stringify(resumed.error));
    assert.deepEqual(resumed.result, UNFAULTED);
    assert.deepEqual([resumed.calls.replayed, resumed.calls.succeeded], [1, 2]);
    assert.deepEqual(api.prompts, ["two", "three"], "the call that succeeded is not sent again");
  });
}

Deno.test("an API that hangs with no timeout of its own: the run's timeout ends the run, and a resume finishes", async () => {
  await using api = faultyApi("openai");
  await using t = await testManager({
    dispatcher: createDispatcher({
      providers: [apiProvider("openai", api.url, true, 600_000)],
    }),
  });
  const source = script("openai");
  api.state.fault = "hang";
  const timedOut = await t.manager.wait(
    (await t.manager.start({ script: source, timeout: 1 }, LOCAL)).run_id,
    LOCAL,
  );
  assert.equal(timedOut.state, "timeout");
  assert.equal(timedOut.error?.message, "the run exceeded its timeout of 1 s");
  assert.equal(timedOut.calls.running, 0);
  const journal = await t.manager.journal(timedOut.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => e.outcome), ["live", "failed"]);
  assertClear(
    failedEntry(journal).reason,
    /^the run stopped \(the run exceeded its timeout of 1 s\)$/,
  );

  api.state.fault = "none";
  const resumed = await t.manager.wait(
    (await t.manager.start({ script: source, resume_from: timedOut.run_id }, LOCAL)).run_id,
    LOCAL,
  );
  assert.equal(resumed.state, "succeeded", JSON.stringify(resumed.error));
  assert.deepEqual(resumed.result, UNFAULTED);
  assert.equal(resumed.calls.replayed, 1);
});

// ---------------------------------------------------------------------------------------------
// A harness that ignores SIGTERM

/** Waits until the stubborn stand-in wrote "<its pid> <child pid>" to `file`. */
async function stubPids(
  file: string,
  run: () => Promise<RunStatus | undefined>,
): Promise<number[]> {
  for (let i = 0; i < 500; i++) {
    const text = await Deno.readTextFile(file).catch(() => "");
    const pids = text.trim().split(/\s+/).map(Number).filter((pid) => pid > 0);
    if (pids.length === 2) return pids;
    const status = await run();
    if (status && !["queued", "running"].includes(status.state)) {
      throw new Error(`the run ended: ${status.state}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("the stand-in never wrote its pids");
}

/** A claude provider over the stand-in that ignores SIGTERM and hangs while `fault` exists. */
function stubbornClaude(dir: string, timeoutMs?: number): Provider {
  return claudeProvider({
    command: fixture("harness/stubborn/claude"),
    scratchRoot: `${dir}/scratch`,
    env: { STUBBORN_FAULT: `${dir}/fault`, STUBBORN_PIDS: `${dir}/pids` },
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
}

const HARNESS_SCRIPT = script("claude");
const HARNESS_UNFAULTED = ["claude says: one", "claude says: two", "claude says: three"];

for (const ending of ["cancelled", "timeout", "provider_timeout"] as const) {
  Deno.test(`a harness that ignores SIGTERM and hangs (${ending.replace("_", " ")}): its processes are killed, the run ends, and a resume finishes`, async () => {
    await using dir = await tempDir("svc-stubborn-");
    await Deno.mkdir(`${dir.path}/scratch`);
    await Deno.writeTextFile(`${dir.path}/fault`, "");
    await using t = await testManager({
      dispatcher: createDispatcher({
        providers: [stubbornClaude(dir.path, ending === "provider_timeout" ? 1000 : undefined)],
      }),
    });
    let pids: number[] = [];
    try {
      const started = await t.manager.start({
        script: HARNESS_SCRIPT,
        timeout: ending === "timeout" ? 2 : 60,
      }, LOCAL);
      pids = await stubPids(`${dir.path}/pids`, () => t.manager.get(started.run_id, LOCAL));
      // It really ignores SIGTERM: both processes outlive one.
      for (const pid of pids) Deno.kill(pid, "SIGTERM");
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.deepEqual(await running(pids), pids, "the stand-in ignores SIGTERM");
      if (ending === "cancelled") await t.manager.cancel(started.run_id, LOCAL);
      const status = await t.manager.wait(started.run_id, LOCAL);
      await assertAllGone(pids);
      const journal = await t.manager.journal(started.run_id, LOCAL);
      assert.deepEqual(journal.map((e) => e.outcome), ["live", "failed"]);
      if (ending === "provider_timeout") {
        assert.equal(status.state, "failed");
        assert.match(status.error!.message, /^Error: the second call failed/);
        assertClear(
          failedEntry(journal).reason,
          /^Cannot dispatch to claude: claude gave no answer within 1 s \(its processes were killed\)$/,
        );
        assert.deepEqual(status.failures, { provider_timeout: 1 });
      } else {
        assert.equal(status.state, ending);
        assert.equal(
          status.error?.message,
          ending === "cancelled" ? "cancelled by local" : "the run exceeded its timeout of 2 s",
        );
      }
      assert.deepEqual(await processesMentioning(t.home), [], "no guest left behind");

      await Deno.remove(`${dir.path}/fault`);
      const resumed = await t.manager.wait(
        (await t.manager.start({ script: HARNESS_SCRIPT, resume_from: started.run_id }, LOCAL))
          .run_id,
        LOCAL,
      );
      assert.equal(resumed.state, "succeeded", JSON.stringify(resumed.error));
      assert.deepEqual(resumed.result, HARNESS_UNFAULTED);
      assert.deepEqual([resumed.calls.replayed, resumed.calls.succeeded], [1, 2]);
      assert.deepEqual(
        [...Deno.readDirSync(`${dir.path}/scratch`)],
        [],
        "call directories removed",
      );
    } finally {
      killAll(pids);
    }
  });
}

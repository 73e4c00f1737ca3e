/**
 * The model API providers against local HTTP servers that imitate the real wire formats: the
 * production code path, with only the base URL pointing here.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import {
  anthropicProvider,
  createDispatcher,
  openaiCompatibleProvider,
  providerFromConfig,
} from "../src/dispatch/mod.ts";
import { retryAfterMs } from "../src/dispatch/api/http.ts";
import { readSse, type SseEvent } from "../src/dispatch/api/sse.ts";
import { SvcError } from "../src/errors/mod.ts";
import {
  anthropicError,
  anthropicMessage,
  anthropicStream,
  localApi,
  request,
  sleepRecorder,
  sseResponse,
  withEnv,
} from "./api_helpers.ts";
import { LOCAL, testManager } from "./helpers.ts";

const KEY = "sk-test-5ecret-key-0123456789abcdef";
const OPENAI_ENV = "SVC_TEST_KEY";
const ANTHROPIC_ENV = "SVC_TEST_ANTHROPIC_KEY";

function openaiCompletion(content: string, usage: Record<string, number> = {}): Response {
  return Response.json({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1_700_000_000,
    model: "gpt-test-2025",
    choices: [{
      index: 0,
      message: { role: "assistant", content, refusal: null },
      finish_reason: "stop",
    }],
    usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17, ...usage },
  });
}

function openaiError(status: number, message: string, headers: Record<string, string> = {}) {
  return Response.json({ error: { message, type: "requests", param: null, code: "x" } }, {
    status,
    headers,
  });
}

const HISTORY = [
  { role: "user" as const, content: "earlier question" },
  { role: "assistant" as const, content: "earlier answer" },
];

// ---------------------------------------------------------------------------------------------
// OpenAI-compatible chat completions

Deno.test("openai: a call POSTs history and prompt to /chat/completions with the bearer key and returns text and usage", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() => openaiCompletion("Hello there"));
  const provider = openaiCompatibleProvider({
    baseUrl: `${api.url}/v1/`,
    apiKeyEnv: OPENAI_ENV,
    model: "gpt-default",
    headers: { "x-gateway": "svc", Authorization: "Bearer not-the-key" },
  });
  assert.equal(provider.name, "openai");
  assert.equal(provider.kind, "api");
  const result = await provider.dispatch(request("What now?", { history: HISTORY }));
  assert.deepEqual(result, {
    output: "Hello there",
    usage: { input_tokens: 12, output_tokens: 5 },
    cost_usd: null,
    provider: "openai",
    model: "gpt-test-2025",
    session_id: null,
  });
  const [seen] = api.seen;
  assert.equal(api.seen.length, 1);
  assert.equal(seen!.method, "POST");
  assert.equal(seen!.path, "/v1/chat/completions");
  assert.equal(seen!.headers.get("authorization"), `Bearer ${KEY}`);
  assert.equal(seen!.headers.get("content-type"), "application/json");
  assert.equal(seen!.headers.get("x-gateway"), "svc");
  assert.deepEqual(seen!.body, {
    model: "gpt-default",
    messages: [...HISTORY, { role: "user", content: "What now?" }],
  });

  await provider.dispatch(request("Again", { model: "gpt-other" }));
  assert.equal(api.seen[1]!.body.model, "gpt-other", "the request's model wins over the default");
});

Deno.test("openai: a schema call asks for a json_schema response_format and returns the text for the engine to parse", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() => openaiCompletion('{"n": 42}'));
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
  });
  const schema = { type: "object", properties: { n: { type: "number" } }, required: ["n"] };
  const result = await provider.dispatch(request("Count", { options: { schema } }));
  assert.equal(result.output, '{"n": 42}');
  assert.deepEqual(api.seen[0]!.body.response_format, {
    type: "json_schema",
    json_schema: { name: "result", schema, strict: false },
  });
  assert.equal(api.seen[0]!.body.stream, undefined);
});

Deno.test("openai: a usage.cost in the answer (as some gateways send) becomes cost_usd", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() => openaiCompletion("priced", { cost: 0.0042 }));
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
  });
  const result = await provider.dispatch(request("p"));
  assert.equal(result.cost_usd, 0.0042);
});

const OPENAI_STREAM = [
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-stream","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-stream","choices":[{"index":0,"delta":{"content":"Héllo, "},"finish_reason":null}],"usage":null}`,
  `: keep-alive comment`,
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-stream","choices":[{"index":0,"delta":{"content":"wörld 🌍"},"finish_reason":null}],"usage":null}`,
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-stream","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`,
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-stream","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`,
  `data: [DONE]`,
].map((line) => `${line}\n\n`).join("");

Deno.test("openai: streaming reads SSE chunks split across writes until [DONE], usage from the last chunk", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() => sseResponse(OPENAI_STREAM, { size: 5 }));
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
    stream: true,
  });
  const result = await provider.dispatch(request("Greet", { history: HISTORY }));
  assert.equal(result.output, "Héllo, wörld 🌍");
  assert.deepEqual(result.usage, { input_tokens: 9, output_tokens: 4 });
  assert.equal(result.model, "gpt-stream");
  assert.equal(result.cost_usd, null);
  const { body, headers } = api.seen[0]!;
  assert.equal(body.stream, true);
  assert.deepEqual(body.stream_options, { include_usage: true });
  assert.equal(headers.get("accept"), "text/event-stream");
  assert.deepEqual(body.messages, [...HISTORY, { role: "user", content: "Greet" }]);
});

Deno.test("openai: a stream cut before [DONE] is retried, and the next attempt's answer is used", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  const cut = OPENAI_STREAM.slice(0, OPENAI_STREAM.indexOf("data: [DONE]"));
  await using api = await localApi((_, n) => sseResponse(n === 1 ? cut : OPENAI_STREAM));
  const { waits, sleep } = sleepRecorder();
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
    stream: true,
    sleep,
    random: () => 0,
  });
  const result = await provider.dispatch(request("Greet"));
  assert.equal(result.output, "Héllo, wörld 🌍");
  assert.equal(api.seen.length, 2);
  assert.deepEqual(waits, [250]);
});

Deno.test("openai: a 429 with Retry-After waits as long as asked, then succeeds", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi((_, n) =>
    n === 1
      ? openaiError(429, "Rate limit reached for requests", { "retry-after": "7" })
      : openaiCompletion("finally")
  );
  const { waits, sleep } = sleepRecorder();
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
    sleep,
  });
  const result = await provider.dispatch(request("p"));
  assert.equal(result.output, "finally");
  assert.equal(api.seen.length, 2);
  assert.deepEqual(waits, [7000]);
});

Deno.test("openai: 500 twice then success backs off exponentially with jitter", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi((_, n) =>
    n <= 2 ? openaiError(500, "The server had an error") : openaiCompletion("ok")
  );
  const { waits, sleep } = sleepRecorder();
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
    sleep,
    random: () => 0.5,
  });
  assert.equal((await provider.dispatch(request("p"))).output, "ok");
  assert.equal(api.seen.length, 3);
  // base 500 ms doubled per retry, times a jitter factor in [0.5, 1): 0.75 here
  assert.deepEqual(waits, [375, 750]);
});

Deno.test("openai: waits are capped, also when Retry-After asks for longer", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi((_, n) =>
    n === 1
      ? openaiError(503, "busy", { "retry-after": "3600" })
      : n === 2
      ? openaiError(503, "busy")
      : openaiCompletion("ok")
  );
  const { waits, sleep } = sleepRecorder();
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
    sleep,
    random: () => 0.5,
    retryBaseMs: 50_000,
  });
  await provider.dispatch(request("p"));
  // Retry-After 3600 s waits the cap; the second backoff (100 s) is capped to 60 s, then jittered.
  assert.deepEqual(waits, [60_000, 45_000]);
});

Deno.test("Retry-After is read as seconds, as an HTTP date against the clock, or from retry-after-ms", () => {
  const now = Date.parse("2025-01-01T00:00:00Z");
  assert.equal(retryAfterMs(new Headers({ "retry-after": "2" }), now), 2000);
  assert.equal(retryAfterMs(new Headers({ "retry-after": "1.5" }), now), 1500);
  assert.equal(
    retryAfterMs(new Headers({ "retry-after": "Wed, 01 Jan 2025 00:00:05 GMT" }), now),
    5000,
  );
  assert.equal(
    retryAfterMs(new Headers({ "retry-after": "Tue, 31 Dec 2024 23:00:00 GMT" }), now),
    0,
    "a date in the past means now",
  );
  assert.equal(
    retryAfterMs(new Headers({ "retry-after-ms": "250", "retry-after": "9" }), now),
    250,
  );
  assert.equal(retryAfterMs(new Headers({ "retry-after": "soon" }), now), undefined);
  assert.equal(retryAfterMs(new Headers(), now), undefined);
});

Deno.test("openai: a 429 that never ends fails after maxRetries+1 attempts with a clear error", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() => openaiError(429, "Rate limit reached for requests"));
  const { waits, sleep } = sleepRecorder();
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
    sleep,
    random: () => 0,
  });
  const error = await provider.dispatch(request("p")).catch((e) => e);
  assert.ok(error instanceof SvcError);
  assert.equal(error.code, "provider_failed");
  assert.equal(
    error.message,
    "Cannot dispatch to openai: the API answered 429 Too Many Requests after 4 attempts: " +
      "Rate limit reached for requests (requests)",
  );
  assert.equal(api.seen.length, 4);
  assert.deepEqual(waits, [250, 500, 1000]);
});

Deno.test("openai: a 400 fails at once with the API's own message, without retrying", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() =>
    Response.json({
      error: {
        message: "Invalid value for 'model': 'nope'.",
        type: "invalid_request_error",
        param: "model",
        code: null,
      },
    }, { status: 400 })
  );
  const { waits, sleep } = sleepRecorder();
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "nope",
    sleep,
  });
  await assert.rejects(provider.dispatch(request("p")), {
    name: "SvcError",
    message: "Cannot dispatch to openai: the API answered 400 Bad Request: " +
      "Invalid value for 'model': 'nope'. (invalid_request_error)",
  });
  assert.equal(api.seen.length, 1);
  assert.deepEqual(waits, []);
});

Deno.test("openai: a 401 says not authenticated, names the key's variable, and never shows the key", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() =>
    openaiError(401, `Incorrect API key provided: ${KEY}. You can find your API key at ...`)
  );
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
  });
  const error = await provider.dispatch(request("p")).catch((e) => e);
  assert.ok(error instanceof SvcError);
  assert.equal(
    error.message,
    "Cannot dispatch to openai: not authenticated (check SVC_TEST_KEY); the API answered 401 Unauthorized",
  );
  assert.equal(error.code, "provider_unauthenticated");
  assert.ok(!JSON.stringify({ m: error.message, s: error.stack }).includes(KEY));
  assert.equal(api.seen.length, 1);
});

Deno.test("openai: the API's words never carry the key into an error message", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() => openaiError(422, `cannot use key ${KEY} for this`));
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
  });
  const error = await provider.dispatch(request("p")).catch((e) => e);
  assert.ok(error instanceof SvcError);
  assert.ok(!error.message.includes(KEY));
  assert.match(error.message, /422 Unprocessable Entity: cannot use key \[redacted\] for this/);
});

Deno.test("openai: without its key variable a call fails before any request, naming the variable", async () => {
  using _key = withEnv(OPENAI_ENV, undefined);
  await using api = await localApi(() => openaiCompletion("never"));
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
  });
  await assert.rejects(provider.dispatch(request("p")), {
    code: "provider_unauthenticated",
    message: "Cannot dispatch to openai: SVC_TEST_KEY is not set",
  });
  assert.equal(api.seen.length, 0);
});

Deno.test("openai: with apiKeyEnv null no key is needed and no Authorization header is sent", async () => {
  await using api = await localApi(() => openaiCompletion("local"));
  const provider = openaiCompatibleProvider({
    name: "local",
    baseUrl: api.url,
    apiKeyEnv: null,
    model: "m",
  });
  assert.deepEqual(await provider.probe!(), { available: true, reason: "no API key needed" });
  const result = await provider.dispatch(request("p"));
  assert.equal(result.provider, "local");
  assert.equal(api.seen[0]!.headers.get("authorization"), null);
});

Deno.test("openai: aborting mid-stream rejects promptly with the signal's reason", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  const hold = Promise.withResolvers<void>();
  const firstChunkSent = Promise.withResolvers<void>();
  await using api = await localApi(() => {
    const first = OPENAI_STREAM.split("\n\n").slice(0, 2).join("\n\n") + "\n\n";
    const encoder = new TextEncoder();
    let sent = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (!sent) {
          sent = true;
          controller.enqueue(encoder.encode(first));
          firstChunkSent.resolve();
          return;
        }
        await hold.promise;
        controller.close();
      },
      cancel() {
        hold.resolve();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  const { waits, sleep } = sleepRecorder();
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
    stream: true,
    sleep,
  });
  const controller = new AbortController();
  const call = provider.dispatch(request("p", { signal: controller.signal }));
  await firstChunkSent.promise;
  await new Promise((resolve) => setTimeout(resolve, 20));
  const reason = new Error("the run stopped");
  const t0 = performance.now();
  controller.abort(reason);
  const error = await call.catch((e) => e);
  assert.equal(error, reason);
  assert.ok(performance.now() - t0 < 1000, "rejected promptly");
  assert.equal(api.seen.length, 1, "an abort is never retried");
  assert.deepEqual(waits, []);
  hold.resolve();
});

Deno.test("openai: aborting during a backoff wait rejects at once", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() => openaiError(429, "slow down", { "retry-after": "30" }));
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
  });
  const controller = new AbortController();
  const call = provider.dispatch(request("p", { signal: controller.signal }));
  setTimeout(() => controller.abort(new Error("cancelled")), 100);
  const t0 = performance.now();
  await assert.rejects(call, { message: "cancelled" });
  assert.ok(performance.now() - t0 < 2000);
  assert.equal(api.seen.length, 1);
});

Deno.test("openai: an attempt that outlives timeoutMs is retried, then fails naming the limit", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(async () => {
    // Answers long after the client has given up on this request.
    await new Promise((resolve) => setTimeout(resolve, 400));
    return openaiCompletion("too late");
  });
  const { waits, sleep } = sleepRecorder();
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
    timeoutMs: 100,
    maxRetries: 1,
    sleep,
    random: () => 0,
  });
  await assert.rejects(provider.dispatch(request("p")), {
    message: "Cannot dispatch to openai: the API did not answer within 0.1 s after 2 attempts",
  });
  assert.equal(api.seen.length, 2);
  assert.deepEqual(waits, [250]);
});

Deno.test("openai: a refused connection is retried, then fails saying the connection failed", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  let port: number;
  {
    await using gone = await localApi(() => openaiCompletion("x"));
    port = gone.port;
  }
  const { waits, sleep } = sleepRecorder();
  const provider = openaiCompatibleProvider({
    baseUrl: `http://127.0.0.1:${port}`,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
    maxRetries: 2,
    sleep,
    random: () => 0,
  });
  const error = await provider.dispatch(request("p")).catch((e) => e);
  assert.ok(error instanceof SvcError);
  assert.match(
    error.message,
    /^Cannot dispatch to openai: the connection to the API failed after 3 attempts: /,
  );
  assert.deepEqual(waits, [250, 500]);
});

Deno.test("openai: probe is available when the key variable is set, and makes no request", async () => {
  await using api = await localApi(() => openaiCompletion("never"));
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
  });
  {
    using _key = withEnv(OPENAI_ENV, KEY);
    assert.deepEqual(await provider.probe!(), { available: true, reason: "SVC_TEST_KEY is set" });
  }
  {
    using _key = withEnv(OPENAI_ENV, "");
    assert.deepEqual(await provider.probe!(), {
      available: false,
      reason: "SVC_TEST_KEY is not set",
    });
  }
  {
    using _key = withEnv(OPENAI_ENV, undefined);
    assert.deepEqual(await provider.probe!(), {
      available: false,
      reason: "SVC_TEST_KEY is not set",
    });
  }
  assert.equal(api.seen.length, 0);
  const byDefault = openaiCompatibleProvider({ baseUrl: api.url, model: "m" });
  using _none = withEnv("OPENAI_API_KEY", undefined);
  assert.deepEqual(await byDefault.probe!(), {
    available: false,
    reason: "OPENAI_API_KEY is not set",
  });
});

// ---------------------------------------------------------------------------------------------
// Anthropic Messages

const ANTHROPIC_EVENTS: Record<string, unknown>[] = [
  {
    type: "message_start",
    message: {
      id: "msg_01",
      type: "message",
      role: "assistant",
      content: [],
      model: "claude-stream",
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 25, output_tokens: 1 },
    },
  },
  { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
  { type: "ping" },
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello" } },
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: ", wörld ✓" } },
  { type: "content_block_stop", index: 0 },
  {
    type: "message_delta",
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: 15 },
  },
  { type: "message_stop" },
];

Deno.test("anthropic: a call POSTs to /v1/messages with x-api-key and anthropic-version, text from the text blocks", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi(() =>
    anthropicMessage([
      { type: "text", text: "Part one. " },
      { type: "tool_use" },
      { type: "text", text: "Part two." },
    ])
  );
  const provider = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "claude-default",
  });
  assert.equal(provider.name, "anthropic");
  assert.equal(provider.kind, "api");
  const result = await provider.dispatch(request("Explain", { history: HISTORY }));
  assert.deepEqual(result, {
    output: "Part one. Part two.",
    usage: { input_tokens: 20, output_tokens: 8 },
    cost_usd: null,
    provider: "anthropic",
    model: "claude-test-2025",
    session_id: null,
  });
  const seen = api.seen[0]!;
  assert.equal(seen.path, "/v1/messages");
  assert.equal(seen.headers.get("x-api-key"), KEY);
  assert.equal(seen.headers.get("anthropic-version"), "2023-06-01");
  assert.equal(seen.headers.get("content-type"), "application/json");
  assert.equal(seen.headers.get("authorization"), null);
  assert.deepEqual(seen.body, {
    model: "claude-default",
    max_tokens: 4096,
    messages: [...HISTORY, { role: "user", content: "Explain" }],
  });
});

Deno.test("anthropic: a schema call puts the schema in a system prompt asking for bare JSON", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi(() => anthropicMessage([{ type: "text", text: '{"ok":true}' }]));
  const provider = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "c",
    maxTokens: 512,
    anthropicVersion: "2099-01-01",
  });
  const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] };
  const result = await provider.dispatch(request("Check", { options: { schema } }));
  assert.equal(result.output, '{"ok":true}');
  const { body, headers } = api.seen[0]!;
  assert.equal(body.max_tokens, 512);
  assert.equal(headers.get("anthropic-version"), "2099-01-01");
  assert.equal(typeof body.system, "string");
  const system = String(body.system);
  assert.match(system, /JSON/);
  assert.ok(system.includes(JSON.stringify(schema, null, 2)), "the schema is in the system prompt");
});

Deno.test("anthropic: streaming reads the events (CRLF framing, split writes) with usage from message_start and message_delta", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi(() =>
    sseResponse(anthropicStream(ANTHROPIC_EVENTS, "\r\n"), { size: 3 })
  );
  const provider = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "c",
    stream: true,
  });
  const result = await provider.dispatch(request("Hi"));
  assert.equal(result.output, "Hello, wörld ✓");
  assert.deepEqual(result.usage, { input_tokens: 25, output_tokens: 15 });
  assert.equal(result.model, "claude-stream");
  assert.equal(api.seen[0]!.body.stream, true);
});

Deno.test("anthropic: an overloaded_error inside the stream is retried; an invalid_request_error is not", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  const overloaded = anthropicStream([
    ANTHROPIC_EVENTS[0]!,
    { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
  ]);
  await using api = await localApi((_, n) =>
    sseResponse(n === 1 ? overloaded : anthropicStream(ANTHROPIC_EVENTS))
  );
  const { waits, sleep } = sleepRecorder();
  const provider = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "c",
    stream: true,
    sleep,
    random: () => 0,
  });
  assert.equal((await provider.dispatch(request("Hi"))).output, "Hello, wörld ✓");
  assert.equal(api.seen.length, 2);
  assert.deepEqual(waits, [250]);

  const invalid = anthropicStream([
    ANTHROPIC_EVENTS[0]!,
    { type: "error", error: { type: "invalid_request_error", message: "bad thing" } },
  ]);
  await using api2 = await localApi(() => sseResponse(invalid));
  const provider2 = anthropicProvider({
    baseUrl: api2.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "c",
    stream: true,
    sleep,
  });
  await assert.rejects(provider2.dispatch(request("Hi")), {
    message:
      "Cannot dispatch to anthropic: the stream reported an error: bad thing (invalid_request_error)",
  });
  assert.equal(api2.seen.length, 1);
});

Deno.test("anthropic: 529 overloaded with Retry-After waits as asked, then succeeds", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi((_, n) =>
    n === 1
      ? new Response(
        JSON.stringify({
          type: "error",
          error: { type: "overloaded_error", message: "Overloaded" },
        }),
        { status: 529, headers: { "retry-after": "2", "content-type": "application/json" } },
      )
      : anthropicMessage([{ type: "text", text: "done" }])
  );
  const { waits, sleep } = sleepRecorder();
  const provider = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "c",
    sleep,
  });
  assert.equal((await provider.dispatch(request("p"))).output, "done");
  assert.deepEqual(waits, [2000]);
  assert.equal(api.seen.length, 2);
});

Deno.test("anthropic: a 429 that never ends fails after maxRetries+1 attempts with the API's message", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi(() =>
    anthropicError(429, "rate_limit_error", "Number of request tokens has exceeded your limit")
  );
  const { sleep } = sleepRecorder();
  const provider = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "c",
    maxRetries: 1,
    sleep,
  });
  await assert.rejects(provider.dispatch(request("p")), {
    message:
      "Cannot dispatch to anthropic: the API answered 429 Too Many Requests after 2 attempts: " +
      "Number of request tokens has exceeded your limit (rate_limit_error)",
  });
  assert.equal(api.seen.length, 2);
});

Deno.test("anthropic: a 400 fails at once with the API's message", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi(() =>
    anthropicError(400, "invalid_request_error", "max_tokens: Field required")
  );
  const { waits, sleep } = sleepRecorder();
  const provider = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "c",
    sleep,
  });
  await assert.rejects(provider.dispatch(request("p")), {
    message: "Cannot dispatch to anthropic: the API answered 400 Bad Request: " +
      "max_tokens: Field required (invalid_request_error)",
  });
  assert.equal(api.seen.length, 1);
  assert.deepEqual(waits, []);
});

Deno.test("anthropic: 401 and 403 say not authenticated, name the variable, and never show the key", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  for (
    const [status, type, reason] of [[401, "authentication_error", "Unauthorized"], [
      403,
      "permission_error",
      "Forbidden",
    ]] as const
  ) {
    await using api = await localApi(() => anthropicError(status, type, `bad key ${KEY}`));
    const provider = anthropicProvider({ baseUrl: api.url, apiKeyEnv: ANTHROPIC_ENV, model: "c" });
    const error = await provider.dispatch(request("p")).catch((e) => e);
    assert.ok(error instanceof SvcError);
    assert.equal(
      error.message,
      `Cannot dispatch to anthropic: not authenticated (check ${ANTHROPIC_ENV}); the API answered ${status} ${reason}`,
    );
    assert.equal(error.code, "provider_unauthenticated");
    assert.ok(!String(error.stack).includes(KEY));
    assert.equal(api.seen.length, 1);
  }
});

Deno.test("anthropic: probe is available when ANTHROPIC_API_KEY (or the configured variable) is set", async () => {
  const provider = anthropicProvider({ model: "c" });
  {
    using _key = withEnv("ANTHROPIC_API_KEY", KEY);
    assert.deepEqual(await provider.probe!(), {
      available: true,
      reason: "ANTHROPIC_API_KEY is set",
    });
  }
  {
    using _key = withEnv("ANTHROPIC_API_KEY", undefined);
    assert.deepEqual(await provider.probe!(), {
      available: false,
      reason: "ANTHROPIC_API_KEY is not set",
    });
    await assert.rejects(provider.dispatch(request("p")), {
      message: "Cannot dispatch to anthropic: ANTHROPIC_API_KEY is not set",
    });
  }
  const custom = anthropicProvider({ model: "c", apiKeyEnv: ANTHROPIC_ENV, name: "claude-api" });
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  assert.deepEqual(await custom.probe!(), { available: true, reason: `${ANTHROPIC_ENV} is set` });
  assert.equal(custom.name, "claude-api");
});

// ---------------------------------------------------------------------------------------------
// The SSE reader

async function sseEvents(chunks: string[]): Promise<SseEvent[]> {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
  const events: SseEvent[] = [];
  for await (const event of readSse(body)) events.push(event);
  return events;
}

Deno.test("the SSE reader handles LF, CRLF and CR endings split anywhere, comments, multi-line data, and drops an unterminated event", async () => {
  const events = await sseEvents([
    ": comment\n",
    "event: one\ndata: a\n",
    "data:b\n\n",
    "data: crlf\r",
    "\n\r\n",
    "data: cr\r\r",
    "id: 7\nretry: 10\ndata: x\n\n",
    "data: never terminated",
  ]);
  assert.deepEqual(events, [
    { event: "one", data: "a\nb" },
    { event: "message", data: "crlf" },
    { event: "message", data: "cr" },
    { event: "message", data: "x" },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Through the engine

Deno.test("a workflow's agent() calls with provider 'openai' reach the API; the journal keeps usage and an unmetered cost", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi((seen) => {
    const messages = seen.body.messages as { role: string; content: string }[];
    const prompt = messages.at(-1)!.content;
    if (seen.headers.get("authorization") !== `Bearer ${KEY}`) {
      return openaiError(401, "no key");
    }
    if (prompt === "give json") {
      return seen.body.response_format
        ? openaiCompletion('{"n": 42}', { prompt_tokens: 30, completion_tokens: 6 })
        : openaiError(400, "expected a response_format");
    }
    return openaiCompletion(`answer to ${prompt}`, { prompt_tokens: 11, completion_tokens: 3 });
  });
  const dispatcher = createDispatcher({
    providers: [openaiCompatibleProvider({ baseUrl: api.url, apiKeyEnv: OPENAI_ENV, model: "m" })],
  });
  assert.deepEqual(dispatcher.providers(), ["fake", "openai"]);
  await using t = await testManager({ dispatcher });
  const script = `
    const a = await agent("first question", { provider: "openai", label: "a" });
    const b = await agent("give json", {
      provider: "openai",
      label: "b",
      schema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
    });
    return { a, b };
  `;
  const started = await t.manager.start({ script }, LOCAL);
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, { a: "answer to first question", b: { n: 42 } });
  assert.deepEqual(status.journal.usage, { input_tokens: 41, output_tokens: 9, cost_usd: null });
  const journal = await t.manager.journal(started.run_id, LOCAL);
  assert.deepEqual(
    journal.map((e) => [e.label, e.outcome, e.provider, e.model, e.usage, e.cost_usd, e.attempts]),
    [
      ["a", "live", "openai", "gpt-test-2025", { input_tokens: 11, output_tokens: 3 }, null, 1],
      ["b", "live", "openai", "gpt-test-2025", { input_tokens: 30, output_tokens: 6 }, null, 1],
    ],
  );
  assert.equal(api.seen.length, 2);
  assert.ok(api.seen.every((s) => s.body.model === "m"));
});

// ---------------------------------------------------------------------------------------------
// The dialect of workflow scripts (issue 10): effort and an agent type's system prompt

Deno.test("openai: effort is sent as reasoning_effort, all five levels as they are, unless the provider turns it off", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() => openaiCompletion("ok"));
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
  });
  const expected = { low: "low", medium: "medium", high: "high", xhigh: "xhigh", max: "max" };
  for (const effort of Object.keys(expected) as Array<keyof typeof expected>) {
    await provider.dispatch(request("p", { options: { effort } }));
    assert.equal(api.seen.at(-1)!.body.reasoning_effort, expected[effort], effort);
  }
  await provider.dispatch(request("p"));
  assert.ok(!("reasoning_effort" in api.seen.at(-1)!.body), "no effort, no field");
  const plain = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
    reasoningEffort: false,
  });
  await plain.dispatch(request("p", { options: { effort: "high" } }));
  assert.ok(!("reasoning_effort" in api.seen.at(-1)!.body), "turned off for a model without it");
});

Deno.test("openai: an agent's system prompt is the first message, before the history", async () => {
  using _key = withEnv(OPENAI_ENV, KEY);
  await using api = await localApi(() => openaiCompletion("ok"));
  const provider = openaiCompatibleProvider({
    baseUrl: api.url,
    apiKeyEnv: OPENAI_ENV,
    model: "m",
  });
  await provider.dispatch(request("Now", { history: HISTORY, system: "You review code." }));
  assert.deepEqual(api.seen[0]!.body.messages, [
    { role: "system", content: "You review code." },
    ...HISTORY,
    { role: "user", content: "Now" },
  ]);
});

Deno.test("anthropic: on a budget-only model effort becomes an extended-thinking budget added to max_tokens; low asks for none", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi(() =>
    anthropicMessage([{ type: "thinking", text: "hmm" }, { type: "text", text: "ok" }])
  );
  const provider = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "claude-sonnet-4-5-20250929",
  });
  const budgets = { medium: 2048, high: 8192, xhigh: 16384, max: 32768 };
  for (const [effort, budget] of Object.entries(budgets)) {
    const result = await provider.dispatch(request("p", { options: { effort: effort as "max" } }));
    assert.equal(result.output, "ok", "thinking blocks are not the answer");
    const body = api.seen.at(-1)!.body;
    assert.deepEqual(body.thinking, { type: "enabled", budget_tokens: budget }, effort);
    assert.equal(body.max_tokens, 4096 + budget, effort);
  }
  await provider.dispatch(request("p", { options: { effort: "low" } }));
  assert.ok(!("thinking" in api.seen.at(-1)!.body));
  assert.equal(api.seen.at(-1)!.body.max_tokens, 4096);
  const plain = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "c",
    thinking: false,
  });
  await plain.dispatch(request("p", { options: { effort: "max" } }));
  assert.ok(!("thinking" in api.seen.at(-1)!.body), "turned off for a model without it");
});

Deno.test("anthropic: an agent's system prompt is the system field, with a schema's instruction after it", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi(() => anthropicMessage([{ type: "text", text: '{"ok":true}' }]));
  const provider = anthropicProvider({ baseUrl: api.url, apiKeyEnv: ANTHROPIC_ENV, model: "c" });
  await provider.dispatch(request("Check", { system: "You review code." }));
  assert.equal(api.seen[0]!.body.system, "You review code.");
  const schema = { type: "object" };
  await provider.dispatch(request("Check", { system: "You review code.", options: { schema } }));
  const system = String(api.seen[1]!.body.system);
  assert.ok(system.startsWith("You review code.\n\nAnswer with a single JSON value"), system);
});

Deno.test("anthropic: current models get adaptive thinking with output_config.effort at every level, with room in max_tokens", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi((seen) =>
    seen.body.stream
      ? sseResponse(anthropicStream(ANTHROPIC_EVENTS))
      : anthropicMessage([{ type: "text", text: "ok" }])
  );
  const provider = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "claude-opus-4-7",
  });
  const room = { low: 0, medium: 2048, high: 8192, xhigh: 16384, max: 32768 };
  for (const [effort, tokens] of Object.entries(room)) {
    await provider.dispatch(request("p", { options: { effort: effort as "max" } }));
    const body = api.seen.at(-1)!.body;
    assert.deepEqual(body.thinking, { type: "adaptive" }, effort);
    assert.deepEqual(body.output_config, { effort }, effort);
    assert.equal(body.max_tokens, 4096 + tokens, effort);
  }
  await provider.dispatch(request("p"));
  assert.ok(!("thinking" in api.seen.at(-1)!.body) && !("output_config" in api.seen.at(-1)!.body));
  const forced = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "claude-opus-4-7",
    thinking: "enabled",
  });
  await forced.dispatch(request("p", { options: { effort: "high" } }));
  assert.deepEqual(api.seen.at(-1)!.body.thinking, { type: "enabled", budget_tokens: 8192 });
  assert.ok(!("output_config" in api.seen.at(-1)!.body));
});

Deno.test("anthropic: a request too large to send unstreamed (effort max) is streamed even when stream is off", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi((seen) =>
    seen.body.stream
      ? sseResponse(anthropicStream(ANTHROPIC_EVENTS))
      : anthropicMessage([{ type: "text", text: "whole" }])
  );
  const provider = anthropicProvider({ baseUrl: api.url, apiKeyEnv: ANTHROPIC_ENV, model: "c" });
  const big = await provider.dispatch(request("p", { options: { effort: "max" } }));
  assert.equal(api.seen[0]!.body.max_tokens, 36_864);
  assert.equal(api.seen[0]!.body.stream, true);
  assert.equal(api.seen[0]!.headers.get("accept"), "text/event-stream");
  assert.equal(big.output, "Hello, wörld ✓");
  const small = await provider.dispatch(request("p", { options: { effort: "xhigh" } }));
  assert.equal(api.seen[1]!.body.max_tokens, 20_480);
  assert.ok(!("stream" in api.seen[1]!.body), "20 480 tokens may go unstreamed");
  assert.equal(small.output, "whole");
});

Deno.test("a streamed answer that keeps sending outlives timeoutMs; one that falls silent is cut", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  const slow = anthropicStream(ANTHROPIC_EVENTS);
  const hold = Promise.withResolvers<void>();
  await using api = await localApi((_, n) =>
    n === 1
      // About 50 writes 10 ms apart: half a second in all, never 150 ms without a byte.
      ? sseResponse(slow, { size: Math.ceil(slow.length / 50), pauseMs: 10 })
      : sseResponse(slow.slice(0, 400), { hold: hold.promise })
  );
  const provider = anthropicProvider({
    baseUrl: api.url,
    apiKeyEnv: ANTHROPIC_ENV,
    model: "c",
    stream: true,
    timeoutMs: 150,
    maxRetries: 0,
  });
  const t0 = performance.now();
  const result = await provider.dispatch(request("p"));
  assert.ok(performance.now() - t0 > 300, "the answer took longer than timeoutMs");
  assert.equal(result.output, "Hello, wörld ✓");
  await assert.rejects(provider.dispatch(request("p")), {
    message: "Cannot dispatch to anthropic: the stream sent nothing for 0.15 s after 1 attempt",
  });
  hold.resolve();
});

Deno.test("the configuration's thinking takes a type that forces it for every model, and refuses other words", async () => {
  using _key = withEnv(ANTHROPIC_ENV, KEY);
  await using api = await localApi(() => anthropicMessage([{ type: "text", text: "ok" }]));
  const settings = (thinking: unknown) =>
    ConfigSchema.parse({
      providers: {
        gateway: {
          type: "anthropic",
          model: "claude-opus-4-7",
          base_url: api.url,
          api_key_env: ANTHROPIC_ENV,
          thinking,
        },
      },
    }).providers.gateway!;
  const sent = [];
  for (const thinking of ["enabled", "adaptive", true, false]) {
    await providerFromConfig("gateway", settings(thinking))!.dispatch(
      request("p", { options: { effort: "medium" } }),
    );
    sent.push(api.seen.at(-1)!.body.thinking);
  }
  assert.deepEqual(sent, [
    { type: "enabled", budget_tokens: 2048 },
    { type: "adaptive" },
    { type: "adaptive" },
    undefined,
  ]);
  assert.throws(() => settings("budget"));
});

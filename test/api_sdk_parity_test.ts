/**
 * svc's model API providers beside the official SDKs (`@anthropic-ai/sdk`, `openai`, pinned in
 * deno.json for the tests only), both against the same local server and the same answers: what
 * each makes of an answer, which requests each sends, which failures each retries.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { anthropicProvider, openaiCompatibleProvider, type Provider } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import type { Effort } from "../src/schemas/mod.ts";
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

const KEY = "sk-test-parity-0123456789abcdef";
const ENV = "SVC_TEST_PARITY_KEY";

function anthropicSdk(baseURL: string, maxRetries = 0): Anthropic {
  return new Anthropic({ apiKey: KEY, baseURL, maxRetries });
}

function openaiSdk(baseURL: string, maxRetries = 0): OpenAI {
  return new OpenAI({ apiKey: KEY, baseURL, maxRetries });
}

/** A stream whose message_delta repeats input_tokens but leaves the cache counters out. */
function cachedStream(delta: Record<string, number>): string {
  return anthropicStream([
    {
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        content: [],
        model: "claude-opus-4-7",
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: 3,
          cache_creation_input_tokens: 1200,
          cache_read_input_tokens: 4000,
          output_tokens: 1,
        },
      },
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } },
    { type: "content_block_stop", index: 0 },
    {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: delta,
    },
    { type: "message_stop" },
  ]);
}

Deno.test("anthropic: streamed usage is what the SDK makes of it when message_delta leaves cache counters out", async () => {
  using _key = withEnv(ENV, KEY);
  const deltas: Record<string, number>[] = [
    { input_tokens: 3, output_tokens: 57 },
    { output_tokens: 57 },
    { input_tokens: 3, cache_read_input_tokens: 4100, output_tokens: 57 },
  ];
  for (const delta of deltas) {
    await using api = await localApi(() => sseResponse(cachedStream(delta), { size: 4096 }));
    const sdk = await anthropicSdk(api.url).messages.stream({
      model: "claude-opus-4-7",
      max_tokens: 1024,
      messages: [{ role: "user", content: "p" }],
    }).finalMessage();
    const svc = await anthropicProvider({
      baseUrl: api.url,
      apiKeyEnv: ENV,
      model: "claude-opus-4-7",
      stream: true,
    }).dispatch(request("p"));
    const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens } = sdk.usage;
    assert.deepEqual(svc.usage, {
      input_tokens: input_tokens + (cache_creation_input_tokens ?? 0) +
        (cache_read_input_tokens ?? 0),
      output_tokens: sdk.usage.output_tokens,
    }, JSON.stringify(delta));
  }
});

Deno.test("anthropic: svc streams exactly the requests the SDK refuses to send unstreamed", async () => {
  using _key = withEnv(ENV, KEY);
  await using api = await localApi((seen) =>
    seen.body.stream
      ? sseResponse(cachedStream({ output_tokens: 5 }), { size: 4096 })
      : anthropicMessage([{ type: "text", text: "ok" }])
  );
  const efforts: (Effort | undefined)[] = [undefined, "low", "medium", "high", "xhigh", "max"];
  // The last one is a cloud's id with a lower limit of its own in the SDK (8192 tokens).
  const models = ["claude-opus-4-7", "claude-sonnet-4-5", "claude-opus-4-1@20250805"];
  const sdk = anthropicSdk(api.url);
  let streamed = 0;
  for (const model of models) {
    for (const maxTokens of [4096, 16_000]) {
      const provider = anthropicProvider({ baseUrl: api.url, apiKeyEnv: ENV, model, maxTokens });
      for (const effort of efforts) {
        await provider.dispatch(request("p", { options: effort ? { effort } : {} }));
        const { stream, ...body } = api.seen.at(-1)!.body;
        // The SDK refuses synchronously: a promise that rejects either way.
        const unstreamed = Promise.resolve().then(() =>
          sdk.messages.create(body as unknown as Anthropic.MessageCreateParamsNonStreaming)
        );
        const what = `${model}, max_tokens ${body.max_tokens}, effort ${effort}`;
        if (stream === true) {
          streamed++;
          await assert.rejects(unstreamed, /Streaming is required/, `${what}: svc streamed`);
        } else {
          assert.equal(stream, undefined);
          await assert.doesNotReject(unstreamed, `${what}: svc did not stream`);
        }
      }
    }
  }
  assert.ok(streamed >= 6, `both kinds were seen (${streamed} streamed)`);
});

Deno.test("anthropic: the models the SDK warns about with thinking.type enabled get adaptive thinking", async () => {
  using _key = withEnv(ENV, KEY);
  await using api = await localApi(() => anthropicMessage([{ type: "text", text: "ok" }]));
  // The SDK's MODELS_TO_WARN_WITH_THINKING_ENABLED, and current models of its Model type; then
  // the ones Claude Code sends a budget (its list of models without adaptive thinking).
  const adaptive = [
    "claude-opus-4-6",
    "claude-mythos-preview",
    "claude-sonnet-4-6",
    "claude-opus-5",
  ];
  const budget = [
    "claude-sonnet-4-5-20250929",
    "claude-haiku-4-5",
    "claude-opus-4-5",
    "claude-opus-4-1@20250805",
    "claude-3-7-sonnet-latest",
  ];
  for (const model of [...adaptive, ...budget]) {
    const provider = anthropicProvider({ baseUrl: api.url, apiKeyEnv: ENV, model });
    await provider.dispatch(request("p", { options: { effort: "high" } }));
    const { thinking } = api.seen.at(-1)!.body as { thinking: { type: string } };
    assert.equal(thinking.type, adaptive.includes(model) ? "adaptive" : "enabled", model);
  }
});

Deno.test("openai: reasoning_effort is what the SDK sends for each level, xhigh and max included", async () => {
  using _key = withEnv(ENV, KEY);
  await using api = await localApi(() =>
    Response.json({
      id: "c",
      object: "chat.completion",
      created: 1,
      model: "gpt-test",
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    })
  );
  const provider = openaiCompatibleProvider({ baseUrl: api.url, apiKeyEnv: ENV, model: "m" });
  const sdk = openaiSdk(api.url);
  const levels: (Effort & OpenAI.ReasoningEffort)[] = ["low", "medium", "high", "xhigh", "max"];
  for (const effort of levels) {
    await sdk.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "p" }],
      reasoning_effort: effort,
    });
    await provider.dispatch(request("p", { options: { effort } }));
    const [bySdk, bySvc] = api.seen.slice(-2);
    assert.equal(bySvc!.body.reasoning_effort, bySdk!.body.reasoning_effort, effort);
  }
});

/** An error answer of either API, with the SDKs told to wait 1 ms before a retry. */
function failing(status: number, headers: Record<string, string>): Response {
  return anthropicError(status, "error", `failed with ${status}`, {
    "retry-after-ms": "1",
    ...headers,
  });
}

const RETRY_CASES: [number, Record<string, string>][] = [
  [400, {}],
  [401, {}],
  [403, {}],
  [404, {}],
  [408, {}],
  [409, {}],
  [422, {}],
  [429, {}],
  [500, {}],
  [503, {}],
  [529, {}],
  [400, { "x-should-retry": "true" }],
  [401, { "x-should-retry": "true" }],
  [429, { "x-should-retry": "false" }],
  [503, { "x-should-retry": "false" }],
];

/** How many requests a client makes, with one retry allowed, when the first answer fails so. */
async function attempts(
  status: number,
  headers: Record<string, string>,
  call: (url: string) => Promise<unknown>,
  ok: () => Response,
): Promise<number> {
  await using api = await localApi((_, n) => n === 1 ? failing(status, headers) : ok());
  await call(api.url).catch(() => {});
  return api.seen.length;
}

async function compareRetries(
  sdkCall: (url: string) => Promise<unknown>,
  svcProvider: (url: string, sleep: (ms: number) => Promise<void>) => Provider,
  ok: () => Response,
): Promise<void> {
  using _key = withEnv(ENV, KEY);
  for (const [status, headers] of RETRY_CASES) {
    const bySdk = await attempts(status, headers, sdkCall, ok);
    const { sleep } = sleepRecorder();
    const bySvc = await attempts(
      status,
      headers,
      (url) => svcProvider(url, sleep).dispatch(request("p")),
      ok,
    );
    assert.equal(bySvc, bySdk, `${status} ${JSON.stringify(headers)}`);
  }
}

Deno.test("anthropic: svc retries exactly the answers the SDK retries (408, 409, 429, 5xx, x-should-retry)", async () => {
  await compareRetries(
    (url) =>
      anthropicSdk(url, 1).messages.create({
        model: "c",
        max_tokens: 16,
        messages: [{ role: "user", content: "p" }],
      }),
    (url, sleep) =>
      anthropicProvider({ baseUrl: url, apiKeyEnv: ENV, model: "c", maxRetries: 1, sleep }),
    () => anthropicMessage([{ type: "text", text: "ok" }]),
  );
});

Deno.test("openai: svc retries exactly the answers the SDK retries (408, 409, 429, 5xx, x-should-retry)", async () => {
  const ok = () =>
    Response.json({
      id: "c",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
    });
  await compareRetries(
    (url) =>
      openaiSdk(url, 1).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "p" }],
      }),
    (url, sleep) =>
      openaiCompatibleProvider({ baseUrl: url, apiKeyEnv: ENV, model: "m", maxRetries: 1, sleep }),
    ok,
  );
});

Deno.test("both: a 401 or 403 the SDKs raise as authentication or permission errors is provider_unauthenticated", async () => {
  using _key = withEnv(ENV, KEY);
  for (const status of [401, 403]) {
    await using api = await localApi(() => failing(status, {}));
    const sdkErrors = await Promise.all([
      anthropicSdk(api.url).messages.create({
        model: "c",
        max_tokens: 16,
        messages: [{ role: "user", content: "p" }],
      }).catch((e) => e),
      openaiSdk(api.url).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "p" }],
      }).catch((e) => e),
    ]);
    assert.ok(sdkErrors[0] instanceof Anthropic.APIError);
    assert.ok(sdkErrors[1] instanceof OpenAI.APIError);
    const expected = status === 401 ? "AuthenticationError" : "PermissionDeniedError";
    assert.deepEqual(sdkErrors.map((e) => e.constructor.name), [expected, expected]);
    const providers = [
      anthropicProvider({ baseUrl: api.url, apiKeyEnv: ENV, model: "c" }),
      openaiCompatibleProvider({ baseUrl: api.url, apiKeyEnv: ENV, model: "m" }),
    ];
    for (const provider of providers) {
      const error = await provider.dispatch(request("p")).catch((e) => e);
      assert.ok(error instanceof SvcError);
      assert.equal(error.code, "provider_unauthenticated", `${provider.name} ${status}`);
    }
  }
});

/**
 * The OpenAI-compatible chat-completions client: OpenAI itself and the many servers and gateways
 * that speak its wire format (`POST {baseUrl}/chat/completions`).
 * @module
 */
import * as z from "zod";
import { SvcError } from "../../errors/mod.ts";
import type { DispatchRequest, DispatchResult, Provider } from "../types.ts";
import {
  type ApiClientOptions,
  apiErrorMessage,
  apiKey,
  type ApiPost,
  chatMessages,
  parseJson,
  postJson,
  probeKey,
  redact,
  RetryableFailure,
  retryPolicy,
  unexpectedShape,
} from "./http.ts";
import { readSse } from "./sse.ts";
import { progressChannel } from "../progress.ts";
import { OPENAI_REASONING_EFFORT } from "../effort.ts";
import type { ModelAliases } from "../model_aliases.ts";

/** Options of {@linkcode openaiCompatibleProvider}. */
export interface OpenAICompatibleOptions extends ApiClientOptions {
  /** Provider name calls route by (`agent(..., {provider})`); default `openai`. */
  name?: string;
  /** The API's base, e.g. `https://api.openai.com/v1`; requests go to `{baseUrl}/chat/completions`. */
  baseUrl: string;
  /**
   * Name of the environment variable holding the API key (read at call time, sent as
   * `Authorization: Bearer`); default `OPENAI_API_KEY`. `null` sends no key (local servers).
   */
  apiKeyEnv?: string | null;
  /** Model used when the request names none. */
  model: string;
  /** Stream the answer (server-sent events); default false. */
  stream?: boolean;
  /** Extra request headers (a gateway's attribution headers, ...); they cannot replace the key's. */
  headers?: Record<string, string>;
  /**
   * Send a call's `effort` as `reasoning_effort` ({@linkcode OPENAI_REASONING_EFFORT}); default
   * true. Models without reasoning refuse the field: set false for them.
   */
  reasoningEffort?: boolean;
  /** Claude Code's aliases this endpoint serves (a gateway to Claude models), as its model ids. */
  modelAliases?: ModelAliases;
}

const UsageSchema = z.object({
  prompt_tokens: z.number().nonnegative(),
  completion_tokens: z.number().nonnegative(),
  /** Reported by some gateways (OpenRouter, ...), in USD. */
  cost: z.number().nonnegative().nullish(),
});

const CompletionSchema = z.object({
  model: z.string().nullish(),
  choices: z.array(z.object({
    message: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }),
  })).min(1, "no choices"),
  usage: UsageSchema.nullish(),
});

const ChunkSchema = z.object({
  model: z.string().nullish(),
  choices: z.array(z.object({
    index: z.number().optional(),
    delta: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }).nullish(),
  })).nullish(),
  usage: UsageSchema.nullish(),
});

/** What one completion came to, streamed or not. */
interface Answer {
  text: string;
  refusal: string;
  model: string | null;
  usage: z.infer<typeof UsageSchema> | null;
}

function readCompletion(post: ApiPost, text: string): Answer {
  const parsed = CompletionSchema.safeParse(parseJson(post, text, "the answer"));
  if (!parsed.success) throw unexpectedShape(post.provider, "the answer", parsed.error);
  const { message } = parsed.data.choices[0]!;
  return {
    text: message.content ?? "",
    refusal: message.refusal ?? "",
    model: parsed.data.model ?? null,
    usage: parsed.data.usage ?? null,
  };
}

async function readStream(post: ApiPost, body: ReadableStream<Uint8Array>): Promise<Answer> {
  const answer: Answer = { text: "", refusal: "", model: null, usage: null };
  for await (const event of readSse(body)) {
    if (event.data === "[DONE]") return answer;
    const json = parseJson(post, event.data, "a chunk of the stream");
    if (typeof json === "object" && json !== null && "error" in json) {
      const message = apiErrorMessage(json);
      throw new SvcError(
        "provider_failed",
        `Cannot dispatch to ${post.provider}: the stream reported an error: ${
          redact(message ?? "unknown error", post.key)
        }`,
      );
    }
    const chunk = ChunkSchema.safeParse(json);
    if (!chunk.success) throw unexpectedShape(post.provider, "a chunk of the stream", chunk.error);
    answer.model ??= chunk.data.model ?? null;
    if (chunk.data.usage) answer.usage = chunk.data.usage;
    for (const choice of chunk.data.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      answer.text += choice.delta?.content ?? "";
      post.progress?.text(choice.delta?.content ?? "");
      answer.refusal += choice.delta?.refusal ?? "";
    }
  }
  throw new RetryableFailure("the stream ended before [DONE]");
}

/**
 * An OpenAI-compatible chat-completions provider (`kind: "api"`). Sends the request's history
 * and prompt as `messages`; a schema call asks for JSON with `response_format: json_schema`
 * and returns the text, which the engine parses and validates. Usage comes from the answer
 * (the last chunk of a stream, thanks to `stream_options.include_usage`); the cost is null
 * (priced by the dispatcher's table) unless the answer carries `usage.cost`. Retries, timeouts
 * and error messages: {@linkcode postWithRetries}. Stateless: `session_id` is always null.
 */
export function openaiCompatibleProvider(options: OpenAICompatibleOptions): Provider {
  const name = options.name ?? "openai";
  const keyEnv = options.apiKeyEnv === undefined ? "OPENAI_API_KEY" : options.apiKeyEnv;
  const policy = retryPolicy(name, options);
  const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const stream = options.stream ?? false;

  async function dispatch(request: DispatchRequest): Promise<DispatchResult> {
    request.signal.throwIfAborted();
    const key = apiKey(name, keyEnv);
    const model = request.model ?? options.model;
    const messages = chatMessages(request);
    const body: Record<string, unknown> = {
      model,
      messages: request.system !== undefined
        ? [{ role: "system", content: request.system }, ...messages]
        : messages,
    };
    const effort = request.options.effort;
    if (effort !== undefined && options.reasoningEffort !== false) {
      body.reasoning_effort = OPENAI_REASONING_EFFORT[effort];
    }
    const schema = request.options.schema;
    if (typeof schema === "object") {
      body.response_format = {
        type: "json_schema",
        json_schema: { name: "result", schema, strict: false },
      };
    }
    // A call under a stall watch streams: its chunks are the progress the watch sees.
    const streamed = stream || (request.options.stallMs ?? 0) > 0;
    if (streamed) {
      body.stream = true;
      body.stream_options = { include_usage: true };
    }
    const headers = new Headers(options.headers);
    if (key !== undefined) headers.set("authorization", `Bearer ${key}`);
    const progress = progressChannel(request.onProgress, { secrets: key ? [key] : [] });
    const post = { provider: name, url, headers, body, keyEnv, key, signal: request.signal };
    const answer = await postJson(
      { ...post, stream: streamed, progress, activity: request.onActivity },
      policy,
      { stream: readStream, document: readCompletion },
    ).finally(() => progress.flush());
    if (answer.text === "" && answer.refusal !== "") {
      throw new SvcError(
        "provider_failed",
        `Cannot dispatch to ${name}: the model refused: ${redact(answer.refusal, key)}`,
      );
    }
    return {
      output: answer.text,
      usage: {
        input_tokens: answer.usage?.prompt_tokens ?? 0,
        output_tokens: answer.usage?.completion_tokens ?? 0,
      },
      cost_usd: answer.usage?.cost ?? null,
      provider: name,
      model: answer.model ?? model,
      session_id: null,
    };
  }

  return {
    name,
    kind: "api",
    ...(options.modelAliases ? { modelAliases: options.modelAliases } : {}),
    dispatch,
    probe: () => Promise.resolve(probeKey(keyEnv)),
  };
}

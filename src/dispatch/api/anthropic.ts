/**
 * The Anthropic Messages client (`POST {baseUrl}/v1/messages`).
 * @module
 */
import * as z from "zod";
import { SvcError } from "../../errors/mod.ts";
import type { DispatchRequest, DispatchResult, Provider } from "../types.ts";
import type { Effort } from "../../schemas/mod.ts";
import {
  type ApiClientOptions,
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
import { ANTHROPIC_THINKING_BUDGET } from "../effort.ts";
import {
  type AnthropicThinkingType,
  anthropicThinkingType,
  mustStream,
} from "./anthropic_models.ts";
import { ANTHROPIC_MODEL_ALIASES, type ModelAliases } from "../model_aliases.ts";

/** Options of {@linkcode anthropicProvider}. */
export interface AnthropicOptions extends ApiClientOptions {
  /** Provider name calls route by (`agent(..., {provider})`); default `anthropic`. */
  name?: string;
  /** The API's base; default `https://api.anthropic.com` (requests go to `{baseUrl}/v1/messages`). */
  baseUrl?: string;
  /** Name of the environment variable holding the API key (sent as `x-api-key`); default `ANTHROPIC_API_KEY`. */
  apiKeyEnv?: string;
  /** Model used when the request names none. */
  model: string;
  /** `max_tokens` of every request; default 4096. */
  maxTokens?: number;
  /**
   * Stream the answer (server-sent events); default false. A request whose `max_tokens` the SDK
   * refuses to send unstreamed ({@linkcode mustStream}) streams anyway.
   */
  stream?: boolean;
  /** The `anthropic-version` header; default `2023-06-01`. */
  anthropicVersion?: string;
  /** Extra request headers (`anthropic-beta`, ...); they cannot replace the key's or the version. */
  headers?: Record<string, string>;
  /**
   * How a call's `effort` asks for thinking; default true: by the model's name
   * ({@linkcode anthropicThinkingType}), `adaptive` (`output_config.effort`) or `enabled` (a
   * budget, {@linkcode ANTHROPIC_THINKING_BUDGET}). A type forces it for every model (a gateway's
   * names); false sends none, for models without thinking.
   */
  thinking?: boolean | AnthropicThinkingType;
  /**
   * The model ids of Claude Code's aliases (`haiku`, `sonnet`, `opus`), over the defaults
   * ({@linkcode ANTHROPIC_MODEL_ALIASES}).
   */
  modelAliases?: ModelAliases;
}

const UsageSchema = z.object({
  input_tokens: z.number().nonnegative().nullish(),
  output_tokens: z.number().nonnegative().nullish(),
  cache_creation_input_tokens: z.number().nonnegative().nullish(),
  cache_read_input_tokens: z.number().nonnegative().nullish(),
});
type AnthropicUsage = z.infer<typeof UsageSchema>;

const MessageSchema = z.object({
  model: z.string().nullish(),
  content: z.array(z.object({ type: z.string(), text: z.string().nullish() })),
  usage: UsageSchema,
});

const EventSchema = z.object({ type: z.string() });
const MessageStartSchema = z.object({
  message: z.object({ model: z.string().nullish(), usage: UsageSchema.nullish() }),
});
const BlockDeltaSchema = z.object({
  delta: z.object({ type: z.string(), text: z.string().nullish() }),
});
const MessageDeltaSchema = z.object({ usage: UsageSchema.nullish() });
const ErrorEventSchema = z.object({
  error: z.object({ type: z.string(), message: z.string() }),
});

/** Error types inside a stream that a new attempt may cure (the stream forms of 529, 500, 429). */
const RETRYABLE_STREAM_ERRORS = new Set(["overloaded_error", "api_error", "rate_limit_error"]);

/** What one message came to, streamed or not. */
interface Answer {
  text: string;
  model: string | null;
  usage: AnthropicUsage;
}

/** Input tokens of a usage record: uncached, cache writes and cache reads together. */
function inputTokens(usage: AnthropicUsage): number {
  return (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) +
    (usage.cache_read_input_tokens ?? 0);
}

/**
 * A `message_delta`'s usage over the earlier one, field by field as the SDK's `MessageStream`
 * does: each counter is a cumulative whole-message total, left out when it does not apply, so a
 * counter present replaces its earlier value and an absent one keeps it.
 */
function mergeUsage(earlier: AnthropicUsage, later: AnthropicUsage): AnthropicUsage {
  const merged = { ...earlier };
  for (const [field, value] of Object.entries(later) as [keyof AnthropicUsage, number | null][]) {
    if (value !== null && value !== undefined) merged[field] = value;
  }
  return merged;
}

function readMessage(post: ApiPost, text: string): Answer {
  const parsed = MessageSchema.safeParse(parseJson(post, text, "the answer"));
  if (!parsed.success) throw unexpectedShape(post.provider, "the answer", parsed.error);
  const { content, usage, model } = parsed.data;
  return {
    text: content.filter((block) => block.type === "text").map((block) => block.text ?? "").join(
      "",
    ),
    model: model ?? null,
    usage,
  };
}

function parseEvent<T>(post: ApiPost, schema: z.ZodType<T>, json: unknown, type: string): T {
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw unexpectedShape(post.provider, `a ${type} event`, parsed.error);
  return parsed.data;
}

async function readStream(post: ApiPost, body: ReadableStream<Uint8Array>): Promise<Answer> {
  const answer: Answer = { text: "", model: null, usage: {} };
  for await (const event of readSse(body)) {
    const json = parseJson(post, event.data, "an event of the stream");
    const { type } = parseEvent(post, EventSchema, json, event.event);
    switch (type) {
      case "message_start": {
        const { message } = parseEvent(post, MessageStartSchema, json, type);
        answer.model = message.model ?? null;
        answer.usage = message.usage ?? {};
        break;
      }
      case "content_block_delta": {
        const { delta } = parseEvent(post, BlockDeltaSchema, json, type);
        if (delta.type === "text_delta") {
          answer.text += delta.text ?? "";
          post.progress?.text(delta.text ?? "");
        }
        break;
      }
      case "message_delta": {
        const { usage } = parseEvent(post, MessageDeltaSchema, json, type);
        if (usage) answer.usage = mergeUsage(answer.usage, usage);
        break;
      }
      case "message_stop":
        return answer;
      case "error": {
        const { error } = parseEvent(post, ErrorEventSchema, json, type);
        const detail = `${redact(error.message, post.key)} (${error.type})`;
        if (RETRYABLE_STREAM_ERRORS.has(error.type)) {
          throw new RetryableFailure("the stream reported an error", { detail });
        }
        throw new SvcError(
          "provider_failed",
          `Cannot dispatch to ${post.provider}: the stream reported an error: ${detail}`,
        );
      }
      default:
        // ping, content_block_start, content_block_stop and event types yet to come.
        break;
    }
  }
  throw new RetryableFailure("the stream ended before message_stop");
}

/**
 * The request's messages, the prompt split at its `sharedHeadLength` into two text blocks with
 * a prompt-cache breakpoint (`cache_control: ephemeral`) on the head, so that sibling calls
 * sharing the head read it from the cache. Sent as one string when either side would be blank
 * (the API refuses a blank text block).
 */
function anthropicMessages(request: DispatchRequest): unknown[] {
  const messages: unknown[] = chatMessages(request);
  const head = request.options.sharedHeadLength ?? 0;
  const [shared, rest] = [request.prompt.slice(0, head), request.prompt.slice(head)];
  if (!/\S/.test(shared) || !/\S/.test(rest)) return messages;
  messages[messages.length - 1] = {
    role: "user",
    content: [
      { type: "text", text: shared, cache_control: { type: "ephemeral" } },
      { type: "text", text: rest },
    ],
  };
  return messages;
}

/** The system prompt of a schema call: the schema, and the demand for bare JSON. */
function schemaInstruction(schema: Record<string, unknown>): string {
  return [
    "Answer with a single JSON value that is valid against the JSON Schema below, and nothing",
    "else: no prose before or after it, no Markdown code fence.",
    "",
    "JSON Schema:",
    JSON.stringify(schema, null, 2),
  ].join("\n");
}

/**
 * `max_tokens` and the thinking fields of a request. Thinking counts toward `max_tokens`, so its
 * tokens ({@linkcode ANTHROPIC_THINKING_BUDGET}) are added and the answer keeps its own share.
 * Adaptive: `thinking: {type: "adaptive"}` and `output_config: {effort}` at every level, as Claude
 * Code sends; enabled: `thinking: {type: "enabled", budget_tokens}`, none for `low`.
 */
function thinkingFields(
  model: string,
  effort: Effort | undefined,
  options: { maxTokens: number; thinking: AnthropicOptions["thinking"] },
): { max_tokens: number } & Record<string, unknown> {
  const { maxTokens, thinking } = options;
  if (effort === undefined || thinking === false) return { max_tokens: maxTokens };
  const budget = ANTHROPIC_THINKING_BUDGET[effort];
  const type = thinking === true || thinking === undefined
    ? anthropicThinkingType(model)
    : thinking;
  if (type === "adaptive") {
    return {
      max_tokens: maxTokens + (budget ?? 0),
      thinking: { type: "adaptive" },
      output_config: { effort },
    };
  }
  if (budget === null) return { max_tokens: maxTokens };
  return { max_tokens: maxTokens + budget, thinking: { type: "enabled", budget_tokens: budget } };
}

/**
 * An Anthropic Messages provider (`kind: "api"`). Sends the request's history and prompt as
 * `messages`; a schema call gets a system prompt holding the schema and asking for bare JSON,
 * and returns the text, which the engine parses and validates. Text is the concatenation of the
 * answer's `text` blocks (streamed: its `text_delta`s); usage comes from the answer (streamed:
 * `message_start`, then each `message_delta` merged field by field); `effort` asks for thinking
 * ({@linkcode thinkingFields}); a request too large to send unstreamed streams; the cost is null
 * (priced by the dispatcher's table). Retries, timeouts and error messages:
 * {@linkcode postWithRetries}.
 * Stateless: `session_id` is always null.
 */
export function anthropicProvider(options: AnthropicOptions): Provider {
  const name = options.name ?? "anthropic";
  const keyEnv = options.apiKeyEnv ?? "ANTHROPIC_API_KEY";
  const policy = retryPolicy(name, options);
  const url = `${(options.baseUrl ?? "https://api.anthropic.com").replace(/\/+$/, "")}/v1/messages`;
  const stream = options.stream ?? false;
  const maxTokens = options.maxTokens ?? 4096;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new SvcError(
      "invalid_argument",
      `Cannot configure provider '${name}': maxTokens must be a positive integer, got ${maxTokens}`,
    );
  }

  async function dispatch(request: DispatchRequest): Promise<DispatchResult> {
    request.signal.throwIfAborted();
    const key = apiKey(name, keyEnv);
    const model = request.model ?? options.model;
    const fields = thinkingFields(model, request.options.effort, {
      maxTokens,
      thinking: options.thinking,
    });
    const body: Record<string, unknown> = {
      model,
      ...fields,
      messages: anthropicMessages(request),
    };
    const schema = request.options.schema;
    const system = [
      request.system,
      typeof schema === "object" ? schemaInstruction(schema) : undefined,
    ].filter((part) => part !== undefined);
    if (system.length > 0) body.system = system.join("\n\n");
    // A call under a stall watch streams: its chunks are the progress the watch sees.
    const streamed = stream || mustStream(model, fields.max_tokens) ||
      (request.options.stallMs ?? 0) > 0;
    if (streamed) body.stream = true;
    const headers = new Headers(options.headers);
    headers.set("anthropic-version", options.anthropicVersion ?? "2023-06-01");
    if (key !== undefined) headers.set("x-api-key", key);
    const progress = progressChannel(request.onProgress, { secrets: key ? [key] : [] });
    const post = { provider: name, url, headers, body, keyEnv, key, signal: request.signal };
    const answer = await postJson(
      { ...post, stream: streamed, progress, activity: request.onActivity },
      policy,
      { stream: readStream, document: readMessage },
    ).finally(() => progress.flush());
    return {
      output: answer.text,
      usage: {
        input_tokens: inputTokens(answer.usage),
        output_tokens: answer.usage.output_tokens ?? 0,
      },
      cost_usd: null,
      provider: name,
      model: answer.model ?? model,
      session_id: null,
    };
  }

  return {
    name,
    kind: "api",
    modelAliases: { ...ANTHROPIC_MODEL_ALIASES, ...options.modelAliases },
    dispatch,
    probe: () => Promise.resolve(probeKey(keyEnv)),
  };
}

/**
 * The OpenAI Chat Completions API (`POST /v1/chat/completions`), the wire format of opencode's
 * `@ai-sdk/openai-compatible` providers (and of OpenAI-compatible gateways): requests carry a
 * list of `messages` (`system`/`developer`, `user`, `assistant` with `tool_calls`, and `tool`
 * results) and `tools[].function`; replies stream as SSE `chat.completion.chunk` deltas (the
 * text, then each tool call's name and arguments, then the finish reason), a last chunk with
 * the usage when `stream_options.include_usage` asks for it, and `data: [DONE]`; or come as one
 * `chat.completion` when `stream` is not true.
 * @module
 */
import { contentText, type Json, list, record, str } from "./json.ts";
import { openaiError } from "./openai_error.ts";
import { jsonResponse, type SseEvent, sseResponse } from "./sse.ts";
import {
  DEFAULT_USAGE,
  type ModelRequest,
  type Reply,
  type ReplyUsage,
  type ToolResult,
  type WireFormatHandler,
} from "./types.ts";

/** An assistant message's tool calls, as `name(arguments)` for the transcript. */
function callsText(message: Json): string[] {
  return list(message.tool_calls).map((raw) => {
    const fn = record(record(raw).function);
    return `${str(fn.name)}(${str(fn.arguments)})`;
  });
}

interface ReadMessages {
  system: string[];
  prompt: string;
  transcript: string[];
  /** The `tool` messages after the last user or assistant text: this turn's tool results. */
  results: ToolResult[];
}

/** Reads the messages in order: the last user text is the prompt, later tool messages results. */
function readMessages(messages: unknown[]): ReadMessages {
  const read: ReadMessages = { system: [], prompt: "", transcript: [], results: [] };
  for (const raw of messages) {
    const message = record(raw);
    const text = contentText(message.content);
    switch (message.role) {
      case "system":
      case "developer":
        read.system.push(text);
        break;
      case "user":
        read.prompt = text;
        read.results = [];
        read.transcript.push(text);
        break;
      case "assistant":
        read.results = [];
        read.transcript.push(...[text].filter((t) => t !== ""), ...callsText(message));
        break;
      case "tool":
        read.results.push({ id: str(message.tool_call_id), content: text });
        read.transcript.push(text);
        break;
    }
  }
  return read;
}

function read(body: unknown, url: URL, headers: Record<string, string>): ModelRequest {
  const fields = record(body);
  const { system, prompt, transcript, results } = readMessages(list(fields.messages));
  return {
    format: "chat",
    path: url.pathname,
    model: str(fields.model),
    stream: fields.stream === true,
    system: system.filter((text) => text !== "").join("\n"),
    prompt,
    transcript: transcript.join("\n"),
    toolResults: results,
    tools: list(fields.tools).map((tool) => str(record(record(tool).function).name))
      .filter((name) => name !== ""),
    body,
    headers,
  };
}

/**
 * The usage object. The counts go into the format's own fields as they are: `prompt_tokens` is
 * the whole prompt (cache reads are a part of it, in `prompt_tokens_details.cached_tokens`) and
 * `completion_tokens` all output (reasoning is a part of it). Chat Completions has no cache-write
 * counter; gateways that report one use `cache_write_tokens`, written when the reply names it.
 */
function usageOf(usage: ReplyUsage): Json {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: {
      cached_tokens: usage.cacheRead ?? 0,
      ...(usage.cacheWrite !== undefined ? { cache_write_tokens: usage.cacheWrite } : {}),
    },
    completion_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
  };
}

/** The tool calls of a reply in the API's shape, ids made up where the reply names none. */
function toolCallsOf(reply: Reply, id: string): Json[] {
  return (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_${id}_${index}`,
    type: "function",
    function: { name: call.name, arguments: JSON.stringify(call.input) },
  }));
}

function finishReason(reply: Reply): string {
  return (reply.toolCalls ?? []).length > 0 ? "tool_calls" : "stop";
}

let counter = 0;

/** One whole `chat.completion`, for a request that did not ask for a stream. */
function completion(reply: Reply, request: ModelRequest, id: string): Json {
  const calls = toolCallsOf(reply, id);
  return {
    id: `chatcmpl-${id}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: reply.text ?? null,
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      },
      logprobs: null,
      finish_reason: finishReason(reply),
    }],
    usage: usageOf(reply.usage ?? DEFAULT_USAGE),
  };
}

/**
 * The chunks of one streamed reply: the role, the text, each tool call (its id and name, then
 * its arguments), the finish reason, the usage when asked for, `[DONE]`.
 */
function chunks(reply: Reply, request: ModelRequest, id: string): SseEvent[] {
  const base = {
    id: `chatcmpl-${id}`,
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: request.model,
  };
  const chunk = (delta: Json, finish: string | null = null): SseEvent => ({
    data: { ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] },
  });
  const all: SseEvent[] = [chunk({ role: "assistant", content: "" })];
  if (reply.text !== undefined) all.push(chunk({ content: reply.text }));
  toolCallsOf(reply, id).forEach((call, index) => {
    const fn = record(call.function);
    all.push(chunk({
      tool_calls: [{
        index,
        id: call.id,
        type: "function",
        function: { name: fn.name, arguments: "" },
      }],
    }));
    all.push(chunk({ tool_calls: [{ index, function: { arguments: fn.arguments } }] }));
  });
  all.push(chunk({}, finishReason(reply)));
  if (record(record(request.body).stream_options).include_usage === true) {
    all.push({ data: { ...base, choices: [], usage: usageOf(reply.usage ?? DEFAULT_USAGE) } });
  }
  all.push({ data: "[DONE]" });
  return all;
}

/** The Chat Completions format. */
export const OPENAI_CHAT: WireFormatHandler = {
  format: "chat",
  matches: (method, path) => method === "POST" && /^(\/v1)?\/chat\/completions$/.test(path),
  read,
  write(reply, request) {
    const id = `standin${++counter}`;
    if (!request.stream) return jsonResponse(completion(reply, request, id));
    return sseResponse(chunks(reply, request, id), { broken: reply.broken ?? false });
  },
  error: openaiError,
};

/**
 * The Anthropic Messages API as the stand-in serves it: `POST /v1/messages` (Claude Code adds
 * `?beta=true`), streamed as server-sent events (`message_start`, `content_block_start` /
 * `content_block_delta` / `content_block_stop` per text or `tool_use` block, `message_delta`
 * with the stop reason and the output usage, `message_stop`) or answered with one message
 * object; errors as `{type: "error", error: {type, message}}` with the API's error types.
 * @module
 */
import { isRecord, type Json } from "./json.ts";
import { jsonResponse, type SseEvent, sseResponse } from "./sse.ts";
import {
  DEFAULT_USAGE,
  type ModelRequest,
  type Reply,
  type ReplyUsage,
  type ToolResult,
  type WireFormatHandler,
} from "./types.ts";

/** The text of a `content` that is a string or an array of blocks (text blocks only). */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((block) => isRecord(block) && block.type === "text")
    .map((block) => String((block as Json).text ?? "")).join("\n");
}

/**
 * The prompt of a user message: its text without the `<system-reminder>` blocks Claude Code puts
 * in front of what the user typed (they stay in the transcript).
 */
function promptOf(content: unknown): string {
  if (!Array.isArray(content)) return textOf(content);
  return textOf(content.filter((block) =>
    !(isRecord(block) && typeof block.text === "string" &&
      block.text.trimStart().startsWith("<system-reminder>"))
  ));
}

/** The tool results of one message's content blocks. */
function toolResultsOf(content: unknown): ToolResult[] {
  if (!Array.isArray(content)) return [];
  return content.filter((block) => isRecord(block) && block.type === "tool_result")
    .map((block) => {
      const b = block as Json;
      return {
        ...(typeof b.tool_use_id === "string" ? { id: b.tool_use_id } : {}),
        content: textOf(b.content),
        ...(b.is_error === true ? { isError: true } : {}),
      };
    });
}

/** Reads a Messages request body into the common shape. */
function read(body: unknown, url: URL, headers: Record<string, string>): ModelRequest {
  if (!isRecord(body)) throw new Error("the body is not a JSON object");
  const messages = Array.isArray(body.messages) ? body.messages.filter(isRecord) : [];
  const lastUser = messages.findLast((m) => m.role === "user");
  // Claude Code also sends system messages among the others (tool and context changes).
  const systems = [
    body.system,
    ...messages.filter((m) => m.role === "system").map((m) => m.content),
  ];
  const tools = Array.isArray(body.tools) ? body.tools.filter(isRecord) : [];
  return {
    format: "anthropic",
    path: url.pathname,
    model: typeof body.model === "string" ? body.model : "",
    stream: body.stream === true,
    system: systems.map(textOf).filter((t) => t !== "").join("\n"),
    prompt: promptOf(lastUser?.content),
    transcript: messages.filter((m) => m.role !== "system").map((m) => textOf(m.content))
      .filter((t) => t !== "").join("\n"),
    toolResults: toolResultsOf(lastUser?.content),
    tools: tools.flatMap((t) => (typeof t.name === "string" ? [t.name] : [])),
    body,
    headers,
  };
}

/** The content blocks of a reply, as the final message holds them. */
function blocksOf(reply: Reply): Json[] {
  const blocks: Json[] = [];
  if (reply.text !== undefined && reply.text !== "") {
    blocks.push({ type: "text", text: reply.text });
  }
  for (const [i, call] of (reply.toolCalls ?? []).entries()) {
    blocks.push({
      type: "tool_use",
      id: call.id ?? `toolu_standin${String(i).padStart(4, "0")}${crypto.randomUUID().slice(0, 8)}`,
      name: call.name,
      input: call.input,
    });
  }
  return blocks;
}

/** The input-side usage the API reports in `message_start` (and in a whole message). */
function inputUsage(usage: ReplyUsage): Json {
  return {
    input_tokens: usage.input,
    cache_creation_input_tokens: usage.cacheWrite ?? 0,
    cache_read_input_tokens: usage.cacheRead ?? 0,
    service_tier: "standard",
  };
}

function stopReason(reply: Reply): string {
  return (reply.toolCalls ?? []).length > 0 ? "tool_use" : "end_turn";
}

function messageId(): string {
  return `msg_standin${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
}

/** The events of one block: its start, one or more deltas, its stop. */
function blockEvents(block: Json, index: number): SseEvent[] {
  const events: SseEvent[] = [];
  const start = (content_block: Json): SseEvent => ({
    event: "content_block_start",
    data: { type: "content_block_start", index, content_block },
  });
  const delta = (value: Json): SseEvent => ({
    event: "content_block_delta",
    data: { type: "content_block_delta", index, delta: value },
  });
  if (block.type === "text") {
    const text = String(block.text);
    events.push(start({ type: "text", text: "" }));
    // Two deltas, as the API splits text into chunks.
    const half = Math.ceil(text.length / 2);
    for (const part of [text.slice(0, half), text.slice(half)]) {
      if (part !== "") events.push(delta({ type: "text_delta", text: part }));
    }
  } else {
    events.push(start({ type: "tool_use", id: block.id, name: block.name, input: {} }));
    const json = JSON.stringify(block.input);
    const half = Math.ceil(json.length / 2);
    events.push(delta({ type: "input_json_delta", partial_json: "" }));
    for (const part of [json.slice(0, half), json.slice(half)]) {
      if (part !== "") events.push(delta({ type: "input_json_delta", partial_json: part }));
    }
  }
  events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } });
  return events;
}

function streamed(reply: Reply, request: ModelRequest): Response {
  const usage = reply.usage ?? DEFAULT_USAGE;
  const events: SseEvent[] = [{
    event: "message_start",
    data: {
      type: "message_start",
      message: {
        id: messageId(),
        type: "message",
        role: "assistant",
        model: request.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...inputUsage(usage), output_tokens: 1 },
      },
    },
  }, { event: "ping", data: { type: "ping" } }];
  blocksOf(reply).forEach((block, index) => events.push(...blockEvents(block, index)));
  events.push({
    event: "message_delta",
    data: {
      type: "message_delta",
      delta: { stop_reason: stopReason(reply), stop_sequence: null },
      usage: { output_tokens: usage.output },
    },
  }, { event: "message_stop", data: { type: "message_stop" } });
  return sseResponse(events, { broken: reply.broken });
}

function whole(reply: Reply, request: ModelRequest): Response {
  const usage = reply.usage ?? DEFAULT_USAGE;
  return jsonResponse({
    id: messageId(),
    type: "message",
    role: "assistant",
    model: request.model,
    content: blocksOf(reply),
    stop_reason: stopReason(reply),
    stop_sequence: null,
    usage: { ...inputUsage(usage), output_tokens: usage.output },
  });
}

/** The API's error type for an HTTP status. */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 529:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

/** The Anthropic Messages format. */
export const ANTHROPIC: WireFormatHandler = {
  format: "anthropic",
  matches: (method, path) => method === "POST" && path === "/v1/messages",
  read,
  write: (reply, request) => (request.stream ? streamed(reply, request) : whole(reply, request)),
  error: (status, message, headers = {}) =>
    jsonResponse(
      { type: "error", error: { type: anthropicErrorType(status), message } },
      status,
      { "request-id": `req_standin${crypto.randomUUID().slice(0, 8)}`, ...headers },
    ),
};

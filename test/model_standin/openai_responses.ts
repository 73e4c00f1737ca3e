/**
 * The OpenAI Responses API (`POST /v1/responses`), the wire format of Codex: requests carry
 * `instructions` and a list of `input` items (messages of `input_text` parts, earlier
 * `function_call`s and their `function_call_output`s); replies stream as SSE events
 * (`response.created`, `response.output_item.added`/`done`, `response.output_text.delta`,
 * `response.completed` with the usage), or come as one JSON response when `stream` is false.
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

/** A function call's output: a string, or (newer clients) a list of content parts. */
function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  const fields = record(output);
  if (typeof fields.content === "string") return fields.content;
  return contentText(output);
}

/** Each input item as text for the transcript, and the tool results after the last user text. */
function readInput(
  items: unknown[],
): { prompt: string; transcript: string[]; results: ToolResult[] } {
  let prompt = "";
  let results: ToolResult[] = [];
  const transcript: string[] = [];
  for (const raw of items) {
    const item = record(raw);
    const type = str(item.type) || (item.role !== undefined ? "message" : "");
    if (type === "message") {
      const text = contentText(item.content);
      transcript.push(text);
      if (item.role === "user") {
        prompt = text;
        results = [];
      }
    } else if (type === "function_call" || type === "custom_tool_call") {
      transcript.push(`${str(item.name)}(${str(item.arguments) || str(item.input)})`);
    } else if (type === "function_call_output" || type === "custom_tool_call_output") {
      const content = outputText(item.output);
      transcript.push(content);
      const success = record(item.output).success;
      results.push({
        id: str(item.call_id),
        content,
        ...(success === false ? { isError: true } : {}),
      });
    }
  }
  return { prompt, transcript, results };
}

/** The names of the offered tools: function tools by `name`, built-ins by `type`. */
function toolNames(tools: unknown): string[] {
  return list(tools).map((tool) => {
    const fields = record(tool);
    return str(fields.name) || str(fields.type);
  }).filter((name) => name !== "");
}

function read(body: unknown, url: URL, headers: Record<string, string>): ModelRequest {
  const fields = record(body);
  const input = typeof fields.input === "string"
    ? [{ type: "message", role: "user", content: fields.input }]
    : list(fields.input);
  const { prompt, transcript, results } = readInput(input);
  const system = [
    str(fields.instructions),
    ...input.flatMap((raw) => {
      const item = record(raw);
      return item.role === "system" ? [contentText(item.content)] : [];
    }),
  ].filter((text) => text !== "");
  return {
    format: "responses",
    path: url.pathname,
    model: str(fields.model),
    stream: fields.stream === true,
    system: system.join("\n"),
    prompt,
    transcript: transcript.join("\n"),
    toolResults: results,
    tools: toolNames(fields.tools),
    body,
    headers,
  };
}

/**
 * The usage object of a response. The counts go into the format's own fields as they are: in the
 * Responses API `input_tokens` is the whole prompt (cache reads and writes are parts of it, in
 * `input_tokens_details`) and `output_tokens` all output (reasoning is a part of it).
 */
function usageOf(usage: ReplyUsage): Json {
  return {
    input_tokens: usage.input,
    input_tokens_details: {
      cached_tokens: usage.cacheRead ?? 0,
      ...(usage.cacheWrite !== undefined ? { cache_write_tokens: usage.cacheWrite } : {}),
    },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
    total_tokens: usage.input + usage.output,
  };
}

/** The output items of a reply: its message, then its function calls. */
function outputItems(reply: Reply, id: string): Json[] {
  const items: Json[] = [];
  if (reply.text !== undefined) {
    items.push({
      type: "message",
      id: `msg_${id}`,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: reply.text, annotations: [] }],
    });
  }
  (reply.toolCalls ?? []).forEach((call, index) => {
    const callId = call.id ?? `call_${id}_${index}`;
    items.push({
      type: "function_call",
      id: `fc_${id}_${index}`,
      status: "completed",
      name: call.name,
      arguments: JSON.stringify(call.input),
      call_id: callId,
    });
  });
  return items;
}

let counter = 0;

function responseOf(reply: Reply, request: ModelRequest, id: string, status: string): Json {
  return {
    id: `resp_${id}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    model: request.model,
    output: status === "completed" ? outputItems(reply, id) : [],
    ...(status === "completed" ? { usage: usageOf(reply.usage ?? DEFAULT_USAGE) } : {}),
  };
}

/** The stream of one reply: created, each item added (text deltas for a message) and done, completed. */
function events(reply: Reply, request: ModelRequest, id: string): SseEvent[] {
  const all: SseEvent[] = [];
  const push = (type: string, data: Json) => all.push({ event: type, data: { type, ...data } });
  push("response.created", { response: responseOf(reply, request, id, "in_progress") });
  outputItems(reply, id).forEach((item, index) => {
    const added = item.type === "message" ? { ...item, content: [], status: "in_progress" } : item;
    push("response.output_item.added", { output_index: index, item: added });
    if (item.type === "message") {
      push("response.output_text.delta", {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        delta: reply.text ?? "",
      });
    }
    push("response.output_item.done", { output_index: index, item });
  });
  push("response.completed", { response: responseOf(reply, request, id, "completed") });
  return all;
}

/** The Responses format. */
export const OPENAI_RESPONSES: WireFormatHandler = {
  format: "responses",
  matches: (method, path) => method === "POST" && /^(\/v1)?\/responses$/.test(path),
  read,
  write(reply, request) {
    const id = `standin${++counter}`;
    if (!request.stream) return jsonResponse(responseOf(reply, request, id, "completed"));
    return sseResponse(events(reply, request, id), { broken: reply.broken ?? false });
  },
  error: openaiError,
};

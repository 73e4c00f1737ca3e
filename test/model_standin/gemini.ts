/**
 * The Gemini API's wire format, as the Gemini CLI speaks it: `POST
 * /v1beta/models/<model>:generateContent` (one JSON `GenerateContentResponse`) and
 * `:streamGenerateContent?alt=sse` (SSE of response chunks). A request that asks for JSON
 * against a schema (`generationConfig.responseJsonSchema`: the CLI's model router and its
 * next-speaker check) gets a value valid against that schema unless the responder answered
 * with JSON itself: an invalid answer would make the CLI retry for minutes.
 * @module
 */
import { isRecord, type Json, list } from "./json.ts";
import { jsonResponse, type SseEvent, sseResponse } from "./sse.ts";
import {
  DEFAULT_USAGE,
  type ModelRequest,
  type Reply,
  type ToolResult,
  type WireFormatHandler,
} from "./types.ts";

const PATH = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

/** The text parts of a `Content`, joined (thoughts left out). */
function textOf(content: unknown): string {
  if (!isRecord(content)) return "";
  return list(content.parts).flatMap((part) =>
    isRecord(part) && typeof part.text === "string" && part.thought !== true ? [part.text] : []
  ).join("\n");
}

function resultsOf(content: unknown): ToolResult[] {
  if (!isRecord(content)) return [];
  return list(content.parts).flatMap((part) => {
    if (!isRecord(part) || !isRecord(part.functionResponse)) return [];
    const { id, response } = part.functionResponse;
    const error = isRecord(response) && response.error !== undefined;
    return [{
      ...(typeof id === "string" ? { id } : {}),
      content: JSON.stringify(response ?? null),
      ...(error ? { isError: true } : {}),
    }];
  });
}

function toolNames(tools: unknown): string[] {
  return list(tools).flatMap((tool) =>
    isRecord(tool)
      ? list(tool.functionDeclarations).flatMap((d) =>
        isRecord(d) && typeof d.name === "string" ? [d.name] : []
      )
      : []
  );
}

/** The JSON schema a request asks its answer to follow, if any. */
export function responseSchemaOf(body: unknown): unknown {
  const config = isRecord(body) ? body.generationConfig : undefined;
  if (!isRecord(config)) return undefined;
  return config.responseJsonSchema ?? config.responseSchema;
}

/**
 * A value valid against a (simple) JSON schema: every property of an object, an enum's first
 * value, a number's minimum. Enough for the CLI's router (`model_choice`, `complexity_score`)
 * and its next-speaker check (`next_speaker`: `user`, the first value, ends the turn).
 */
export function sampleOf(schema: unknown): unknown {
  if (!isRecord(schema)) return "stand-in";
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const type = String(schema.type ?? (isRecord(schema.properties) ? "object" : "string"))
    .toLowerCase();
  if (type === "object") {
    const properties = isRecord(schema.properties) ? schema.properties : {};
    return Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, sampleOf(v)]));
  }
  if (type === "array") {
    const min = typeof schema.minItems === "number" ? schema.minItems : 0;
    return Array.from({ length: min }, () => sampleOf(schema.items));
  }
  if (type === "number" || type === "integer") {
    return typeof schema.minimum === "number" ? schema.minimum : 1;
  }
  if (type === "boolean") return false;
  return "stand-in";
}

function isJson(text: string | undefined): boolean {
  if (text === undefined) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function usageMetadata(reply: Reply): Json {
  const usage = reply.usage ?? DEFAULT_USAGE;
  const thoughts = usage.reasoning ?? 0;
  return {
    promptTokenCount: usage.input,
    candidatesTokenCount: usage.output,
    ...(usage.cacheRead !== undefined ? { cachedContentTokenCount: usage.cacheRead } : {}),
    ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
    totalTokenCount: usage.input + usage.output + thoughts,
  };
}

function partsOf(reply: Reply, request: ModelRequest): Json[] {
  const schema = responseSchemaOf(request.body);
  const text = schema !== undefined && reply.toolCalls === undefined && !isJson(reply.text)
    ? JSON.stringify(sampleOf(schema))
    : reply.text;
  return [
    ...(text !== undefined && text !== "" ? [{ text }] : []),
    ...(reply.toolCalls ?? []).map((call, i) => ({
      functionCall: { id: call.id ?? `call_${i + 1}`, name: call.name, args: call.input },
    })),
  ];
}

function chunk(parts: Json[], extra: Json, request: ModelRequest): Json {
  return {
    candidates: [{ content: { role: "model", parts }, index: 0, ...extra }],
    modelVersion: request.model,
    responseId: "stand-in",
  };
}

const STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
};

/** The Gemini `generateContent` format. */
export const GEMINI_FORMAT: WireFormatHandler = {
  format: "gemini",
  matches: (method, path) => method === "POST" && PATH.test(path),
  read(body, url, headers): ModelRequest {
    const [, model, method] = PATH.exec(url.pathname)!;
    const json = isRecord(body) ? body : {};
    const contents = list(json.contents).filter(isRecord);
    // The latest user text: a request that carries tool results still shows the prompt.
    const lastUser = contents.findLast((c) => c.role !== "model" && textOf(c) !== "");
    return {
      format: "gemini",
      path: url.pathname,
      model: decodeURIComponent(model!),
      stream: method === "streamGenerateContent",
      system: textOf(json.systemInstruction),
      prompt: textOf(lastUser),
      transcript: contents.map(textOf).join("\n"),
      toolResults: resultsOf(contents.at(-1)),
      tools: toolNames(json.tools),
      body,
      headers,
    };
  },
  write(reply, request) {
    const parts = partsOf(reply, request);
    const done = { finishReason: "STOP" };
    if (!request.stream) {
      return jsonResponse({ ...chunk(parts, done, request), usageMetadata: usageMetadata(reply) });
    }
    // One chunk per part, the last one with the finish reason and the usage, as the API does.
    const events: SseEvent[] = parts.map((part, i) => ({
      data: i === parts.length - 1
        ? { ...chunk([part], done, request), usageMetadata: usageMetadata(reply) }
        : chunk([part], {}, request),
    }));
    if (events.length === 0) {
      events.push({ data: { ...chunk([], done, request), usageMetadata: usageMetadata(reply) } });
    }
    return sseResponse(events, { broken: reply.broken });
  },
  error(status, message, headers = {}) {
    return jsonResponse(
      { error: { code: status, message, status: STATUS[status] ?? "UNKNOWN" } },
      status,
      headers,
    );
  },
};

/**
 * What the tests of the model API providers share: a local API on 127.0.0.1 that records each
 * request, answers in the wire formats, and test doubles for the environment and the waits.
 */
import type { DispatchRequest } from "../src/dispatch/mod.ts";
import { platform } from "../src/platform/mod.ts";
import type { AgentOptions } from "../src/schemas/mod.ts";

/** Sets (or with undefined, removes) an environment variable until disposed. */
export function withEnv(name: string, value: string | undefined): Disposable {
  const before = Deno.env.get(name);
  if (value === undefined) Deno.env.delete(name);
  else Deno.env.set(name, value);
  return {
    [Symbol.dispose]() {
      if (before === undefined) Deno.env.delete(name);
      else Deno.env.set(name, before);
    },
  };
}

/** One request as the local API saw it. */
export interface Seen {
  method: string;
  path: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** A local API on 127.0.0.1: records every request and answers through `answer` (n counts from 1). */
export async function localApi(
  answer: (seen: Seen, n: number) => Response | Promise<Response>,
): Promise<{ url: string; port: number; seen: Seen[] } & AsyncDisposable> {
  const seen: Seen[] = [];
  const server = await platform().serve(async (request) => {
    const record: Seen = {
      method: request.method,
      path: new URL(request.url).pathname,
      headers: request.headers,
      body: await request.json(),
    };
    seen.push(record);
    return await answer(record, seen.length);
  }, { hostname: "127.0.0.1", port: 0 });
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port,
    seen,
    [Symbol.asyncDispose]: () => server.close(),
  };
}

/** A server-sent-event answer whose bytes go out in pieces of `size` bytes, one write each. */
export function sseResponse(
  text: string,
  options: { size?: number; hold?: Promise<void>; pauseMs?: number } = {},
): Response {
  const bytes = new TextEncoder().encode(text);
  const size = options.size ?? 7;
  let offset = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset >= bytes.length) {
        if (options.hold) await options.hold;
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(offset, offset + size));
      offset += size;
      await new Promise((resolve) => setTimeout(resolve, options.pauseMs ?? 1));
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

/** Records the waits between attempts instead of waiting. */
export function sleepRecorder(): { waits: number[]; sleep: (ms: number) => Promise<void> } {
  const waits: number[] = [];
  return {
    waits,
    sleep: (ms) => {
      waits.push(ms);
      return Promise.resolve();
    },
  };
}

/** A dispatch request with no options and a signal that never aborts, unless `extra` says. */
export function request(
  prompt: string,
  extra: Partial<DispatchRequest> & { options?: AgentOptions } = {},
): DispatchRequest {
  return { prompt, options: {}, signal: new AbortController().signal, ...extra };
}
/** An Anthropic Messages answer (one JSON document) with these content blocks and usage. */
export function anthropicMessage(
  content: { type: string; text?: string }[],
  usage = { input_tokens: 20, output_tokens: 8 },
): Response {
  return Response.json({
    id: "msg_01",
    type: "message",
    role: "assistant",
    model: "claude-test-2025",
    content,
    stop_reason: "end_turn",
    stop_sequence: null,
    usage,
  });
}

/** An Anthropic error answer: `{type: "error", error: {type, message}}` with this status. */
export function anthropicError(
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return Response.json({ type: "error", error: { type, message }, request_id: "req_1" }, {
    status,
    headers,
  });
}

/** Anthropic Messages events as server-sent-event text, each named by its type. */
export function anthropicStream(events: Record<string, unknown>[], eol = "\n"): string {
  return events.map((e) => `event: ${e.type}${eol}data: ${JSON.stringify(e)}${eol}${eol}`).join(
    "",
  );
}

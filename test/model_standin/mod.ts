/**
 * A stand-in for the model APIs of the real coding-agent command lines, on 127.0.0.1: Anthropic
 * Messages, OpenAI Responses, OpenAI Chat Completions and Gemini `generateContent`, streamed or
 * not. A test scripts the replies with a responder that sees each request read into one shape
 * ({@linkcode ModelRequest}); every request is logged, so that a test can assert what the tool
 * sent. Requests no format serves are logged and answered 404.
 * @module
 */
import { FORMATS } from "./formats.ts";
import { jsonResponse } from "./sse.ts";
import type { ModelRequest, Responder, WireFormatHandler } from "./types.ts";

export type * from "./types.ts";
export { DEFAULT_USAGE } from "./types.ts";

/** One request the stand-in received. */
export interface LoggedRequest {
  method: string;
  path: string;
  /** The query string, without `?`. */
  query: string;
  headers: Record<string, string>;
  /** The body as parsed JSON, or its text when it is not JSON. */
  body: unknown;
  /** The request read by its format; absent for paths no format serves. */
  model?: ModelRequest;
}

/** A running stand-in. */
export interface ModelStandIn extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  url: string;
  port: number;
  /** Every request so far, oldest first. */
  requests: LoggedRequest[];
  /** The model requests so far (those a format served), oldest first. */
  modelRequests(): ModelRequest[];
  /** Replaces the responder. */
  respond(responder: Responder): void;
  close(): Promise<void>;
}

/** Answers every request with a short text. */
const ECHO: Responder = (request) => ({ text: `echo: ${request.prompt.slice(0, 200)}` });

function headersOf(request: Request): Record<string, string> {
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => (headers[name] = value));
  return headers;
}

async function bodyOf(request: Request): Promise<unknown> {
  const text = await request.text();
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Holds a request open until its client goes away or the stand-in closes. The close matters:
 * a killed client's connection can sit in CLOSE-WAIT unnoticed, and the server's shutdown
 * waits for every open request.
 */
function hang(signal: AbortSignal): Promise<Response> {
  return new Promise((resolve) => {
    const end = () => resolve(new Response(null, { status: 499 }));
    if (signal.aborted) return end();
    signal.addEventListener("abort", end, { once: true });
  });
}

/** An event stream that sends nothing and ends only when its client goes away. */
function silentStream(signal: AbortSignal): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const end = () => {
        try {
          controller.close();
        } catch {
          // The client cancelled it first.
        }
      };
      if (signal.aborted) return end();
      signal.addEventListener("abort", end, { once: true });
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

async function serveModel(
  format: WireFormatHandler,
  model: ModelRequest,
  responder: Responder,
  signal: AbortSignal,
): Promise<Response> {
  const reply = await responder(model);
  if (reply.hang) return hang(signal);
  if (reply.stall) return silentStream(signal);
  if (reply.error) {
    const { status, message, headers } = reply.error;
    return format.error(status, message ?? `stand-in error ${status}`, headers);
  }
  return format.write(reply, model);
}

/** Starts a stand-in on a free port of 127.0.0.1; `responder` answers every model request. */
export function startModelStandIn(responder: Responder = ECHO): ModelStandIn {
  let current = responder;
  const requests: LoggedRequest[] = [];
  const closing = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const url = new URL(request.url);
      const headers = headersOf(request);
      const body = await bodyOf(request);
      const logged: LoggedRequest = {
        method: request.method,
        path: url.pathname,
        query: url.search.replace(/^\?/, ""),
        headers,
        body,
      };
      requests.push(logged);
      const format = FORMATS.find((f) => f.matches(request.method, url.pathname));
      if (!format) return jsonResponse({ error: `the stand-in serves no ${url.pathname}` }, 404);
      try {
        logged.model = format.read(body, url, headers);
      } catch (error) {
        return format.error(400, `the stand-in could not read the request: ${error}`);
      }
      try {
        const signal = AbortSignal.any([request.signal, closing.signal]);
        return await serveModel(format, logged.model, current, signal);
      } catch (error) {
        return format.error(500, `the stand-in's responder failed: ${error}`);
      }
    },
  );
  const port = server.addr.port;
  const close = () => {
    closing.abort();
    return server.shutdown();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    modelRequests: () => requests.flatMap((r) => (r.model ? [r.model] : [])),
    respond: (next) => (current = next),
    close,
    [Symbol.asyncDispose]: close,
  };
}

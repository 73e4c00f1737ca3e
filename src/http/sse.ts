/**
 * Server-sent events as a web-standard `Response`: `retry:` first, then one event per item of
 * a source (each with its `id:`, `event:` and one line of JSON `data:`), a keep-alive comment
 * while the source is quiet, and the source stopped as soon as the client goes away.
 * @module
 */
import { toSvcError } from "../errors/mod.ts";

/** One event of a stream. */
export interface SseEvent {
  /** Its id: what the client sends back as `Last-Event-ID` to continue after it. */
  id?: string;
  /** Its type, the `event:` field (a name without spaces or line breaks). */
  event: string;
  /** Its payload, sent as one line of JSON. */
  data: unknown;
}

/** Options of {@linkcode sseResponse}. */
export interface SseOptions {
  /** The request's signal: the client going away stops the source. */
  signal?: AbortSignal;
  /** Milliseconds between keep-alive comments while no event comes. Default 15000. */
  keepAliveMs?: number;
  /** The reconnection delay asked of clients, in ms (`retry:`). Default 2000. */
  retryMs?: number;
  /** Headers added to the response (CORS is added by the middleware). */
  headers?: Record<string, string>;
  /** Called once when the stream ends, however: gives back the caller's stream slot. */
  release?: () => void;
}

const encoder = new TextEncoder();

/** An event's bytes; the field values cannot hold a line break, so a source cannot forge fields. */
function frame(event: SseEvent): Uint8Array {
  const name = event.event.replace(/[\r\n]/g, "");
  const id = event.id === undefined ? "" : `id: ${event.id.replace(/[\r\n]/g, "")}\n`;
  // JSON.stringify escapes line breaks inside strings, so the data is one line.
  return encoder.encode(`${id}event: ${name}\ndata: ${JSON.stringify(event.data)}\n\n`);
}

/**
 * A `text/event-stream` response over the events `source` yields. The source gets a signal
 * that aborts when the client disconnects (or `options.signal` aborts) and should end then.
 * An error thrown by the source goes to the client as a last `error` event holding the API
 * error object (an internal one says nothing more), and the stream ends.
 */
export function sseResponse(
  source: (signal: AbortSignal) => AsyncIterable<SseEvent>,
  options: SseOptions = {},
): Response {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  const iterator = source(stop.signal)[Symbol.asyncIterator]();
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  let finished = false;
  const finish = () => {
    if (!finished) options.release?.();
    finished = true;
    clearInterval(keepAlive);
    options.signal?.removeEventListener("abort", onAbort);
    stop.abort();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(`retry: ${options.retryMs ?? 2000}\n\n`));
      keepAlive = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(": keep-alive\n\n"));
        } catch {
          finish();
        }
      }, options.keepAliveMs ?? 15_000);
    },
    async pull(controller) {
      try {
        const next = await iterator.next();
        if (next.done || stop.signal.aborted) {
          finish();
          controller.close();
          return;
        }
        controller.enqueue(frame(next.value));
      } catch (error) {
        const failure = toSvcError(error);
        controller.enqueue(frame({
          event: "error",
          data: { error: { status: failure.status, code: failure.code, message: failure.message } },
        }));
        finish();
        controller.close();
      }
    },
    async cancel() {
      finish();
      await iterator.return?.();
    },
  }, { highWaterMark: 0 });
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-store",
      "x-accel-buffering": "no",
      ...options.headers,
    },
  });
}

/**
 * Server-sent events for the stand-in's streamed replies: every format streams as SSE.
 * @module
 */

/** One event: an optional `event:` name and a JSON `data:` payload (or a raw string). */
export interface SseEvent {
  event?: string;
  data: unknown;
}

/**
 * A streamed response of `events`. With `broken`, only the first half of the events is sent
 * and the stream then errors, so the client sees a connection that breaks mid-answer.
 */
export function sseResponse(
  events: readonly SseEvent[],
  options: { broken?: boolean; headers?: Record<string, string> } = {},
): Response {
  const encoder = new TextEncoder();
  const sent = options.broken
    ? events.slice(0, Math.max(1, Math.floor(events.length / 2)))
    : events;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const { event, data } of sent) {
        const payload = typeof data === "string" ? data : JSON.stringify(data);
        const head = event !== undefined ? `event: ${event}\n` : "";
        controller.enqueue(encoder.encode(`${head}data: ${payload}\n\n`));
      }
      if (options.broken) controller.error(new Error("the stand-in broke the stream"));
      else controller.close();
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      ...options.headers,
    },
  });
}

/** A JSON response. */
export function jsonResponse(
  value: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

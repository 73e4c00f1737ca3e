/**
 * A run's or a task's event feed as server-sent events, resumable: `Last-Event-ID` (or the
 * `after` query parameter) continues exactly after that event; an id the feed does not hold
 * gets a `reset` event first (re-read the status), then the feed from its start; a stream
 * that already ended answers 204, which tells an `EventSource` not to reconnect.
 * @module
 */
import type { EventStream, FeedItem, FeedOpening, FeedOpenOptions } from "../services/mod.ts";
import type { RouteContext } from "./route_context.ts";
import { sseResponse } from "./sse.ts";

/** The id a client resumes from: a number, `invalid` for one that cannot be ours, or none. */
export function lastEventId(request: Request): number | "invalid" | undefined {
  const header = request.headers.get("last-event-id") ??
    new URL(request.url).searchParams.get("after") ?? undefined;
  if (header === undefined || header === "") return undefined;
  if (!/^\d{1,15}$/.test(header)) return "invalid";
  return Number(header);
}

/** The feed options of a request: where its reader resumes, as {@linkcode lastEventId} reads it. */
export function resumeOf(request: Request): FeedOpenOptions {
  const after = lastEventId(request);
  return after === undefined ? {} : { after };
}

/**
 * The name of an event on the wire: a run event's `type`; a task's `state`, `approval` or
 * `progress`.
 */
export function eventName(event: FeedItem["event"]): string {
  if ("type" in event) return event.type;
  if (event.approval) return "approval";
  return event.progress ? "progress" : "state";
}

/**
 * The SSE response of one feed as the streams service opened it (visible to the caller, its
 * slot taken): 204 for a feed the reader saw end, else a `reset` event first when the
 * reader's position was not the feed's, then the feed's events.
 */
export function feedResponse(
  context: RouteContext,
  stream: EventStream,
  opening: FeedOpening,
): Response {
  if (opening.ended) return new Response(null, { status: 204 });
  const { reset, items } = opening;
  return sseResponse(async function* (signal) {
    if (reset) {
      yield {
        event: "reset",
        data: {
          reason: "the last event id is not in this stream: read the status again",
          stream: stream.kind,
          id: stream.id,
        },
      };
    }
    for await (const item of items.follow(signal)) {
      yield { id: String(item.seq), event: eventName(item.event), data: item.event };
    }
    // Not request.signal: Deno aborts it once a response is sent, and warns about it. A client
    // that goes away cancels the body stream, which stops the source.
  }, { signal: context.signal, ...context.sse, release: items.release });
}

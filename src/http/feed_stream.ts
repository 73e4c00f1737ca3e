/**
 * A run's or a task's event feed as server-sent events, resumable: `Last-Event-ID` (or the
 * `after` query parameter) continues exactly after that event; an id the feed does not hold
 * gets a `reset` event first (re-read the status), then the feed from its start; a stream
 * that already ended answers 204, which tells an `EventSource` not to reconnect.
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import { type Caller, endsStream, type EventStream, type FeedItem } from "../services/mod.ts";
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

/** The name of an event on the wire: a run event's `type`; a task's `state`, or `approval`. */
export function eventName(event: FeedItem["event"]): string {
  if ("type" in event) return event.type;
  return "approval" in event && event.approval ? "approval" : "state";
}

async function itemAt(
  context: RouteContext,
  stream: EventStream,
  caller: Caller,
  seq: number,
): Promise<FeedItem | undefined> {
  const items = context.services.events.follow(stream, caller, {
    ...(seq > 0 ? { after: seq - 1 } : {}),
    follow: false,
  });
  try {
    for await (const item of items) return item;
    return undefined;
  } finally {
    await items.return(undefined);
  }
}

/**
 * The SSE response of one feed for `caller`. The stream must exist and be the caller's
 * (checked before, so that the answer is a 404 and not an empty stream).
 */
export async function feedResponse(
  context: RouteContext,
  stream: EventStream,
  options: { caller: Caller; request: Request },
): Promise<Response> {
  const { caller, request } = options;
  const last = lastEventId(request);
  let after: number | undefined;
  let reset = false;
  if (last === "invalid") {
    reset = true;
  } else if (last !== undefined) {
    const item = await itemAt(context, stream, caller, last);
    if (item === undefined || item.seq !== last) reset = true;
    else if (endsStream(item.event)) return new Response(null, { status: 204 });
    else after = last;
  }
  const feed = context.services.events;
  // Admission: a remote owner's open streams are capped (rate_limited, 429).
  const release = context.services.admission.openStream(caller);
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
    for await (const item of feed.follow(stream, caller, { after, signal })) {
      yield { id: String(item.seq), event: eventName(item.event), data: item.event };
    }
    // Not request.signal: Deno aborts it once a response is sent, and warns about it. A client
    // that goes away cancels the body stream, which stops the source.
  }, { signal: context.signal, ...context.sse, release });
}

/** The not-found error of a run or task id the caller cannot see. */
export function noSuch(kind: "run" | "task" | "session", id: string): SvcError {
  const shown = JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}...` : id);
  return new SvcError("not_found", `Cannot find ${kind} ${shown}: no such ${kind}`);
}

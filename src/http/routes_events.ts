/**
 * `GET /api/events`: the caller's general event stream. Every state change of its runs and
 * tasks (the owner's activity stream) and every change of its board cards, as they happen,
 * resumable: an event's id is `<activity position>.<board position>` (-1 for none yet), so a
 * reconnect with `Last-Event-ID` continues after both. `?from=now` skips the history: the stream
 * opens with a `ready` event whose id is the current position, so that a page which has just
 * read its lists follows only what changes after.
 * @module
 */
import { createRoute, z } from "@hono/zod-openapi";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import type { GeneralItem } from "../services/mod.ts";
import { errors, sseContent } from "./route_parts.ts";
import { type SseEvent, sseResponse } from "./sse.ts";

const eventsRoute = createRoute({
  method: "get",
  path: "/api/events",
  summary: "The caller's event stream: runs, tasks and board cards changing",
  description:
    "Events `run` and `task` ({seq, at, kind, id, state, name?, code?, limit?}: a run or " +
    "task entered a state), `approval` ({seq, at, kind, id, state, run_id?, task_id?}: a call " +
    "or dispatch started waiting for a person) and `card` (a board change: {seq, at, action, issue_id, owner, by, state}). Each " +
    "id is `<activity seq>.<board seq>`; resume with `Last-Event-ID` (or `?after=`). The " +
    "stream does not end.",
  request: {
    query: z.object({
      from: z.enum(["start", "now"]).optional().meta({
        description: "`start` (default) replays the history first; `now` opens with a `ready` " +
          "event carrying the current position and sends only later changes. A " +
          "`Last-Event-ID` header wins over it.",
      }),
      after: z.string().max(40).optional().meta({
        description: "as the `Last-Event-ID` header, for clients that cannot set it",
      }),
    }),
  },
  responses: {
    200: { description: "the event stream", content: sseContent() },
    ...errors(),
  },
});

/** The positions a general-stream id names, or undefined for one that is not such an id. */
function positions(id: string | null): { activity: number; board: number } | undefined {
  const match = id === null ? null : /^(-1|\d{1,15})\.(-1|\d{1,15})$/.exec(id);
  if (!match) return undefined;
  return { activity: Number(match[1]), board: Number(match[2]) };
}

/** The frame of one item of the general stream: its id is the positions to resume after. */
function frameOf(item: GeneralItem): SseEvent {
  const id = `${item.at.activity}.${item.at.board}`;
  if (item.kind === "ready") return { id, event: "ready", data: { from: "now" } };
  if (item.kind === "activity") return { id, event: item.event.kind, data: item.event };
  return { id, event: "card", data: item.change };
}

/** The sub-app of `GET /api/events`. */
export function eventRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();

  app.openapi(eventsRoute, (c) => {
    const given = c.req.header("last-event-id") ?? c.req.query("after") ?? null;
    const at = positions(given);
    const fromNow = at === undefined && c.req.valid("query").from === "now";
    const reset = !fromNow && given !== null && given !== "" && at === undefined;
    // Opening takes one of the owner's stream slots: rate_limited (429) past the cap.
    const stream = context.services.streams.general(c.get("caller"), {
      ...(at ? { after: at } : {}),
      fromNow,
    });
    return sseResponse(async function* (signal): AsyncGenerator<SseEvent> {
      if (reset) {
        yield {
          event: "reset",
          data: { reason: "the last event id is not one of this stream's: starting over" },
        };
      }
      for await (const item of stream.follow(signal)) yield frameOf(item);
    }, { signal: context.signal, ...context.sse, release: stream.release });
  });

  return app;
}

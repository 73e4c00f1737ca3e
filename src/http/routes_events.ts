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
import { mergeSources } from "./merge.ts";
import { errors, sseContent } from "./route_parts.ts";
import { type SseEvent, sseResponse } from "./sse.ts";

const eventsRoute = createRoute({
  method: "get",
  path: "/api/events",
  summary: "The caller's event stream: runs, tasks and board cards changing",
  description:
    "Events `run` and `task` ({seq, at, kind, id, state, name?}: a run or task entered a " +
    "state) and `card` (a board change: {seq, at, action, issue_id, owner, by, state}). Each " +
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

/** The sub-app of `GET /api/events`. */
export function eventRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  const { events, board } = context.services;

  app.openapi(eventsRoute, (c) => {
    const caller = c.get("caller");
    const given = c.req.header("last-event-id") ?? c.req.query("after") ?? null;
    const at = positions(given);
    const reset = given !== null && given !== "" && at === undefined;
    const fromNow = at === undefined && c.req.valid("query").from === "now";
    let activity = at?.activity ?? -1;
    let changes = at?.board ?? -1;
    // Admission: a remote owner's open streams are capped (rate_limited, 429).
    const release = context.services.admission.openStream(caller);
    return sseResponse(async function* (signal): AsyncGenerator<SseEvent> {
      if (fromNow) {
        activity = await events.activityHead(caller);
        changes = await board.head();
        yield { id: `${activity}.${changes}`, event: "ready", data: { from: "now" } };
      } else if (reset) {
        yield {
          event: "reset",
          data: { reason: "the last event id is not one of this stream's: starting over" },
        };
      }
      const merged = mergeSources(
        events.activity(caller, { ...(activity >= 0 ? { after: activity } : {}), signal }),
        board.changes(caller, { ...(changes >= 0 ? { after: changes } : {}), signal }),
      );
      for await (const item of merged) {
        if (item.from === "a") {
          activity = item.value.seq;
          yield { id: `${activity}.${changes}`, event: item.value.kind, data: item.value };
        } else {
          changes = item.value.seq;
          yield { id: `${activity}.${changes}`, event: "card", data: item.value };
        }
      }
    }, { signal: context.signal, ...context.sse, release });
  });

  return app;
}

/**
 * One call's live output over HTTP: `GET /api/workflow/{run_id}/calls/{seq}/events`. As JSON,
 * a page of the output recorded so far (`after` pages on); with `Accept: text/event-stream`,
 * the same batches as server-sent events, followed live until the call ends (a last `done`
 * event). The owner is the token's; another owner's run answers 404 like an unknown id.
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { CallEventsResultSchema } from "../schemas/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { errors, jsonContent, sseContent } from "./route_parts.ts";
import { RunIdParamSchema } from "./schemas.ts";
import { sseResponse } from "./sse.ts";

/** Most progress batches one JSON page may ask for. */
const PAGE_LIMIT = 500;

const CallParamSchema = RunIdParamSchema.extend({
  seq: z.coerce.number().int("must be a whole number").min(1).max(1_000_000).meta({
    param: { name: "seq", in: "path" },
    example: 1,
  }),
});

const CallEventsQuerySchema = z.object({
  after: z.coerce.number().int("must be a whole number").min(0).max(Number.MAX_SAFE_INTEGER)
    .optional().meta({
      description: "the feed_seq of the last batch seen: the batches after it (default: all)",
    }),
  limit: z.coerce.number().int("must be a whole number").min(1).max(PAGE_LIMIT).optional()
    .meta({ description: `batches per page, 1 to ${PAGE_LIMIT} (default ${PAGE_LIMIT})` }),
});

const callEventsRoute = createRoute({
  method: "get",
  path: "/api/workflow/{run_id}/calls/{seq}/events",
  summary: "One call's live output: text, tool uses, files changed, errors",
  description: 'The call\'s recorded progress (docs/API.md, "Live output"), redacted and bounded ' +
    "per call. As JSON: a page of batches after `after` and whether the call has ended. With " +
    "`Accept: text/event-stream`: `progress` events (id: the batch's feed_seq; resume with " +
    "`Last-Event-ID` or `?after=`), followed live until the call ends, then one `done` event. " +
    "A replayed call has none.",
  request: { params: CallParamSchema, query: CallEventsQuerySchema },
  responses: {
    200: {
      description: "the call's output",
      content: { ...jsonContent(CallEventsResultSchema), ...sseContent() },
    },
    ...errors(400, 404, 429),
  },
});

/** Whether the request asks for server-sent events. */
function wantsStream(request: Request): boolean {
  return (request.headers.get("accept") ?? "").includes("text/event-stream");
}

/** The position a stream resumes after: `Last-Event-ID` when it is a position, else `after`. */
function resumeAfter(request: Request, after: number | undefined): number | undefined {
  const last = request.headers.get("last-event-id");
  return last !== null && /^\d{1,15}$/.test(last) ? Number(last) : after;
}

/** The sub-app of a call's live output. */
export function callEventRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  app.openapi(callEventsRoute, async (c) => {
    const { run_id, seq } = c.req.valid("param");
    const { after, limit } = c.req.valid("query");
    const caller = c.get("caller");
    if (!wantsStream(c.req.raw)) {
      const page = await context.services.runs.callEvents(run_id, seq, caller, {
        ...(after !== undefined ? { after } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
      return c.json(page, 200);
    }
    const from = resumeAfter(c.req.raw, after);
    const stream = await context.services.streams.callFeed(caller, run_id, seq, {
      ...(from !== undefined ? { after: from } : {}),
    });
    return sseResponse(async function* (signal) {
      for await (const batch of stream.follow(signal)) {
        yield { id: String(batch.feed_seq), event: "progress", data: batch };
      }
      yield { event: "done", data: { run_id, seq } };
    }, { signal: context.signal, ...context.sse, release: stream.release });
  });
  return app;
}

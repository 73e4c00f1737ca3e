/**
 * Memory search, reviews and collaborations over HTTP: full-text search over the caller's
 * cards, tasks and runs; review runs of the bundled review workflow (start, list, detail); the
 * record of agent-to-agent exchanges.
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { HITS_LIMIT, QUERY_LIMIT } from "../memory/mod.ts";
import { ReviewStartRequestSchema } from "../reviews/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { noSuch } from "../services/mod.ts";
import { errors, jsonContent } from "./route_parts.ts";
import {
  pageOf,
  PageQuerySchema,
  RunIdParamSchema,
  RunStateSchema,
  RunStatusSchema,
} from "./schemas.ts";

const MemoryQuerySchema = z.object({
  q: z.string().max(QUERY_LIMIT, `must be at most ${QUERY_LIMIT} characters`).meta({
    description: "the words to look for",
  }),
  limit: z.coerce.number().int("must be a whole number").min(1).max(HITS_LIMIT).optional(),
  kinds: z.string().max(20).regex(
    /^(card|task|run)(,(card|task|run))*$/,
    "must be some of card, task, run, separated by commas",
  ).optional().meta({ description: "only these kinds, e.g. card,run" }),
});

const MemoryHitSchema = z.object({
  kind: z.enum(["card", "task", "run"]),
  id: z.string(),
  title: z.string(),
  snippet: z.string(),
  score: z.number(),
  at: z.string(),
}).meta({ id: "MemoryHit" });

const ReviewSummarySchema = z.looseObject({
  run_id: z.string(),
  owner: z.string(),
  state: RunStateSchema,
  ended_at: z.string().nullable(),
  findings: z.number().nullable(),
}).meta({ id: "ReviewSummary" });

const FindingSchema = z.looseObject({
  path: z.string(),
  severity: z.string(),
  message: z.string(),
}).meta({ id: "Finding" });

const ReviewDetailSchema = z.object({
  run: RunStatusSchema,
  review: z.looseObject({ run_id: z.string() }),
  findings: z.array(FindingSchema).nullable(),
}).meta({ id: "ReviewDetail" });

const CollaborationSchema = z.looseObject({
  collaboration_id: z.string(),
  owner: z.string(),
  direction: z.enum(["inbound", "outbound"]),
  peer: z.string(),
  state: z.string(),
  started_at: z.string(),
  updated_at: z.string(),
}).meta({ id: "Collaboration" });

const searchRoute = createRoute({
  method: "get",
  path: "/api/memory/search",
  summary: "Full-text search over the caller's board cards, task results and run results",
  request: { query: MemoryQuerySchema },
  responses: {
    200: {
      description: "the hits, best first",
      content: jsonContent(z.object({ hits: z.array(MemoryHitSchema) })),
    },
    ...errors(400),
  },
});

const reviewsRoute = createRoute({
  method: "get",
  path: "/api/reviews",
  summary: "The caller's review runs, newest first",
  request: { query: PageQuerySchema },
  responses: {
    200: {
      description: "a page of reviews",
      content: jsonContent(pageOf("reviews", ReviewSummarySchema)),
    },
    ...errors(400),
  },
});

const startReviewRoute = createRoute({
  method: "post",
  path: "/api/reviews",
  summary: "Start a review run over the git diff of a working directory",
  request: { body: { required: true, content: jsonContent(ReviewStartRequestSchema) } },
  responses: {
    202: {
      description: "the review run was recorded and starts",
      content: jsonContent(z.object({ run_id: z.string(), state: RunStateSchema })),
    },
    ...errors(400, 503),
  },
});

const reviewRoute = createRoute({
  method: "get",
  path: "/api/reviews/{run_id}",
  summary: "A review run with its findings",
  request: { params: RunIdParamSchema },
  responses: {
    200: { description: "the review", content: jsonContent(ReviewDetailSchema) },
    ...errors(404),
  },
});

const collaborationsRoute = createRoute({
  method: "get",
  path: "/api/collaborations",
  summary: "Agent-to-agent collaboration records, newest first",
  request: { query: PageQuerySchema },
  responses: {
    200: {
      description: "a page of collaborations",
      content: jsonContent(pageOf("collaborations", CollaborationSchema)),
    },
    ...errors(400),
  },
});

/** The sub-app of memory search, review and collaboration routes. */
export function memoryRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  const { memory, reviews, collaborations } = context.services;

  app.openapi(searchRoute, async (c) => {
    const query = c.req.valid("query");
    const kinds = query.kinds?.split(",") as Array<"card" | "task" | "run"> | undefined;
    return c.json(
      await memory.search(c.get("caller"), {
        q: query.q,
        ...(query.limit !== undefined ? { limit: query.limit } : {}),
        ...(kinds ? { kinds: [...new Set(kinds)] } : {}),
      }),
      200,
    );
  });

  app.openapi(reviewsRoute, async (c) => {
    const query = c.req.valid("query");
    const page = await reviews.list(c.get("caller"), {
      ...(query.limit !== undefined ? { limit: query.limit } : {}),
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    });
    return c.json({ reviews: page.items, next_cursor: page.next_cursor }, 200);
  });

  app.openapi(startReviewRoute, async (c) => {
    const run = await reviews.start(c.req.valid("json"), c.get("caller"));
    return c.json({ run_id: run.run_id, state: run.state }, 202);
  });

  app.openapi(reviewRoute, async (c) => {
    const { run_id } = c.req.valid("param");
    const review = await reviews.get(run_id, c.get("caller"));
    if (!review) throw noSuch("run", run_id);
    return c.json(review, 200);
  });

  app.openapi(collaborationsRoute, async (c) => {
    const query = c.req.valid("query");
    const page = await collaborations.list(c.get("caller"), {
      ...(query.limit !== undefined ? { limit: query.limit } : {}),
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    });
    return c.json({ collaborations: page.items, next_cursor: page.next_cursor }, 200);
  });

  return app;
}

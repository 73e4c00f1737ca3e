/**
 * The board over HTTP: the write entry of the specification (`POST /api/board/write`, a dry
 * run unless `mode` is `apply`), the list of the caller's cards and one card. All three go to
 * the board service, as `svc board` and the tool protocol do.
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import {
  BoardCardSchema,
  BoardListResultSchema,
  BoardWriteRequestSchema,
  BoardWriteResultSchema,
  CardStateSchema,
  refuseBoardDir,
} from "../schemas/mod.ts";
import { CardRunSchema } from "./schemas.ts";
import type { MiddlewareHandler } from "hono";
import type { DashboardEnv } from "./env.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { errors, jsonContent } from "./route_parts.ts";
import { PageQuerySchema } from "./schemas.ts";
import { SvcError } from "../errors/mod.ts";
import { cardRuns } from "../services/mod.ts";

/** `board_dir` is refused (403) before the body is validated: the server fixes the directory. */
const noBoardDir: MiddlewareHandler<DashboardEnv> = async function noBoardDir(c, next) {
  refuseBoardDir(await c.req.json().catch(() => undefined));
  await next();
};

const writeRoute = createRoute({
  method: "post",
  path: "/api/board/write",
  summary: "Write to the board: new, take, log, done, drop, cancel",
  description:
    "`mode` `dry_run` (the default) answers exactly what `apply` would write and persists " +
    "nothing. A body holding `board_dir` answers 403: the board directory is the server's.",
  middleware: [noBoardDir] as const,
  request: { body: { required: true, content: jsonContent(BoardWriteRequestSchema) } },
  responses: {
    200: {
      description: "what was (or would be) written",
      content: jsonContent(BoardWriteResultSchema),
    },
    ...errors(400, 404, 409),
  },
});

const listRoute = createRoute({
  method: "get",
  path: "/api/board",
  summary: "The caller's board cards, newest first",
  request: {
    query: PageQuerySchema.extend({
      state: CardStateSchema.optional().meta({ description: "only cards in this state" }),
    }),
  },
  responses: {
    200: { description: "a page of cards", content: jsonContent(BoardListResultSchema) },
    ...errors(400),
  },
});

const cardRoute = createRoute({
  method: "get",
  path: "/api/board/{issue_id}",
  summary: "One card with its log",
  request: {
    params: z.object({
      issue_id: z.string().max(32).meta({ param: { name: "issue_id", in: "path" }, example: "12" }),
    }),
  },
  responses: {
    200: { description: "the card", content: jsonContent(BoardCardSchema) },
    ...errors(404),
  },
});

/** The sub-app of board routes. */
const cardRunsRoute = createRoute({
  method: "get",
  path: "/api/board/{issue_id}/runs",
  summary:
    "The runs that worked on a card (started with its `card_id`), newest first, as they are now",
  description:
    "The card must be the caller's (another owner's answers 404, as an unknown card); a linked " +
    "run the caller may not see is left out. A run names its card in `card_id`.",
  request: { params: cardRoute.request!.params! },
  responses: {
    200: {
      description: "the card's runs",
      content: jsonContent(z.object({ runs: z.array(CardRunSchema) })),
    },
    ...errors(404),
  },
});

export function boardRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  const { board } = context.services;

  app.openapi(writeRoute, async (c) => {
    return c.json(await board.write(c.req.valid("json"), c.get("caller")), 200);
  });

  app.openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    return c.json(
      await board.list(c.get("caller"), {
        ...(query.limit !== undefined ? { limit: query.limit } : {}),
        ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
        ...(query.state !== undefined ? { state: query.state } : {}),
      }),
      200,
    );
  });

  app.openapi(cardRoute, async (c) => {
    const { issue_id } = c.req.valid("param");
    const card = await board.get(issue_id, c.get("caller"));
    if (!card) {
      throw new SvcError("not_found", `Cannot find card ${JSON.stringify(issue_id)}: no such card`);
    }
    return c.json(card, 200);
  });

  app.openapi(cardRunsRoute, async (c) => {
    const { issue_id } = c.req.valid("param");
    return c.json({ runs: await cardRuns(context.services, issue_id, c.get("caller")) }, 200);
  });

  return app;
}

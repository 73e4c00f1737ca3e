/**
 * Sessions over HTTP: list, detail (with an API session's messages), create.
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { SessionCreateSchema } from "../schemas/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { errors, jsonContent, nextCursor } from "./route_parts.ts";
import { pageOf, PageQuerySchema, SessionIdParamSchema, SessionSchema } from "./schemas.ts";

const SessionDetailSchema = SessionSchema.extend({
  messages: z.array(z.looseObject({ role: z.string(), content: z.string() })),
}).meta({ id: "SessionDetail" });

const listRoute = createRoute({
  method: "get",
  path: "/api/sessions",
  summary: "List the caller's sessions, newest first",
  request: { query: PageQuerySchema },
  responses: {
    200: {
      description: "a page of sessions",
      content: jsonContent(pageOf("sessions", SessionSchema)),
    },
    ...errors(400),
  },
});

const detailRoute = createRoute({
  method: "get",
  path: "/api/sessions/{session_id}",
  summary: "A session by id or name, with an API session's messages",
  request: { params: SessionIdParamSchema },
  responses: {
    200: { description: "the session", content: jsonContent(SessionDetailSchema) },
    ...errors(404),
  },
});

const createSessionRoute = createRoute({
  method: "post",
  path: "/api/sessions",
  summary: "Create a session",
  request: { body: { required: true, content: jsonContent(SessionCreateSchema) } },
  responses: {
    201: { description: "the new session", content: jsonContent(SessionSchema) },
    ...errors(400, 409),
  },
});

/** The sub-app of session routes. */
export function sessionRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  const { sessions } = context.services;

  app.openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    const limit = query.limit ?? 100;
    const list = await sessions.list(c.get("caller"), {
      limit,
      ...(query.cursor ? { before: query.cursor } : {}),
    });
    return c.json({
      sessions: list,
      next_cursor: nextCursor(list, limit, (s) => s.session_id),
    }, 200);
  });

  app.openapi(detailRoute, async (c) => {
    return c.json(await sessions.get(c.req.valid("param").session_id, c.get("caller")), 200);
  });

  app.openapi(createSessionRoute, async (c) => {
    return c.json(await sessions.create(c.req.valid("json"), c.get("caller")), 201);
  });

  return app;
}

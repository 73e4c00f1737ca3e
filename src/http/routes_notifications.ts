/**
 * The caller's notifications over HTTP: a page of them (newest first, with the unread count)
 * and marking them read. Only the caller's own owner's, whoever asks.
 * @module
 */
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { MarkReadRequestSchema } from "../schemas/mod.ts";
import { NOTIFICATION_LIMITS } from "../services/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { errors, jsonContent } from "./route_parts.ts";
import { PageQuerySchema } from "./schemas.ts";

/** A notification as listed. */
export const NotificationSchema = z.looseObject({
  id: z.string().meta({
    description: "`ntf_<owner digest>_<seq>`: the idempotency id of its deliveries",
  }),
  seq: z.number().int().meta({ description: "its position in the owner's activity stream" }),
  at: z.string().meta({ description: "when it happened (ISO 8601)" }),
  kind: z.enum(["failed", "limit", "approval"]).meta({
    description:
      "ended badly (failed, timeout, interrupted), hit a budget or a limit, or waits for a person",
  }),
  subject: z.enum(["run", "task"]),
  run_id: z.string().optional(),
  task_id: z.string().optional(),
  approval_id: z.string().optional(),
  state: z.string().meta({ description: "the state entered; `pending` for an approval" }),
  name: z.string().optional(),
  code: z.string().optional().meta({ description: "the error code, when it ended badly" }),
  limit: z.string().optional().meta({ description: "the budget or limit hit" }),
  title: z.string().meta({ description: "what happened, in words" }),
  read: z.boolean(),
}).meta({ id: "Notification" });

const NotificationPageSchema = z.object({
  notifications: z.array(NotificationSchema),
  next_cursor: z.string().nullable().meta({
    description: "pass as `cursor` for the next page; null on the last page",
  }),
  unread: z.number().int().meta({
    description: "how many of the owner's notifications are unread",
  }),
}).meta({ id: "NotificationPage" });

const listRoute = createRoute({
  method: "get",
  path: "/api/notifications",
  summary: "The caller's notifications: runs and tasks that ended badly or hit a limit, approvals",
  request: {
    query: PageQuerySchema.extend({
      limit: z.coerce.number().int("must be a whole number").min(1).max(NOTIFICATION_LIMITS.page)
        .optional().meta({
          description: `items per page, 1 to ${NOTIFICATION_LIMITS.page} (default 50)`,
        }),
      unread: z.enum(["true", "false"]).optional().meta({ description: "only unread ones" }),
    }),
  },
  responses: {
    200: { description: "a page of notifications", content: jsonContent(NotificationPageSchema) },
    ...errors(400),
  },
});

const readRoute = createRoute({
  method: "post",
  path: "/api/notifications/read",
  summary: "Marks the caller's notifications read: some ids, all up to one, or all",
  request: { body: { content: jsonContent(MarkReadRequestSchema), required: true } },
  responses: {
    200: {
      description: "how many were marked, and how many stay unread",
      content: jsonContent(z.object({ marked: z.number().int(), unread: z.number().int() })),
    },
    ...errors(400),
  },
});

/** The sub-app of the notification routes. */
export function notificationRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  const { notifications } = context.services;

  app.openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    const page = await notifications.list(c.get("caller"), {
      ...(query.limit !== undefined ? { limit: query.limit } : {}),
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
      unread: query.unread === "true",
    });
    return c.json({
      notifications: page.items,
      next_cursor: page.next_cursor,
      unread: page.unread,
    }, 200);
  });

  app.openapi(readRoute, async (c) => {
    return c.json(await notifications.markRead(c.get("caller"), c.req.valid("json")), 200);
  });

  return app;
}

/**
 * Dispatches and tasks over HTTP: start a dispatch (202 at once), its status, an idempotent
 * cancel, its event stream; the task list, a task's detail, and actions on a task.
 * @module
 */
import { noSuch, submitTask } from "../services/mod.ts";
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { DispatchRequestSchema } from "../schemas/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { feedResponse, resumeOf } from "./feed_stream.ts";
import { errors, jsonContent, nextCursor, sseContent } from "./route_parts.ts";
import {
  pageOf,
  PageQuerySchema,
  RunStateSchema,
  TaskIdParamSchema,
  TaskStatusSchema,
} from "./schemas.ts";

/** What `POST /api/dispatch` answers. */
const DispatchStartedSchema = z.object({
  task_id: z.string(),
  state: RunStateSchema,
  status_url: z.string(),
  events_url: z.string(),
}).meta({ id: "DispatchStarted" });

/** Actions `POST /api/tasks/{task_id}/{action}` performs. */
export const TASK_ACTIONS = ["cancel", "approve", "deny"] as const;

/** An approval: a call or a dispatch waiting for a person to grant it the `full` sandbox. */
export const ApprovalSchema = z.looseObject({
  approval_id: z.string(),
  owner: z.string(),
  state: z.enum(["pending", "approved", "denied", "cancelled"]),
  kind: z.enum(["call", "dispatch"]),
  run_id: z.string().optional(),
  task_id: z.string().optional(),
  asked_at: z.string(),
}).meta({ id: "Approval" });

const DecisionBodySchema = z.strictObject({
  reason: z.string().max(1000, "must be at most 1000 characters").optional().meta({
    description: "why, in words, recorded with the decision",
  }),
});

const TaskActionParamSchema = TaskIdParamSchema.extend({
  action: z.enum(TASK_ACTIONS).meta({ param: { name: "action", in: "path" } }),
});

const startRoute = createRoute({
  method: "post",
  path: "/api/dispatch",
  summary: "Start a dispatch: one prompt to one agent, as an asynchronous task",
  request: { body: { required: true, content: jsonContent(DispatchRequestSchema) } },
  responses: {
    202: {
      description: "the task was recorded and starts",
      content: jsonContent(DispatchStartedSchema),
    },
    ...errors(400, 503),
  },
});

const statusRoute = createRoute({
  method: "get",
  path: "/api/dispatch/{task_id}",
  summary: "A dispatch's status",
  request: { params: TaskIdParamSchema },
  responses: {
    200: { description: "the task", content: jsonContent(TaskStatusSchema) },
    ...errors(404),
  },
});

const cancelRoute = createRoute({
  method: "post",
  path: "/api/dispatch/{task_id}/cancel",
  summary: "Cancel a dispatch (idempotent)",
  request: { params: TaskIdParamSchema },
  responses: {
    200: { description: "the task's status", content: jsonContent(TaskStatusSchema) },
    ...errors(404),
  },
});

const eventsRoute = createRoute({
  method: "get",
  path: "/api/dispatch/{task_id}/events",
  summary: "A dispatch's state changes as server-sent events",
  description:
    "One `state` event per state the task enters, `approval` events while it waits for a " +
    "person, and `progress` events with the call's live output (redacted, within the " +
    "configuration's `progress.call_bytes`); each `id` is its position in the task's feed. " +
    "Resume with `Last-Event-ID`; the stream ends after the terminal state.",
  request: { params: TaskIdParamSchema },
  responses: {
    200: { description: "the event stream", content: sseContent() },
    204: { description: "the stream has ended: nothing follows the given id" },
    ...errors(404),
  },
});

const listRoute = createRoute({
  method: "get",
  path: "/api/tasks",
  summary: "List the caller's tasks (dispatches), newest first",
  request: { query: PageQuerySchema },
  responses: {
    200: {
      description: "a page of tasks",
      content: jsonContent(pageOf("tasks", TaskStatusSchema)),
    },
    ...errors(400),
  },
});

const detailRoute = createRoute({
  method: "get",
  path: "/api/tasks/{task_id}",
  summary: "A task's detail",
  request: { params: TaskIdParamSchema },
  responses: {
    200: { description: "the task", content: jsonContent(TaskStatusSchema) },
    ...errors(404),
  },
});

const actionRoute = createRoute({
  method: "post",
  path: "/api/tasks/{task_id}/{action}",
  summary: "Perform an action on a task: cancel it, or approve or deny what it waits for",
  description:
    "`cancel` (idempotent) answers the task. `approve` and `deny` decide an approval (the " +
    "path names a dispatch task waiting for one, or the approval itself, `apr_...`) and " +
    "answer it; deciding again the same way answers the same, the other way 409.",
  request: {
    params: TaskActionParamSchema,
    body: { required: false, content: jsonContent(DecisionBodySchema) },
  },
  responses: {
    200: {
      description: "the task after a cancel, the approval after a decision",
      content: jsonContent(z.union([TaskStatusSchema, ApprovalSchema])),
    },
    ...errors(400, 404, 409),
  },
});

const approvalsRoute = createRoute({
  method: "get",
  path: "/api/approvals",
  summary: "The approval queue: calls and dispatches waiting for a person, then decided ones",
  request: {
    query: PageQuerySchema.extend({
      state: z.enum(["pending", "approved", "denied", "cancelled"]).optional().meta({
        description: "only approvals in this state (default: pending first, then the rest)",
      }),
    }),
  },
  responses: {
    200: {
      description: "a page of approvals",
      content: jsonContent(pageOf("approvals", ApprovalSchema)),
    },
    ...errors(400),
  },
});

/** The sub-app of dispatch and task routes. */
export function dispatchRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  const { tasks, approvals } = context.services;

  app.openapi(startRoute, async (c) => {
    const task = await submitTask(context.services, c.req.valid("json"), c.get("caller"));
    return c.json({
      task_id: task.task_id,
      state: task.state,
      status_url: `/api/dispatch/${task.task_id}`,
      events_url: `/api/dispatch/${task.task_id}/events`,
    }, 202);
  });

  const status = async (taskId: string, caller: Parameters<typeof tasks.get>[1]) => {
    const task = await tasks.get(taskId, caller);
    if (!task) throw noSuch("task", taskId);
    return task;
  };

  app.openapi(statusRoute, async (c) => {
    return c.json(await status(c.req.valid("param").task_id, c.get("caller")), 200);
  });

  app.openapi(cancelRoute, async (c) => {
    return c.json(await tasks.cancel(c.req.valid("param").task_id, c.get("caller")), 200);
  });

  app.openapi(eventsRoute, async (c) => {
    const { task_id } = c.req.valid("param");
    const caller = c.get("caller");
    const opening = await context.services.streams.taskFeed(caller, task_id, resumeOf(c.req.raw));
    return feedResponse(context, { kind: "task", id: task_id }, opening);
  });

  app.openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    const limit = query.limit ?? 100;
    const list = await tasks.list(c.get("caller"), {
      limit,
      ...(query.cursor ? { before: query.cursor } : {}),
    });
    return c.json({ tasks: list, next_cursor: nextCursor(list, limit, (t) => t.task_id) }, 200);
  });

  app.openapi(detailRoute, async (c) => {
    return c.json(await status(c.req.valid("param").task_id, c.get("caller")), 200);
  });

  app.openapi(actionRoute, async (c) => {
    const { task_id, action } = c.req.valid("param");
    const caller = c.get("caller");
    if (action === "cancel") return c.json(await tasks.cancel(task_id, caller), 200);
    const reason = (c.req.valid("json") as { reason?: string } | undefined)?.reason;
    const approval = await approvals.decide(task_id, caller, action, {
      ...(reason !== undefined ? { reason } : {}),
    });
    return c.json(approval, 200);
  });

  app.openapi(approvalsRoute, async (c) => {
    const query = c.req.valid("query");
    const limit = query.limit ?? 100;
    const list = await approvals.list(c.get("caller"), {
      limit,
      ...(query.state !== undefined ? { state: query.state } : {}),
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    });
    return c.json({
      approvals: list,
      next_cursor: nextCursor(list, limit, (a) => a.approval_id),
    }, 200);
  });

  return app;
}

/**
 * Workflow runs over HTTP: start (202 at once), list, status, journal, graph, script, cancel,
 * resume, events.
 * The owner is the token's; another owner's run answers 404 like an unknown id.
 * @module
 */
import { submitRun } from "../services/mod.ts";
import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { SvcError } from "../errors/mod.ts";
import { noSuch, type RunState, type RunStatus } from "../services/mod.ts";
import {
  CallsReplayedEventSchema,
  DAG_MAX_CALLS,
  RunDagSchema,
  WorkflowResumeBodySchema,
  WorkflowRunBodySchema,
} from "../schemas/mod.ts";
import { type DashboardHono, routeApp, type RouteContext } from "./route_context.ts";
import { feedResponse, resumeOf } from "./feed_stream.ts";
import { errors, jsonContent, jsonText, nextCursor, sseContent } from "./route_parts.ts";
import {
  JournalEntrySchema,
  pageOf,
  PageQuerySchema,
  RunIdParamSchema,
  RunStateSchema,
  RunStatusSchema,
} from "./schemas.ts";

/** What `POST /api/workflow/run` answers: the handle, and where to follow it. */
const RunStartedSchema = z.object({
  run_id: z.string(),
  queue_position: z.number().int().positive().optional().meta({
    description: "the run waits in the queue (a cap is reached): its 1-based place there",
  }),
  state: RunStateSchema,
  status_url: z.string(),
  events_url: z.string(),
}).meta({ id: "RunStarted" });

const RunListQuerySchema = PageQuerySchema.extend({
  state: z.string().max(200).regex(
    /^[a-z]+(,[a-z]+)*$/,
    "must be states separated by commas, e.g. running,queued",
  ).optional().meta({ description: "only runs in these states, comma-separated" }),
});

const startRoute = createRoute({
  method: "post",
  path: "/api/workflow/run",
  summary: "Start a workflow run",
  description:
    "Validates the script and starts it; answers 202 with the run's id at once. The script is " +
    "`script` text, or a saved workflow of the run's project named by `name` (its meta.name) " +
    "or `scriptPath` (from the project's root). The owner is the token's; an `owner_user_id` " +
    "in the body or the query is ignored.",
  request: { body: { required: true, content: jsonContent(WorkflowRunBodySchema) } },
  responses: {
    202: { description: "the run was recorded and starts", content: jsonContent(RunStartedSchema) },
    ...errors(400, 404, 409, 503),
  },
});

const listRoute = createRoute({
  method: "get",
  path: "/api/workflow",
  summary: "List the caller's runs, newest first",
  request: { query: RunListQuerySchema },
  responses: {
    200: { description: "a page of runs", content: jsonContent(pageOf("runs", RunStatusSchema)) },
    ...errors(400),
  },
});

const statusRoute = createRoute({
  method: "get",
  path: "/api/workflow/{run_id}",
  summary: "A run's status and journal summary",
  request: { params: RunIdParamSchema },
  responses: {
    200: { description: "the run", content: jsonContent(RunStatusSchema) },
    ...errors(404),
  },
});

const journalRoute = createRoute({
  method: "get",
  path: "/api/workflow/{run_id}/journal",
  summary: "A run's journal: every agent() call in order, results included",
  request: { params: RunIdParamSchema },
  responses: {
    200: {
      description: "the journal",
      content: jsonContent(z.object({ run_id: z.string(), entries: z.array(JournalEntrySchema) })),
    },
    ...errors(404),
  },
});

const dagRoute = createRoute({
  method: "get",
  path: "/api/workflow/{run_id}/dag",
  summary: "A run as a graph of its calls",
  description: "The run's structure from its calls' logical positions: steps, branches of " +
    "`parallel()`, items and stages of `pipeline()`, sub-workflows, each node with its state, " +
    "label, phase, timing, usage and replay origin; running calls included. Bounded: the " +
    `first ${DAG_MAX_CALLS} journaled calls by seq and every running one; \`calls.omitted\` ` +
    "counts those left out. Another owner's run answers 404 like an unknown id.",
  request: { params: RunIdParamSchema },
  responses: {
    200: { description: "the run's graph", content: jsonContent(RunDagSchema) },
    ...errors(404),
  },
});

const cancelRoute = createRoute({
  method: "post",
  path: "/api/workflow/{run_id}/cancel",
  summary: "Cancel a run (idempotent)",
  description:
    "Asks the host running the run to cancel it, wherever it runs; answers the status. " +
    "Cancelling a run that has ended changes nothing and answers its status.",
  request: { params: RunIdParamSchema },
  responses: {
    200: { description: "the run's status", content: jsonContent(RunStatusSchema) },
    ...errors(404),
  },
});

/** What `GET /api/workflow/{run_id}/script` answers: what the run was started with. */
const RunScriptSchema = z.object({
  run_id: z.string(),
  filename: z.string().meta({ description: "the script's file name, as in messages" }),
  script: z.string().meta({ description: "the script's source, as given" }),
  args: z.unknown().optional().meta({
    description: "the args the script got; absent when it got none (or the run is older " +
      "than their recording)",
  }),
}).meta({ id: "RunScript" });

const scriptRoute = createRoute({
  method: "get",
  path: "/api/workflow/{run_id}/script",
  summary: "The script and args a run was started with",
  request: { params: RunIdParamSchema },
  responses: {
    200: { description: "the run's input", content: jsonContent(RunScriptSchema) },
    ...errors(404),
  },
});

const resumeRoute = createRoute({
  method: "post",
  path: "/api/workflow/{run_id}/resume",
  summary: "Resume a run that has ended",
  description: "Starts a new run of the source run's script with its args and settings, " +
    "replaying its journaled calls (`resume_from`); answers 202 like `POST /api/workflow/run`. " +
    "The body is optional: it may change `fake_dispatch`, `timeout`, `budget_tokens` and " +
    "`budget_usd`. A run still queued or running answers 409.",
  request: {
    params: RunIdParamSchema,
    body: { required: false, content: jsonContent(WorkflowResumeBodySchema) },
  },
  responses: {
    202: {
      description: "the new run was recorded and starts",
      content: jsonContent(RunStartedSchema),
    },
    ...errors(400, 404, 409, 503),
  },
});

const eventsRoute = createRoute({
  method: "get",
  path: "/api/workflow/{run_id}/events",
  summary: "A run's progress as server-sent events",
  description: "Events `state`, `narration`, `calls`, `call`, `calls_replayed` (schema " +
    "`CallsReplayedEvent`), `condition`, `security` (docs/API.md, " +
    "\"Event streams\"); each `id` is the event's position in the run's feed. Resume with " +
    "`Last-Event-ID` (or `?after=`). The stream ends after the terminal `state` event; " +
    "resuming after it answers 204.",
  request: { params: RunIdParamSchema },
  responses: {
    200: { description: "the event stream", content: sseContent() },
    204: { description: "the stream has ended: nothing follows the given id" },
    ...errors(404),
  },
});

function parseStates(text: string | undefined): RunState[] | undefined {
  if (text === undefined) return undefined;
  const states = text.split(",");
  for (const state of states) {
    if (!RunStateSchema.safeParse(state).success) {
      throw new SvcError(
        "invalid_request",
        `Cannot accept the request query: 'state' has '${state}', which is not one of ${
          RunStateSchema.options.join(", ")
        }`,
      );
    }
  }
  return states as RunState[];
}

/** The answer of a route that started a run: its handle, and where to follow it. */
function started(status: RunStatus): z.infer<typeof RunStartedSchema> {
  return {
    run_id: status.run_id,
    state: status.state,
    ...(status.queue_position !== undefined ? { queue_position: status.queue_position } : {}),
    status_url: `/api/workflow/${status.run_id}`,
    events_url: `/api/workflow/${status.run_id}/events`,
  };
}

/** The sub-app of workflow run routes. */
export function runRoutes(context: RouteContext): DashboardHono {
  const app = routeApp();
  const { runs } = context.services;

  app.openapi(startRoute, async (c) => {
    const { owner_user_id: _ignored, ...body } = c.req.valid("json") as
      & z.infer<typeof WorkflowRunBodySchema>
      & { owner_user_id?: unknown };
    const caller = c.get("caller");
    return c.json(started(await submitRun(context.services, body, caller, { via: "api" })), 202);
  });

  app.openapi(resumeRoute, async (c) => {
    const { run_id } = c.req.valid("param");
    // No body reads as an empty object: nothing changes.
    const status = await runs.resume(run_id, c.get("caller"), c.req.valid("json"), { via: "api" });
    return c.json(started(status), 202);
  });

  app.openapi(scriptRoute, async (c) => {
    const { run_id } = c.req.valid("param");
    return c.json(await runs.input(run_id, c.get("caller")), 200);
  });

  app.openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    const limit = query.limit ?? 100;
    const states = parseStates(query.state);
    const list = await runs.list(c.get("caller"), {
      limit,
      ...(states ? { states } : {}),
      ...(query.cursor ? { before: query.cursor } : {}),
    });
    return c.json({ runs: list, next_cursor: nextCursor(list, limit, (r) => r.run_id) }, 200);
  });

  app.openapi(statusRoute, async (c) => {
    const { run_id } = c.req.valid("param");
    // The status as JSON text: an ended run's is answered as kept, without a serialisation.
    const status = await runs.getJson(run_id, c.get("caller"));
    if (status === undefined) throw noSuch("run", run_id);
    return jsonText(status);
  });

  app.openapi(journalRoute, async (c) => {
    const { run_id } = c.req.valid("param");
    const entries = await runs.journal(run_id, c.get("caller"));
    return c.json({ run_id, entries }, 200);
  });

  app.openapi(dagRoute, async (c) => {
    const { run_id } = c.req.valid("param");
    return c.json(await context.services.runGraph.dag(run_id, c.get("caller")), 200);
  });

  app.openapi(cancelRoute, async (c) => {
    const { run_id } = c.req.valid("param");
    return c.json(await runs.cancel(run_id, c.get("caller")), 200);
  });

  // The stream's data is not a JSON response, so the event's schema is named as a component.
  const { $schema: _draft, ...replayed } = z.toJSONSchema(CallsReplayedEventSchema, {
    target: "draft-2020-12",
  });
  type SchemaObject = Parameters<typeof app.openAPIRegistry.registerComponent<"schemas">>[2];
  app.openAPIRegistry.registerComponent(
    "schemas",
    "CallsReplayedEvent",
    replayed as unknown as SchemaObject,
  );
  app.openapi(eventsRoute, async (c) => {
    const { run_id } = c.req.valid("param");
    const caller = c.get("caller");
    const opening = await context.services.streams.runFeed(caller, run_id, resumeOf(c.req.raw));
    return feedResponse(context, { kind: "run", id: run_id }, opening);
  });

  return app;
}

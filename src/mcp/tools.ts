/**
 * The tools svc serves over the tool protocol, registered on one `McpServer` for one caller:
 * `svc_workflow`, `svc_task_status`, `svc_dispatch`, `svc_task_cancel`, `svc_board_write` and
 * `svc_workflow_legacy`. Their input schemas are the zod schemas the HTTP routes validate
 * bodies with; every call goes to the same services the dashboard calls.
 * @module
 */
import type { CallToolResult, McpServer, ServerContext } from "@modelcontextprotocol/server";
import * as z from "zod";
import { SvcError } from "../errors/mod.ts";
import { legacyRunRequest, LegacyWorkflowBodySchema } from "../legacy/mod.ts";
import type { Caller } from "../services/mod.ts";
import {
  BoardWriteResultSchema,
  BoardWriteToolSchema,
  DispatchRequestSchema,
  WorkflowRunToolSchema,
} from "../schemas/mod.ts";
import { type Services, type SpawnWorker, submitRun, submitTask } from "../services/mod.ts";
import { followUntilDone, MAX_WAIT_SECONDS } from "./follow.ts";
import {
  type HandleResult,
  HandleResultSchema,
  runResult,
  type StatusResult,
  StatusResultSchema,
  structured,
  taskResult,
  toolError,
} from "./results.ts";

/** What the tools act for. */
export interface ToolContext {
  /** The services the tools call. */
  services: Services;
  /** Who calls: the token's owner over HTTP, the local owner over stdio. */
  caller: Caller;
  /** Where an internal error's details go (never to the client). Default: dropped. */
  logError?: (message: string) => void;
  /**
   * Hands each run and task to a worker process when no daemon is alive, so that it outlives
   * this server (`svc mcp` over stdio, whose client may hang up at any time). Default: work
   * runs in this process, as long as it serves (a dashboard).
   */
  spawnWorker?: SpawnWorker;
}

/** A run's or task's id, as the tools take it. */
const HandleSchema = z.string().max(128).regex(
  /^(run|task)_[0-9a-z]+$/,
  "must be a run id (run_...) or a task id (task_...)",
).describe("the handle svc_workflow, svc_workflow_legacy or svc_dispatch returned");

const StatusInputSchema = z.strictObject({
  handle: HandleSchema,
  wait_seconds: z.number().int("must be whole seconds").min(0).max(MAX_WAIT_SECONDS).default(0)
    .describe(
      `wait up to this many seconds (at most ${MAX_WAIT_SECONDS}) for the run or task to end, ` +
        "with progress notifications when the call asks for them; 0 answers at once",
    ),
});

const CancelInputSchema = z.strictObject({ handle: HandleSchema });

/** Where a handle's status is followed. */
const FOLLOW = "call svc_task_status with this handle (wait_seconds to wait for the end)";

/**
 * Runs a tool's body and turns what it throws into a tool error (`isError`) that names what
 * is wrong. Anything but an `SvcError` is internal: the client reads only that it happened.
 */
async function guarded(
  tool: string,
  context: ToolContext,
  body: () => Promise<CallToolResult>,
): Promise<CallToolResult> {
  try {
    return await body();
  } catch (error) {
    return toolError(tool, error, context.logError);
  }
}

function handleOf(kind: "run" | "task", id: string, state: HandleResult["state"]): HandleResult {
  return { handle: id, kind, state, next: FOLLOW };
}

async function statusOf(context: ToolContext, handle: string): Promise<StatusResult> {
  const { services, caller } = context;
  if (handle.startsWith("run_")) {
    const status = await services.runs.get(handle, caller);
    if (status) return runResult(status);
  } else {
    const status = await services.tasks.get(handle, caller);
    if (status) return taskResult(status);
  }
  throw new SvcError("not_found", `Cannot find '${handle}': there is no such run or task`);
}

/** The reporter of a waiting call: progress where the client asked for it, narration as logs. */
function reporterOf(ctx: ServerContext) {
  const token = ctx.mcpReq._meta?.progressToken;
  return {
    progress: async (progress: number, message: string) => {
      if (token === undefined) return;
      await ctx.mcpReq.notify({
        method: "notifications/progress",
        params: { progressToken: token, progress, message },
      });
    },
    log: async (text: string) => {
      await ctx.mcpReq.log("info", text, "svc");
    },
  };
}

/** Registers every svc tool on `server`, acting as `context.caller`. */
export function registerTools(server: McpServer, context: ToolContext): void {
  const { services, caller } = context;
  const submit = {
    via: "mcp" as const,
    ...(context.spawnWorker ? { spawnWorker: context.spawnWorker } : {}),
  };

  server.registerTool("svc_workflow", {
    title: "Run a workflow script",
    description: "Starts a workflow script (JavaScript whose agent() calls svc dispatches to " +
      "coding agents, with parallel(), pipeline(), phase() and log()) and returns a handle at " +
      "once; follow it with svc_task_status. Give the script as `script` text, or name a saved " +
      "workflow of the project by `name` (its meta.name) or `scriptPath`, as Claude Code's " +
      "Workflow tool does. `fake_dispatch: true` answers every call with the deterministic " +
      "fake provider. Parameters as POST /api/workflow/run.",
    inputSchema: WorkflowRunToolSchema,
    outputSchema: HandleResultSchema,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
  }, (args) =>
    guarded("svc_workflow", context, async () => {
      const status = await submitRun(services, args, caller, submit);
      return structured(handleOf("run", status.run_id, status.state));
    }));

  server.registerTool("svc_workflow_legacy", {
    title: "Run a version-1 chain (deprecated)",
    description: "Deprecated: runs a version-1 chain of steps (YAML or JSON text, or the " +
      "object) by translating it into the equivalent workflow script, and returns a handle " +
      "at once, the deprecation notice and that script. Use svc_workflow for new work.",
    inputSchema: LegacyWorkflowBodySchema,
    outputSchema: HandleResultSchema,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
  }, (args) =>
    guarded("svc_workflow_legacy", context, async () => {
      const legacy = legacyRunRequest(args);
      const status = await submitRun(services, legacy.request, caller, submit);
      return structured({
        ...handleOf("run", status.run_id, status.state),
        deprecation: legacy.notice,
        script: legacy.script,
      });
    }));

  server.registerTool("svc_task_status", {
    title: "Status of a run or dispatch",
    description: "The state of a run or dispatch task by its handle: narration so far, the " +
      "journal summary, and the result or error once it has ended. With wait_seconds it " +
      "waits for the end, sending progress notifications and narration as log messages.",
    inputSchema: StatusInputSchema,
    outputSchema: StatusResultSchema,
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  }, (args, ctx) =>
    guarded("svc_task_status", context, async () => {
      const first = await statusOf(context, args.handle);
      if (args.wait_seconds === 0 || first.done) return structured(first);
      await followUntilDone(services, { kind: first.kind, id: args.handle, caller }, {
        seconds: args.wait_seconds,
        signal: ctx.mcpReq.signal,
        reporter: reporterOf(ctx),
      });
      return structured(await statusOf(context, args.handle));
    }));

  server.registerTool("svc_dispatch", {
    title: "Dispatch one task to a coding agent",
    description: "Sends one prompt to a coding agent or model (agent() options: provider, " +
      "model, effort, sandbox, workdir, session, schema...) as an asynchronous task and " +
      "returns its handle at once; follow it with svc_task_status. Body as POST /api/dispatch.",
    inputSchema: DispatchRequestSchema,
    outputSchema: HandleResultSchema,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
  }, (args) =>
    guarded("svc_dispatch", context, async () => {
      const status = await submitTask(services, args, caller, submit);
      return structured(handleOf("task", status.task_id, status.state));
    }));

  server.registerTool("svc_task_cancel", {
    title: "Cancel a run or dispatch",
    description: "Cancels a run or dispatch task by its handle: its agents are stopped and it " +
      "ends cancelled. Cancelling one that has ended changes nothing. Answers its status.",
    inputSchema: CancelInputSchema,
    outputSchema: StatusResultSchema,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
  }, (args) =>
    guarded("svc_task_cancel", context, async () => {
      const result = args.handle.startsWith("run_")
        ? runResult(await services.runs.cancel(args.handle, caller))
        : taskResult(await services.tasks.cancel(args.handle, caller));
      return structured(result);
    }));

  server.registerTool("svc_board_write", {
    title: "Write to the board",
    description: "Creates a card (action new) or moves one (take, log, done, drop, cancel) on " +
      "the board the dashboard shows. mode dry_run (the default) answers what apply would " +
      "write and writes nothing. Body as POST /api/board/write.",
    inputSchema: BoardWriteToolSchema,
    outputSchema: BoardWriteResultSchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
  }, (args) =>
    guarded("svc_board_write", context, async () => {
      const result = await services.board.write(args, caller);
      return structured({ ...result });
    }));
}

/**
 * What the tools answer: zod output schemas (advertised to clients as JSON Schema) and the
 * conversion of run and task statuses into them. A result carries the same value twice, as the
 * protocol asks: as `structuredContent`, and as JSON text for clients that read only text.
 * A tool's failure is a result too ({@linkcode toolError}), with the error table's code.
 * @module
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import * as z from "zod";
import { toSvcError } from "../errors/mod.ts";
import {
  isTerminal,
  RUN_STATES,
  type RunState,
  type RunStatus,
  type TaskStatus,
} from "../services/mod.ts";

/** States of runs and tasks (a task's are a run's), as the tools report them. */
const StateSchema = z.enum(RUN_STATES as [RunState, ...RunState[]]);

/** What `svc_workflow`, `svc_workflow_legacy` and `svc_dispatch` answer: a handle to follow. */
export const HandleResultSchema = z.object({
  handle: z.string().describe("the run's or task's id: pass it to svc_task_status"),
  kind: z.enum(["run", "task"]),
  state: StateSchema,
  next: z.string().describe("how to follow it"),
  deprecation: z.string().optional().describe("for version-1 chains: why and how to move on"),
  script: z.string().optional().describe("for version-1 chains: the equivalent script"),
});

/** The answer of {@linkcode HandleResultSchema}'s tools. */
export type HandleResult = z.infer<typeof HandleResultSchema>;

/** What `svc_task_status` and `svc_task_cancel` answer about a run or a task. */
export const StatusResultSchema = z.object({
  handle: z.string(),
  kind: z.enum(["run", "task"]),
  state: StateSchema,
  done: z.boolean().describe("true once the state is final: nothing more will change"),
  result: z.unknown().optional().describe("the run's returned value or the task's answer"),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  name: z.string().nullable().optional().describe("a run's meta.name"),
  narration: z.array(z.object({ at: z.string(), kind: z.string(), text: z.string() }))
    .describe("a run's narration so far, the latest lines (a task has none)"),
  narration_dropped: z.number().describe("earlier narration lines not shown"),
  conditions: z.array(z.object({ type: z.string(), message: z.string() })).optional(),
  journal: z.looseObject({
    calls: z.number(),
    replayed: z.number(),
    live: z.number(),
    failed: z.number(),
    skipped: z.number(),
  }).optional().describe("a run's journal summary: calls, replayed, live, usage"),
  provider: z.string().nullable().optional().describe("a task's provider"),
  model: z.string().nullable().optional(),
  usage: z.object({ input_tokens: z.number(), output_tokens: z.number() }).optional(),
  cost_usd: z.number().nullable().optional(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
});

/** The answer of `svc_task_status` and `svc_task_cancel`. */
export type StatusResult = z.infer<typeof StatusResultSchema>;

/** How many of a run's latest narration lines a status carries. */
export const NARRATION_SHOWN = 50;

/** A run's status as the tools report it. */
export function runResult(status: RunStatus): StatusResult {
  const shown = status.narration.slice(-NARRATION_SHOWN);
  return {
    handle: status.run_id,
    kind: "run",
    state: status.state,
    done: isTerminal(status.state),
    ...(status.result !== undefined ? { result: status.result } : {}),
    ...(status.error ? { error: { code: status.error.code, message: status.error.message } } : {}),
    name: status.name,
    narration: shown.map((entry) => ({ at: entry.at, kind: entry.kind, text: entry.text })),
    narration_dropped: status.narration_dropped + status.narration.length - shown.length,
    conditions: status.conditions.map((c) => ({ type: c.type, message: c.message })),
    journal: { ...status.journal },
    created_at: status.created_at,
    started_at: status.started_at,
    ended_at: status.ended_at,
  };
}

/** A task's status as the tools report it. */
export function taskResult(status: TaskStatus): StatusResult {
  return {
    handle: status.task_id,
    kind: "task",
    state: status.state,
    done: isTerminal(status.state),
    ...(status.result !== undefined ? { result: status.result } : {}),
    ...(status.error ? { error: { code: status.error.code, message: status.error.message } } : {}),
    narration: [],
    narration_dropped: 0,
    provider: status.provider,
    model: status.model,
    usage: { ...status.usage },
    cost_usd: status.cost_usd,
    created_at: status.created_at,
    started_at: status.started_at,
    ended_at: status.ended_at,
  };
}

/** A tool's successful answer: the value as structured content and as JSON text. */
export function structured(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
}

/**
 * A tool's failure, as the protocol reports one: inside the result (`isError`), the message
 * naming what is wrong and the error table's code. Anything but an `SvcError` is `internal`:
 * the client reads only that it happened, and `logError` gets the details.
 */
export function toolError(
  tool: string,
  error: unknown,
  logError?: (message: string) => void,
): CallToolResult {
  const known = toSvcError(error);
  if (known.code === "internal") {
    logError?.(
      `svc: internal error in tool ${tool}: ${
        error instanceof Error ? error.stack ?? error.message : String(error)
      }`,
    );
  }
  const message = known.code === "internal"
    ? `Cannot complete ${tool}: internal error (the server's log has the details)`
    : known.message;
  return { content: [{ type: "text", text: `${message} (code: ${known.code})` }], isError: true };
}

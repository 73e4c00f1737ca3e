/**
 * The dashboard's query and response schemas. Request bodies use the shared request schemas of
 * `src/schemas/` (the command line and the tool protocol validate with the same ones); this file
 * adds what only HTTP has: list queries, path ids, and the shapes of responses, which the
 * OpenAPI document is generated from. Responses are described by their main fields and stay
 * open to more (`looseObject`), so that a new field is not a breaking change.
 * @module
 */
import * as z from "zod";
import { ERROR_CODES } from "../errors/mod.ts";
import { BoardRunLinkSchema } from "../schemas/mod.ts";
import { RUN_STATES, type RunState } from "../services/mod.ts";

/** States of runs and tasks (DESIGN.md, "Runs"). */
export const RunStateSchema = z.enum(RUN_STATES as [RunState, ...RunState[]]);

/** The API error object of every 4xx and 5xx answer. */
export const ApiErrorSchema = z.object({
  error: z.object({
    status: z.number().int().meta({ description: "the HTTP status of the response" }),
    code: z.enum(ERROR_CODES as [string, ...string[]]).meta({
      description: "the machine code (docs/ERRORS.md)",
    }),
    message: z.string().meta({ description: "what is wrong, for people" }),
  }),
}).meta({ id: "ApiError" });

/** Most items one page of a list holds. */
export const PAGE_LIMIT = 500;

/** `limit` and `cursor` of every list route. */
export const PageQuerySchema = z.object({
  limit: z.coerce.number().int("must be a whole number").min(1).max(PAGE_LIMIT).optional()
    .meta({ description: `items per page, 1 to ${PAGE_LIMIT} (default 100)` }),
  cursor: z.string().max(128, "must be at most 128 characters").regex(
    /^[A-Za-z0-9_.:~-]+$/,
    "must be a cursor from a previous page's next_cursor",
  ).optional().meta({ description: "the next_cursor of the previous page" }),
});

/** A path id. The services look ids up by shape: one of another shape finds nothing. */
function idParam<K extends string>(
  name: K,
  example: string,
): z.ZodObject<{ [P in K]: z.ZodString }> {
  const shape = {
    [name]: z.string().max(128, "must be at most 128 characters").meta({
      param: { name, in: "path" },
      example,
    }),
  } as { [P in K]: z.ZodString };
  return z.object(shape);
}

/** `{run_id}` in a path. */
export const RunIdParamSchema = idParam("run_id", "run_01jb2x9k7d");
/** `{task_id}` in a path. */
export const TaskIdParamSchema = idParam("task_id", "task_01jb2x9k7d");
/** `{session_id}` in a path (an id or a session name). */
export const SessionIdParamSchema = idParam("session_id", "ses_01jb2x9k7d");

/** The usage figures the journal and the call log keep. */
const UsageSchema = z.looseObject({
  input_tokens: z.number(),
  output_tokens: z.number(),
});

/** A workflow run's status: what `GET /api/workflow/{run_id}` answers. */
export const RunStatusSchema = z.looseObject({
  run_id: z.string(),
  state: RunStateSchema,
  owner: z.string(),
  name: z.string().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  fake_dispatch: z.boolean(),
  card_id: z.string().optional().meta({ description: "the board card the run was started for" }),
  title: z.string().optional().meta({ description: "what the run is for, as its request said" }),
  description: z.string().optional().meta({
    description: "a longer description of the run, as its request said",
  }),
  started_by: z.object({
    via: z.enum(["cli", "api", "mcp", "a2a", "daemon", "review", "host"]),
    text: z.string().max(200),
  }).optional().meta({
    description: "what started the run: the surface that asked, and in words (automation, " +
      "webhook, resume of which run, card)",
  }),
  queue_position: z.number().int().positive().optional().meta({
    description: "a queued run's 1-based place in the queue (owners take turns)",
  }),
  result: z.unknown().optional().meta({ description: "the script's returned value (succeeded)" }),
  error: z.looseObject({ code: z.string(), message: z.string() }).optional().meta({
    description: "why the run did not succeed",
  }),
  narration: z.array(z.looseObject({ at: z.string(), kind: z.string(), text: z.string() })),
  conditions: z.array(z.looseObject({ at: z.string(), type: z.string(), message: z.string() })),
  budget: z.looseObject({}),
  calls: z.looseObject({ total: z.number() }),
  journal: z.looseObject({
    calls: z.number(),
    replayed: z.number(),
    live: z.number(),
    usage: UsageSchema,
  }),
}).meta({ id: "RunStatus" });

/** One journaled `agent()` call. */
export const JournalEntrySchema = z.looseObject({
  seq: z.number(),
  hash: z.string(),
  label: z.string().nullable(),
  outcome: z.string(),
  provider: z.string().nullable(),
  usage: UsageSchema.nullable(),
  duration_ms: z.number().nullable(),
}).meta({ id: "JournalEntry" });

/** A dispatch task's status. */
export const TaskStatusSchema = z.looseObject({
  task_id: z.string(),
  owner: z.string(),
  state: RunStateSchema,
  prompt: z.string(),
  label: z.string().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  result: z.unknown().optional(),
  error: z.looseObject({ code: z.string(), message: z.string() }).optional(),
  provider: z.string().nullable(),
}).meta({ id: "TaskStatus" });

/** A persistent session. */
export const SessionSchema = z.looseObject({
  session_id: z.string(),
  owner: z.string(),
  name: z.string().nullable(),
  provider: z.string().nullable(),
  turns: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
}).meta({ id: "Session" });

/** One call of the call log (dispatch history). */
export const CallRecordSchema = z.looseObject({
  at: z.string(),
  source: z.enum(["run", "task"]),
  id: z.string(),
  owner: z.string(),
  provider: z.string().nullable(),
  outcome: z.string(),
  duration_ms: z.number(),
  count: z.number().int().positive().optional().meta({
    description: "how many calls the record stands for, from `seq` on (a resume's replayed " +
      "calls share one record); absent means 1",
  }),
}).meta({ id: "CallRecord" });

/** A provider with its availability and load. */
export const ProviderStatusSchema = z.looseObject({
  name: z.string(),
  kind: z.enum(["fake", "harness", "api"]),
  available: z.boolean(),
  reason: z.string(),
  running: z.number(),
  concurrency: z.number().nullable(),
}).meta({ id: "ProviderStatus" });

/** One day of the call log, split by provider (the cost chart's bars). */
export const DayStatsSchema = z.object({
  day: z.string().meta({ description: "YYYY-MM-DD, UTC" }),
  calls: z.number(),
  cost_usd: z.number(),
  usage: UsageSchema,
  providers: z.array(z.object({
    provider: z.string(),
    calls: z.number(),
    cost_usd: z.number(),
    input_tokens: z.number(),
    output_tokens: z.number(),
  })),
}).meta({ id: "DayStats" });

/** What one run or task spent in a day or an hour. */
export const RunSpendSchema = z.object({
  source: z.enum(["run", "task"]),
  id: z.string(),
  calls: z.number(),
  cost_usd: z.number(),
  unmetered_calls: z.number(),
  input_tokens: z.number(),
  output_tokens: z.number(),
}).meta({ id: "RunSpend" });

/** A day's dearest runs and tasks, and the rest summed. */
export const DayRunsSchema = z.object({
  day: z.string().meta({ description: "YYYY-MM-DD, UTC" }),
  runs: z.array(RunSpendSchema).meta({ description: "the dearest first" }),
  others: z.object({ runs: z.number(), calls: z.number(), cost_usd: z.number() }),
}).meta({ id: "DayRuns" });

/** One hour's spending and its dearest runs and tasks. */
export const HourSpendSchema = z.object({
  hour: z.string().meta({ description: "the hour's start, YYYY-MM-DDTHH:00Z" }),
  calls: z.number(),
  cost_usd: z.number(),
  input_tokens: z.number(),
  output_tokens: z.number(),
  runs: z.array(RunSpendSchema),
}).meta({ id: "HourSpend" });

/** Totals over the call log (`/api/stats`, `/api/usage/summary`). */
export const UsageSummarySchema = z.looseObject({
  calls: z.number().meta({ description: "every call: answered, failed, replayed, refused" }),
  answered: z.number(),
  failed: z.number(),
  replayed: z.number(),
  refused: z.number(),
  usage: UsageSchema,
  cost_usd: z.number(),
  unmetered_calls: z.number(),
  by_provider: z.array(z.looseObject({ provider: z.string(), calls: z.number() })).meta({
    description: "a row per provider, `(replayed)` and `(no provider)`: the rows sum to the totals",
  }),
  by_day: z.array(DayStatsSchema),
}).meta({ id: "UsageSummary" });

/** A page of a list: the items under `key`, and the cursor of the next page (null at the end). */
export function pageOf<K extends string, T extends z.ZodType>(
  key: K,
  item: T,
): z.ZodObject<{ [P in K]: z.ZodArray<T> } & { next_cursor: z.ZodNullable<z.ZodString> }> {
  const shape = {
    [key]: z.array(item),
    next_cursor: z.string().nullable().meta({
      description: "pass as `cursor` for the next page; null on the last page",
    }),
  } as { [P in K]: z.ZodArray<T> } & { next_cursor: z.ZodNullable<z.ZodString> };
  return z.object(shape);
}

/** A run of a card as `GET /api/board/{issue_id}/runs` answers it: the link and the run now. */
export const CardRunSchema = BoardRunLinkSchema.extend({
  name: z.string().describe("The run's name, or its script's file name"),
  state: RunStateSchema,
  ended_at: z.string().nullable(),
  calls: z.number().int().describe("Its agent() calls so far"),
  cost_usd: z.number().nullable().describe("What its journaled calls cost, in US dollars"),
}).meta({ id: "CardRun" });

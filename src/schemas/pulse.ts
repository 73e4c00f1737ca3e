import * as z from "zod";
import type { Assert, SameType } from "./same_type.ts";

/** Most failures a pulse lists. */
export const PULSE_FAILURES = 5;
/** Longest failure message a pulse carries, in characters. */
export const PULSE_MESSAGE_CHARS = 200;

const SpendSchema = z.object({
  cost_usd: z.number().meta({ description: "what the metered calls cost, in US dollars" }),
  calls: z.number().int().meta({
    description: "every call that ended in the span (docs/COUNTS.md)",
  }),
  failed: z.number().int().meta({ description: "of those, failed, timed out or cancelled" }),
  replayed: z.number().int().meta({ description: "of those, answered from a journal" }),
  refused: z.number().int().meta({ description: "of those, refused before dispatch" }),
  unmetered_calls: z.number().int().meta({ description: "calls whose cost is not known" }),
  tokens: z.number().int().meta({ description: "input and output tokens" }),
});

const BudgetAxisSchema = z.object({ spent: z.number(), total: z.number() }).nullable();

const WorkCountsSchema = z.object({
  running: z.number().int(),
  queued: z.number().int(),
  waiting: z.number().int().meta({ description: "running, and waiting for a person's approval" }),
});

/**
 * The pulse of the host as one caller sees it (`GET /api/pulse`, `svc status`): one cheap
 * answer for a status bar. Its figures come from bounded windows of the ledger (`window`).
 */
export const PulseSchema = z.object({
  at: z.string().meta({ description: "when the figures were read (ISO 8601)" }),
  owner: z.string().meta({ description: "whose figures: the caller's owner" }),
  scope: z.enum(["owner", "all"]).meta({
    description: "`owner`: the caller's own work; `all`: every owner's (an administrator)",
  }),
  fresh_ms: z.number().int().meta({
    description: "the figures may be this many ms old: answers are reused that long",
  }),
  runs: WorkCountsSchema,
  tasks: WorkCountsSchema,
  approvals: z.object({
    pending: z.number().int().meta({ description: "calls and dispatches waiting for a person" }),
    oldest_at: z.string().nullable().meta({ description: "when the longest wait began" }),
  }),
  spend: z.object({
    hour: SpendSchema,
    day: SpendSchema,
    complete: z.boolean().meta({
      description: "false when the day held more calls than the window read: the day is a floor",
    }),
    budgets: z.object({
      runs: z.number().int().meta({ description: "running runs that have a budget" }),
      usd: BudgetAxisSchema,
      tokens: BudgetAxisSchema,
    }).meta({
      description: "the budgets of the running runs (the only budgets svc has) and their spending",
    }),
  }),
  providers: z.object({
    total: z.number().int(),
    available: z.number().int(),
    list: z.array(z.object({
      name: z.string(),
      kind: z.enum(["fake", "harness", "api"]),
      available: z.boolean(),
      running: z.number().int(),
      concurrency: z.number().int().nullable(),
      reason: z.string().meta({ description: "why it is unavailable: tools named, never paths" }),
    })),
  }),
  failures: z.array(z.object({
    kind: z.enum(["run", "task"]),
    id: z.string(),
    name: z.string().nullable(),
    state: z.string(),
    at: z.string(),
    message: z.string().meta({ description: `clipped to ${PULSE_MESSAGE_CHARS} characters` }),
  })).max(PULSE_FAILURES).meta({ description: `the newest failures, at most ${PULSE_FAILURES}` }),
  window: z.object({
    runs: z.number().int(),
    tasks: z.number().int(),
    calls: z.number().int(),
    approvals: z.number().int(),
  }).meta({ description: "how many of the newest records of each kind the figures come from" }),
}).meta({ id: "Pulse" });

/** Spending over a span of time: cost, calls, unmetered calls, tokens. */
export interface PulseSpend {
  /** What the metered calls cost, in US dollars. */
  cost_usd: number;
  /** Calls that ended in the span: every kind (docs/COUNTS.md). */
  calls: number;
  /** Of those, the ones that failed, timed out or were cancelled. */
  failed: number;
  /** Of those, the ones answered from a journal. */
  replayed: number;
  /** Of those, the ones refused before dispatch. */
  refused: number;
  /** Calls whose cost is not known. */
  unmetered_calls: number;
  /** Input and output tokens. */
  tokens: number;
}

/** Runs or tasks by where they are: running, queued, and running but waiting for a person. */
export interface PulseWork {
  /** Running now. */
  running: number;
  /** Waiting for a slot or a worker. */
  queued: number;
  /** Running, with a call waiting for a person's approval. */
  waiting: number;
}

/** A failed, timed-out or interrupted run or task, as the pulse lists it. */
export interface PulseFailure {
  /** A run or a task. */
  kind: "run" | "task";
  /** Its id. */
  id: string;
  /** Its name or label, if it has one. */
  name: string | null;
  /** How it ended. */
  state: string;
  /** When it ended. */
  at: string;
  /** Why, clipped to {@linkcode PULSE_MESSAGE_CHARS} characters. */
  message: string;
}

/** A provider's health, as the pulse shows it. */
export interface PulseProvider {
  /** Its name. */
  name: string;
  /** A coding-agent command line, a model API or the fake. */
  kind: "fake" | "harness" | "api";
  /** Whether it takes calls now. */
  available: boolean;
  /** Calls it runs now. */
  running: number;
  /** Its cap on calls at once; null without one. */
  concurrency: number | null;
  /** Why it is unavailable: tools named, never host paths. */
  reason: string;
}

/** The pulse of the host as one caller sees it (`GET /api/pulse`, `svc status`). */
export interface Pulse {
  /** When the figures were read (ISO 8601). */
  at: string;
  /** Whose figures: the caller's owner. */
  owner: string;
  /** The caller's own work, or every owner's (an administrator). */
  scope: "owner" | "all";
  /** How long an answer is reused, in ms: the figures may be that old. */
  fresh_ms: number;
  /** The runs. */
  runs: PulseWork;
  /** The tasks (dispatches). */
  tasks: PulseWork;
  /** Calls and dispatches waiting for a person, and since when the longest has waited. */
  approvals: { pending: number; oldest_at: string | null };
  /** Spend in the last hour and day, and the running runs' budgets. */
  spend: {
    hour: PulseSpend;
    day: PulseSpend;
    complete: boolean;
    budgets: {
      runs: number;
      usd: { spent: number; total: number } | null;
      tokens: { spent: number; total: number } | null;
    };
  };
  /** The providers' health. */
  providers: { total: number; available: number; list: PulseProvider[] };
  /** The newest failures, at most {@linkcode PULSE_FAILURES}. */
  failures: PulseFailure[];
  /** How many of the newest records of each kind the figures come from. */
  window: { runs: number; tasks: number; calls: number; approvals: number };
}
type _PulseMatches = Assert<SameType<Pulse, z.infer<typeof PulseSchema>>>;

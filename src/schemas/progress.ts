/**
 * The live output of an `agent()` call: what its coding agent or model API is doing while the
 * call runs (text as it grows, each tool use with its target, files changed, errors). Providers
 * emit these, the engine records them in the run's feed within a per-call byte budget, and
 * `GET /api/workflow/{run_id}/calls/{seq}/events`, the page and `svc workflow watch` show them.
 * Every string is redacted and clipped before it is recorded; a reader still treats it as text.
 * @module
 */
import * as z from "zod";
import type { Assert, SameType } from "./same_type.ts";

/** Longest text of one progress item, in characters; longer text is split or clipped. */
export const PROGRESS_TEXT_LIMIT = 4096;
/** Longest tool name, target or file path of one progress item, in characters. */
export const PROGRESS_FIELD_LIMIT = 240;

/** One thing a call did, as its provider reported it. */
export const CallProgressSchema: z.ZodType<CallProgress> = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("text"),
    text: z.string().max(PROGRESS_TEXT_LIMIT),
  }).meta({ description: "assistant text as it grows: a delta to append to the earlier text" }),
  z.object({
    kind: z.literal("tool"),
    name: z.string().max(PROGRESS_FIELD_LIMIT),
    target: z.string().max(PROGRESS_FIELD_LIMIT).nullable().meta({
      description: "what the tool works on: a file path, a command line, a pattern (clipped)",
    }),
  }).meta({ description: "the agent used a tool" }),
  z.object({
    kind: z.literal("file"),
    path: z.string().max(PROGRESS_FIELD_LIMIT),
    change: z.string().max(32).nullable().meta({
      description: "how it changed (add, update, delete) when the tool says",
    }),
  }).meta({ description: "the agent changed a file" }),
  z.object({
    kind: z.literal("error"),
    message: z.string().max(PROGRESS_TEXT_LIMIT),
  }).meta({ description: "a tool or the model reported an error (the call may still succeed)" }),
  z.object({
    kind: z.literal("truncated"),
  }).meta({ description: "the call's progress passed its byte budget: nothing more is recorded" }),
]);

/**
 * One thing a call did, as its provider reported it: text as it grows (a delta), a tool use
 * with its target, a file changed, an error, or the marker that the call's budget is spent.
 */
export type CallProgress =
  | { kind: "text"; text: string }
  | { kind: "tool"; name: string; target: string | null }
  | { kind: "file"; path: string; change: string | null }
  | { kind: "error"; message: string }
  | { kind: "truncated" };
type _CallProgressMatches = Assert<SameType<CallProgress, z.infer<typeof CallProgressSchema>>>;

/**
 * A batch of a call's progress as recorded: the feed position of the run event that holds it
 * (the cursor `after` pages by), when it was recorded, and its items in order.
 */
export const CallProgressEventSchema: z.ZodType<CallProgressEvent> = z.object({
  feed_seq: z.number().int().nonnegative().meta({
    description: "the position of this batch in the run's event feed; page on with after=<it>",
  }),
  at: z.string(),
  items: z.array(CallProgressSchema),
});

/** A batch of a call's progress as recorded. */
export interface CallProgressEvent {
  /** The position of the run event that holds it in the run's feed (the `after` cursor). */
  feed_seq: number;
  /** When it was recorded (ISO 8601). */
  at: string;
  /** Its items, in order. */
  items: CallProgress[];
}
type _EventMatches = Assert<SameType<CallProgressEvent, z.infer<typeof CallProgressEventSchema>>>;

/** The answer of `GET /api/workflow/{run_id}/calls/{seq}/events` (JSON). */
export const CallEventsResultSchema: z.ZodType<CallEventsResult> = z.object({
  run_id: z.string(),
  seq: z.number().int().positive(),
  events: z.array(CallProgressEventSchema),
  done: z.boolean().meta({
    description:
      "whether the call has ended (its progress is complete); false while it runs or waits",
  }),
});

/** The answer of `GET /api/workflow/{run_id}/calls/{seq}/events`. */
export interface CallEventsResult {
  /** The run. */
  run_id: string;
  /** The call's number in the run's journal. */
  seq: number;
  /** Its recorded batches after the reader's position, in order. */
  events: CallProgressEvent[];
  /** Whether the call has ended: nothing more of it will come. */
  done: boolean;
}
type _ResultMatches = Assert<SameType<CallEventsResult, z.infer<typeof CallEventsResultSchema>>>;

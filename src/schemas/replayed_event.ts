/**
 * The run event that reports calls of a resume answered from an earlier run's journal: one
 * event for a batch of them rather than one `call` event each, so that resuming a long run
 * writes a few feed values, not one per replayed call. The run's event streams
 * (`GET /api/workflow/{run_id}/events`, `svc workflow watch`) carry it as `calls_replayed`.
 * @module
 */
import * as z from "zod";
import type { Assert, SameType } from "./same_type.ts";

/** Most characters of one call's label in the event. */
export const REPLAYED_LABEL_CHARS = 80;

/** One call of a `calls_replayed` event: what a view shows of it. */
export interface ReplayedCallNote {
  /** The call's number in the journal. */
  seq: number;
  /** Its logical position in the script; null when it has none. */
  position: number[] | null;
  /** Its label, clipped to {@linkcode REPLAYED_LABEL_CHARS}. */
  label: string | null;
}

/** Calls a resume answered from an earlier run's journal, reported in one run event. */
export interface CallsReplayedEvent {
  /** The event's type. */
  type: "calls_replayed";
  /** The resumed run. */
  run_id: string;
  /** When the guest reported them (ISO 8601). */
  at: string;
  /** How many calls it reports (the length of `calls`). */
  count: number;
  /** The first call's number in the journal. */
  first_seq: number;
  /** The last call's number in the journal. */
  last_seq: number;
  /** The run whose journal supplied their values. */
  from: string;
  /** Each call, in the order the script made them. */
  calls: ReplayedCallNote[];
}

/** The `calls_replayed` event of a run's feed, as its event streams carry it. */
export const CallsReplayedEventSchema: z.ZodType<CallsReplayedEvent> = z.object({
  type: z.literal("calls_replayed"),
  run_id: z.string(),
  at: z.string(),
  count: z.number().int().positive(),
  first_seq: z.number().int().positive(),
  last_seq: z.number().int().positive(),
  from: z.string().meta({ description: "the run whose journal supplied the values" }),
  calls: z.array(z.object({
    seq: z.number().int().positive(),
    position: z.array(z.number().int().nonnegative()).nullable(),
    label: z.string().max(REPLAYED_LABEL_CHARS).nullable(),
  })),
}).meta({
  // Named `CallsReplayedEvent` where the events route registers it (an id here would make
  // its JSON Schema a reference to itself).
  description: "calls of a resume answered from an earlier run's journal (one event for many)",
});
type _Matches = Assert<SameType<CallsReplayedEvent, z.infer<typeof CallsReplayedEventSchema>>>;

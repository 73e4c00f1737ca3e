/**
 * The one definition of every figure svc reports about calls (docs/COUNTS.md): what a call is,
 * which calls failed, were replayed or refused, what they cost and which row of a by-provider
 * table each belongs to. The usage summary, the costs breakdown, the pulse and the CLI all
 * tally calls through {@linkcode addCall}, so no two views can count the same log differently.
 * @module
 */
import type { CallRecord } from "../ledger/mod.ts";

/**
 * The by-provider row of the calls a journal answered: a replay asked no provider, so it is not
 * the provider's call (its latency and failures are not the provider's either).
 */
export const REPLAYED_ROW = "(replayed)";
/** The by-provider row of the calls that never reached a provider: refused, or failed before one. */
export const NO_PROVIDER_ROW = "(no provider)";

/** What became of one call, as every view counts it. */
export type CallKind = "answered" | "failed" | "replayed" | "refused";

/** Which of the four a call's recorded outcome is. */
export function callKind(outcome: CallRecord["outcome"]): CallKind {
  switch (outcome) {
    case "live":
    case "succeeded":
      return "answered";
    case "replayed":
      return "replayed";
    case "skipped":
      return "refused";
    default:
      return "failed";
  }
}

/** The by-provider row a call belongs to: its provider, {@linkcode REPLAYED_ROW} or {@linkcode NO_PROVIDER_ROW}. */
export function callRow(call: Pick<CallRecord, "outcome" | "provider">): string {
  const kind = callKind(call.outcome);
  if (kind === "replayed") return REPLAYED_ROW;
  if (kind === "refused" || call.provider === null) return NO_PROVIDER_ROW;
  return call.provider;
}

/** The figures of a set of calls; every view's totals are one of these. */
export interface CallTally {
  /** Every call recorded: answered, failed, replayed and refused ones alike. */
  calls: number;
  /** Calls a provider answered. */
  answered: number;
  /** Calls that failed, timed out or were cancelled (after admission). */
  failed: number;
  /** Calls a resume answered from an earlier run's journal: no provider asked, nothing paid. */
  replayed: number;
  /** Calls refused before dispatch (agent limit, budget, no price): nothing asked, nothing paid. */
  refused: number;
  /** Input tokens the providers reported. */
  input_tokens: number;
  /** Output tokens the providers reported. */
  output_tokens: number;
  /** What the calls of known cost cost, in US dollars. */
  cost_usd: number;
  /** Calls whose cost is unknown (no price configured); `cost_usd` leaves them out. */
  unmetered_calls: number;
}

/** A tally of no calls. */
export function emptyTally(): CallTally {
  return {
    calls: 0,
    answered: 0,
    failed: 0,
    replayed: 0,
    refused: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost_usd: 0,
    unmetered_calls: 0,
  };
}

/** How many calls a record stands for: a resume's replayed calls share one record (`count`). */
export function callsOf(call: Pick<CallRecord, "count">): number {
  return call.count ?? 1;
}

/**
 * Counts `call` into `tally` (in place) and returns the tally: each of the calls a record
 * stands for (see {@linkcode callsOf}), so that a replayed prefix counts call by call.
 */
export function addCall(
  tally: CallTally,
  call: Pick<CallRecord, "outcome" | "usage" | "cost_usd" | "count">,
): CallTally {
  const calls = callsOf(call);
  tally.calls += calls;
  tally[callKind(call.outcome)] += calls;
  tally.input_tokens += call.usage.input_tokens;
  tally.output_tokens += call.usage.output_tokens;
  if (call.cost_usd === null) tally.unmetered_calls += calls;
  else tally.cost_usd += call.cost_usd;
  return tally;
}

/** The tally of `calls`. */
export function tallyCalls(
  calls: Iterable<Pick<CallRecord, "outcome" | "usage" | "cost_usd" | "count">>,
): CallTally {
  const tally = emptyTally();
  for (const call of calls) addCall(tally, call);
  return tally;
}

/** A dollar sum rounded to a millionth: sums of many small prices drift in binary floats. */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}

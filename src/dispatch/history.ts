import { type Caller, type CallLedger, type CallRecord, ownerScope } from "../ledger/mod.ts";
import {
  addCall,
  callRow,
  type CallTally,
  emptyTally,
  roundUsd,
  tallyCalls,
} from "./call_counts.ts";

/**
 * Statistics of one row of the by-provider table: a provider, or `(replayed)` and
 * `(no provider)` for the calls no provider answered, so the rows sum to the totals.
 */
export interface ProviderStats {
  /** The provider's configured name, or one of the two rows of calls no provider answered. */
  provider: string;
  /** Calls in this row. */
  calls: number;
  /** Of those, the ones a provider answered. */
  answered: number;
  /** Of those, the ones that failed, timed out or were cancelled. */
  failed: number;
  /** Of those, the ones a journal answered (only in the replayed row). */
  replayed: number;
  /** Of those, the ones refused before dispatch (only in the no-provider row). */
  refused: number;
  /** `failed / calls`, from 0 to 1. */
  failure_rate: number;
  /** Median and 95th percentile of call durations, in ms. */
  latency_ms: { median: number; p95: number };
  /** Tokens it reported, in and out. */
  usage: { input_tokens: number; output_tokens: number };
  /** Known cost in USD; calls of unknown cost are counted in `unmetered_calls`. */
  cost_usd: number;
  /** Calls of unknown cost (no price configured). */
  unmetered_calls: number;
}

/**
 * Totals over the call log: what `/api/stats`, `/api/costs`, `/api/usage/summary` and
 * `svc history` answer. Every figure is defined once, in `call_counts.ts` (docs/COUNTS.md).
 */
export interface UsageSummary {
  /** Calls in the log looked at: answered, failed, replayed and refused. */
  calls: number;
  /** Of those, the ones a provider answered. */
  answered: number;
  /** Of those, the ones that failed, timed out or were cancelled. */
  failed: number;
  /** Of those, the ones a resume replayed from a journal (no provider was asked). */
  replayed: number;
  /** Of those, the ones refused before dispatch (no provider was asked). */
  refused: number;
  /** Tokens the providers reported, in and out. */
  usage: { input_tokens: number; output_tokens: number };
  /** Currency of the priced calls. */
  cost_usd: number;
  /** Calls whose cost is unknown (no price configured): `cost_usd` leaves them out. */
  unmetered_calls: number;
  /** The same figures per row (provider, replayed, no provider), with latency percentiles. */
  by_provider: ProviderStats[];
  /** Cost, calls and tokens per day (UTC), newest first, each split by the same rows. */
  by_day: DayStats[];
}

/** One day (UTC) of the call log: totals, and the share of each by-provider row. */
export interface DayStats {
  /** The day, `YYYY-MM-DD` (UTC). */
  day: string;
  /** Calls that day (every kind). */
  calls: number;
  /** Cost of the priced calls. */
  cost_usd: number;
  /** Tokens in and out. */
  usage: { input_tokens: number; output_tokens: number };
  /** The same per by-provider row; the rows sum to the day. */
  providers: Array<
    {
      provider: string;
      calls: number;
      cost_usd: number;
      input_tokens: number;
      output_tokens: number;
    }
  >;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function providerStats(provider: string, list: readonly CallRecord[]): ProviderStats {
  const tally = tallyCalls(list);
  const durations = list.map((c) => c.duration_ms).sort((a, b) => a - b);
  return {
    provider,
    calls: tally.calls,
    answered: tally.answered,
    failed: tally.failed,
    replayed: tally.replayed,
    refused: tally.refused,
    failure_rate: Math.round((tally.failed / tally.calls) * 1000) / 1000,
    latency_ms: { median: percentile(durations, 0.5), p95: percentile(durations, 0.95) },
    usage: { input_tokens: tally.input_tokens, output_tokens: tally.output_tokens },
    cost_usd: roundUsd(tally.cost_usd),
    unmetered_calls: tally.unmetered_calls,
  };
}

function dayStats(day: string, list: readonly CallRecord[]): DayStats {
  const tally = tallyCalls(list);
  const rows = new Map<string, CallTally>();
  for (const call of list) {
    const row = callRow(call);
    rows.set(row, addCall(rows.get(row) ?? emptyTally(), call));
  }
  return {
    day,
    calls: tally.calls,
    cost_usd: roundUsd(tally.cost_usd),
    usage: { input_tokens: tally.input_tokens, output_tokens: tally.output_tokens },
    providers: [...rows].sort(([a], [b]) => a.localeCompare(b)).map(([provider, t]) => ({
      provider,
      calls: t.calls,
      cost_usd: roundUsd(t.cost_usd),
      input_tokens: t.input_tokens,
      output_tokens: t.output_tokens,
    })),
  };
}

function groupBy(calls: readonly CallRecord[], key: (call: CallRecord) => string) {
  const groups = new Map<string, CallRecord[]>();
  for (const call of calls) {
    const k = key(call);
    const list = groups.get(k);
    if (list) list.push(call);
    else groups.set(k, [call]);
  }
  return groups;
}

/**
 * Sums up calls: counts, failure rates, latency per row, usage and costs. Every call counts,
 * in exactly one by-provider row, so the rows (and each day's rows) sum to the totals.
 */
export function summarizeCalls(calls: CallRecord[]): UsageSummary {
  const tally = tallyCalls(calls);
  const byProvider = [...groupBy(calls, callRow)]
    .map(([provider, list]) => providerStats(provider, list))
    .sort((a, b) => a.provider.localeCompare(b.provider));
  const byDay = [...groupBy(calls, (call) => call.at.slice(0, 10))]
    .map(([day, list]) => dayStats(day, list))
    .sort((a, b) => b.day.localeCompare(a.day));
  return {
    calls: tally.calls,
    answered: tally.answered,
    failed: tally.failed,
    replayed: tally.replayed,
    refused: tally.refused,
    usage: { input_tokens: tally.input_tokens, output_tokens: tally.output_tokens },
    cost_usd: roundUsd(tally.cost_usd),
    unmetered_calls: tally.unmetered_calls,
    by_provider: byProvider,
    by_day: byDay,
  };
}

/**
 * The caller's dispatch history (newest first; everyone's for an administrator) and its
 * summary, from the ledger's call log. `before` pages: a cursor made by `callCursor()` of the
 * page's last call (anything else is refused with `invalid_request`); the summary is of the page.
 */
export async function dispatchHistory(
  ledger: CallLedger,
  caller: Caller,
  options: { limit?: number; before?: string } = {},
): Promise<{ calls: CallRecord[]; summary: UsageSummary }> {
  const owner = ownerScope(caller);
  const calls = await ledger.listCalls({
    ...(owner !== undefined ? { owner } : {}),
    ...(options.limit !== undefined ? { limit: options.limit } : {}),
    ...(options.before !== undefined ? { before: options.before } : {}),
  });
  return { calls, summary: summarizeCalls(calls) };
}

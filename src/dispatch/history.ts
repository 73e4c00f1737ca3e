import { type Caller, type CallLedger, type CallRecord, ownerScope } from "../ledger/mod.ts";

/** Statistics of one provider over the call log. */
export interface ProviderStats {
  /** The provider's configured name. */
  provider: string;
  /** Calls it was sent. */
  calls: number;
  /** Of those, the ones that failed, timed out or were cancelled. */
  failed: number;
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

/** Totals over the call log: what `/api/stats`, `/api/costs` and `/api/usage/summary` answer. */
export interface UsageSummary {
  /** Calls in the log looked at. */
  calls: number;
  /** Of those, the ones that failed, timed out or were cancelled. */
  failed: number;
  /** Of those, the ones a resume replayed from a journal (no provider was asked). */
  replayed: number;
  /** Tokens the providers reported, in and out. */
  usage: { input_tokens: number; output_tokens: number };
  /** Currency of the priced calls. */
  cost_usd: number;
  /** Calls whose cost is unknown (no price configured): `cost_usd` leaves them out. */
  unmetered_calls: number;
  /** The same figures per provider, with latency percentiles. */
  by_provider: ProviderStats[];
  /** Cost, calls and tokens per day (UTC), newest first, each split by provider. */
  by_day: DayStats[];
}

/** One day (UTC) of the call log: totals, and the share of each provider that answered. */
export interface DayStats {
  /** The day, `YYYY-MM-DD` (UTC). */
  day: string;
  /** Calls that day (replayed ones included). */
  calls: number;
  /** Cost of the priced calls. */
  cost_usd: number;
  /** Tokens in and out. */
  usage: { input_tokens: number; output_tokens: number };
  /** The same per provider (replayed calls asked none), by provider name. */
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

const FAILED = new Set(["failed", "timeout", "cancelled"]);

/** Sums up calls: counts, failure rates, latency per provider, usage and costs. */
export function summarizeCalls(calls: CallRecord[]): UsageSummary {
  const providers = new Map<string, CallRecord[]>();
  const days = new Map<string, DayStats>();
  const summary: UsageSummary = {
    calls: 0,
    failed: 0,
    replayed: 0,
    usage: { input_tokens: 0, output_tokens: 0 },
    cost_usd: 0,
    unmetered_calls: 0,
    by_provider: [],
    by_day: [],
  };
  for (const call of calls) {
    // Skipped calls never reached a provider.
    if (call.outcome === "skipped") continue;
    summary.calls++;
    if (FAILED.has(call.outcome)) summary.failed++;
    if (call.outcome === "replayed") summary.replayed++;
    summary.usage.input_tokens += call.usage.input_tokens;
    summary.usage.output_tokens += call.usage.output_tokens;
    if (call.cost_usd === null) summary.unmetered_calls++;
    else summary.cost_usd += call.cost_usd;
    const day = call.at.slice(0, 10);
    const perDay = days.get(day) ??
      { day, calls: 0, cost_usd: 0, usage: { input_tokens: 0, output_tokens: 0 }, providers: [] };
    perDay.calls++;
    perDay.cost_usd += call.cost_usd ?? 0;
    perDay.usage.input_tokens += call.usage.input_tokens;
    perDay.usage.output_tokens += call.usage.output_tokens;
    days.set(day, perDay);
    if (call.outcome !== "replayed" && call.provider !== null) {
      let share = perDay.providers.find((p) => p.provider === call.provider);
      if (share === undefined) {
        share = {
          provider: call.provider,
          calls: 0,
          cost_usd: 0,
          input_tokens: 0,
          output_tokens: 0,
        };
        perDay.providers.push(share);
      }
      share.calls++;
      share.cost_usd += call.cost_usd ?? 0;
      share.input_tokens += call.usage.input_tokens;
      share.output_tokens += call.usage.output_tokens;
      const list = providers.get(call.provider) ?? [];
      list.push(call);
      providers.set(call.provider, list);
    }
  }
  for (const [provider, list] of providers) {
    const durations = list.map((c) => c.duration_ms).sort((a, b) => a - b);
    const failed = list.filter((c) => FAILED.has(c.outcome)).length;
    summary.by_provider.push({
      provider,
      calls: list.length,
      failed,
      failure_rate: Math.round((failed / list.length) * 1000) / 1000,
      latency_ms: { median: percentile(durations, 0.5), p95: percentile(durations, 0.95) },
      usage: {
        input_tokens: list.reduce((n, c) => n + c.usage.input_tokens, 0),
        output_tokens: list.reduce((n, c) => n + c.usage.output_tokens, 0),
      },
      cost_usd: list.reduce((n, c) => n + (c.cost_usd ?? 0), 0),
      unmetered_calls: list.filter((c) => c.cost_usd === null).length,
    });
  }
  summary.by_provider.sort((a, b) => a.provider.localeCompare(b.provider));
  for (const day of days.values()) {
    day.providers.sort((a, b) => a.provider.localeCompare(b.provider));
  }
  summary.by_day = [...days.values()].sort((a, b) => b.day.localeCompare(a.day));
  return summary;
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

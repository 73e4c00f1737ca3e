/**
 * Which runs and tasks spent what, by day and by hour: the breakdown of `GET /api/costs`
 * beside its per-day totals. Bounded: the {@linkcode COST_TOP_RUNS} dearest runs of each of
 * the newest {@linkcode COST_DAYS} days (the rest summed in `others`), and the hours of the
 * last {@linkcode COST_HOURS} hours, each with its {@linkcode COST_TOP_HOUR_RUNS} dearest.
 * @module
 */
import { addCall, type CallTally, emptyTally, roundUsd } from "../dispatch/mod.ts";
import type { CallRecord } from "../ledger/mod.ts";

/** Runs (or tasks) named per day; the rest are summed. */
export const COST_TOP_RUNS = 10;
/** Days the run breakdown covers, newest first. */
export const COST_DAYS = 14;
/** Hours the hourly breakdown covers, back from now. */
export const COST_HOURS = 48;
/** Runs named per hour. */
export const COST_TOP_HOUR_RUNS = 5;

/** What one run or task spent in a day or an hour. */
export interface RunSpend {
  /** A workflow run or a dispatch task. */
  source: "run" | "task";
  /** Its id. */
  id: string;
  /** Its calls then: every kind, as docs/COUNTS.md defines a call. */
  calls: number;
  /** Cost of its priced calls, in USD. */
  cost_usd: number;
  /** Calls of unknown cost. */
  unmetered_calls: number;
  /** Tokens in and out. */
  input_tokens: number;
  output_tokens: number;
}

/** The rest of a day's runs, summed. */
export interface OtherSpend {
  runs: number;
  calls: number;
  cost_usd: number;
}

/** A day's (UTC) dearest runs. */
export interface DayRuns {
  /** `YYYY-MM-DD`. */
  day: string;
  /** The dearest first (by cost, then tokens). */
  runs: RunSpend[];
  /** The runs left out. */
  others: OtherSpend;
}

/** One hour (UTC) of spending. */
export interface HourSpend {
  /** The hour's start, `YYYY-MM-DDTHH:00Z`. */
  hour: string;
  calls: number;
  cost_usd: number;
  input_tokens: number;
  output_tokens: number;
  /** Its dearest runs, the dearest first. */
  runs: RunSpend[];
}

/** The breakdown of spending by run and by hour. */
export interface CostBreakdown {
  by_run: DayRuns[];
  by_hour: HourSpend[];
}

function add(map: Spends, call: CallRecord): void {
  const key = `${call.source}:${call.id}`;
  const entry = map.get(key) ?? {
    spend: {
      source: call.source,
      id: call.id,
      calls: 0,
      cost_usd: 0,
      unmetered_calls: 0,
      input_tokens: 0,
      output_tokens: 0,
    },
    tally: emptyTally(),
  };
  const t = addCall(entry.tally, call);
  Object.assign(entry.spend, {
    calls: t.calls,
    cost_usd: roundUsd(t.cost_usd),
    unmetered_calls: t.unmetered_calls,
    input_tokens: t.input_tokens,
    output_tokens: t.output_tokens,
  });
  map.set(key, entry);
}

type Spends = Map<string, { spend: RunSpend; tally: CallTally }>;

function dearest(map: Spends): RunSpend[] {
  return [...map.values()].map((e) => e.spend).sort((a, b) =>
    b.cost_usd - a.cost_usd ||
    (b.input_tokens + b.output_tokens) - (a.input_tokens + a.output_tokens) ||
    a.id.localeCompare(b.id)
  );
}

/** The breakdown of `calls` (any order) by run per day, and by hour over the last hours before `now`. */
export function costBreakdown(calls: readonly CallRecord[], now: number): CostBreakdown {
  const days = new Map<string, Spends>();
  const hours = new Map<string, { tally: CallTally; runs: Spends }>();
  const since = new Date(now - COST_HOURS * 3_600_000).toISOString().slice(0, 13);
  for (const call of calls) {
    const day = call.at.slice(0, 10);
    if (!days.has(day)) days.set(day, new Map());
    add(days.get(day)!, call);
    const hour = call.at.slice(0, 13);
    if (hour < since) continue;
    let slot = hours.get(hour);
    if (!slot) {
      slot = { tally: emptyTally(), runs: new Map() };
      hours.set(hour, slot);
    }
    addCall(slot.tally, call);
    add(slot.runs, call);
  }
  const by_run = [...days.keys()].sort().reverse().slice(0, COST_DAYS).map((day) => {
    const all = dearest(days.get(day)!);
    const rest = all.slice(COST_TOP_RUNS);
    return {
      day,
      runs: all.slice(0, COST_TOP_RUNS),
      others: {
        runs: rest.length,
        calls: rest.reduce((n, r) => n + r.calls, 0),
        cost_usd: roundUsd(rest.reduce((n, r) => n + r.cost_usd, 0)),
      },
    };
  });
  const by_hour = [...hours.keys()].sort().reverse().map((hour) => {
    const { tally, runs } = hours.get(hour)!;
    return {
      hour: `${hour}:00Z`,
      calls: tally.calls,
      cost_usd: roundUsd(tally.cost_usd),
      input_tokens: tally.input_tokens,
      output_tokens: tally.output_tokens,
      runs: dearest(runs).slice(0, COST_TOP_HOUR_RUNS),
    };
  });
  return { by_run, by_hour };
}

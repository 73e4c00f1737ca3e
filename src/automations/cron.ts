import { Cron } from "croner";

/** A parsed schedule, paused: svc's scheduler decides when to fire, croner only does the calendar. */
function scheduleOf(cron: string, timezone: string | undefined): Cron {
  return new Cron(cron, { paused: true, ...(timezone ? { timezone } : { timezone: "UTC" }) });
}

/** The first slot of a schedule strictly after `after`, or null when it never fires again. */
export function nextSlot(
  cron: string,
  options: { after: Date; timezone?: string | undefined },
): Date | null {
  return scheduleOf(cron, options.timezone).nextRun(options.after);
}

/** The latest slot of a schedule at or before `at`, or null when there is none. */
export function latestSlot(
  cron: string,
  options: { at: Date; timezone?: string | undefined },
): Date | null {
  // previousRuns() looks strictly before its reference: a slot exactly at `at` counts too.
  const reference = new Date(options.at.getTime() + 1);
  return scheduleOf(cron, options.timezone).previousRuns(1, reference)[0] ?? null;
}

/** Slots looked at, at most, to find a schedule's shortest gap: bounds the work of one check. */
const GAP_SAMPLES = 1000;
/** How far ahead the gap is looked for: a year crosses every month's and the year's boundary. */
const GAP_HORIZON_MS = 366 * 24 * 3600_000;

/**
 * The shortest gap between two consecutive slots of a schedule, in ms, among its next 1000 slots
 * after `after` within a year, or null when it fires at most once in that span. It stops at the
 * first gap shorter than `below`. Exact for any `below` up to a minute: a schedule with more than
 * one second in a minute shows a gap under a minute within its first minute of slots, and one
 * with a single second fires whole minutes apart.
 */
export function shortestGapMs(
  cron: string,
  options: { after: Date; timezone?: string | undefined; below: number },
): number | null {
  const schedule = scheduleOf(cron, options.timezone);
  const horizon = options.after.getTime() + GAP_HORIZON_MS;
  let previous = schedule.nextRun(options.after);
  let shortest: number | null = null;
  for (let i = 1; previous && i < GAP_SAMPLES && previous.getTime() < horizon; i++) {
    const next = schedule.nextRun(previous);
    if (!next) break;
    const gap = next.getTime() - previous.getTime();
    if (shortest === null || gap < shortest) shortest = gap;
    if (shortest < options.below) break;
    previous = next;
  }
  return shortest;
}

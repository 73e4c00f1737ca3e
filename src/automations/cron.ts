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

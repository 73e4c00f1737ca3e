import type { RunContext } from "../run_context.ts";

/**
 * Takes one of the run's concurrency slots for a live call, counted as queued while it waits.
 * Returns the slot's release, or undefined when the run stopped before a slot was free.
 */
export async function takePermit(
  ctx: RunContext,
  signal: AbortSignal,
): Promise<(() => void) | undefined> {
  ctx.callQueued();
  try {
    return await ctx.semaphore.acquire(signal);
  } catch {
    return undefined;
  } finally {
    ctx.callDequeued();
  }
}

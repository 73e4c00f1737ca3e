import { SvcError } from "../errors/mod.ts";

/**
 * Reads a run's or a task's feed to its end (its terminal state); `unavailable` when `signal`
 * stopped the wait first, naming `what` ("run 'r-…'").
 */
export async function followToEnd(
  feed: AsyncIterable<unknown>,
  options: { what: string; signal?: AbortSignal | undefined },
): Promise<void> {
  for await (const _item of feed) {
    // Only the end matters here.
  }
  if (options.signal?.aborted) {
    throw new SvcError("unavailable", `Cannot wait for ${options.what}: the wait was stopped`);
  }
}

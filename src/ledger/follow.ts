import type { FeedLedger } from "./interface.ts";
import { type ActivityItem, endsStream, type EventStream, type FeedItem } from "./records.ts";

/** Options of {@linkcode followEvents}. */
export interface FollowOptions {
  /** Start after this position: the last `seq` the reader saw. Default: from the first event. */
  after?: number;
  /** Stops following (the iteration ends, without an error). */
  signal?: AbortSignal;
  /** With false, ends after the events recorded so far instead of following. Default true. */
  follow?: boolean;
  /**
   * Called while no event comes, at most every this many ms, before waiting again: a long
   * reader's chance to notice a dead host (recovery) or to end. Default 5000.
   */
  idleMs?: number;
  /** Called each time `idleMs` passes without an event. */
  onIdle?: () => Promise<void> | void;
}

/**
 * Replays a stream from a position, then follows it live, whichever process writes it, until
 * its last event (a terminal state) or until `signal` aborts. Every event comes once, in order.
 */
export async function* followEvents(
  ledger: FeedLedger,
  stream: EventStream,
  options: FollowOptions = {},
): AsyncGenerator<FeedItem> {
  let after = options.after ?? -1;
  const idleMs = options.idleMs ?? 5000;
  let waited = false;
  while (!options.signal?.aborted) {
    const items = await ledger.readEvents(stream, { after, limit: 500 });
    for (const item of items) {
      if (options.signal?.aborted) return;
      after = item.seq;
      yield item;
      if (endsStream(item.event)) return;
    }
    if (items.length === 500) continue;
    if (options.follow === false) return;
    // A wait that brought nothing ended by its timeout: the reader's idle moment, after which
    // it reads again (what onIdle did may have added an event).
    if (waited && items.length === 0 && options.onIdle) {
      await options.onIdle();
      waited = false;
      continue;
    }
    await ledger.waitForEvents(stream, {
      after,
      timeoutMs: idleMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    waited = true;
  }
}

/**
 * Replays an owner's activity stream from a position, then follows it live, whichever process
 * writes it, until `signal` aborts (the stream has no end). Every item comes once, in order.
 */
export async function* followActivity(
  ledger: Pick<FeedLedger, "readActivity" | "waitForActivity">,
  owner: string,
  options: FollowOptions = {},
): AsyncGenerator<ActivityItem> {
  let after = options.after ?? -1;
  const idleMs = options.idleMs ?? 5000;
  let waited = false;
  while (!options.signal?.aborted) {
    const items = await ledger.readActivity(owner, { after, limit: 500 });
    for (const item of items) {
      if (options.signal?.aborted) return;
      after = item.seq;
      yield item;
    }
    if (items.length === 500) continue;
    if (options.follow === false) return;
    if (waited && items.length === 0 && options.onIdle) {
      await options.onIdle();
      waited = false;
      continue;
    }
    await ledger.waitForActivity(owner, {
      after,
      timeoutMs: idleMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    waited = true;
  }
}

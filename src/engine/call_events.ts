/**
 * One call's live output read back from its run's feed: the `progress` events of that call, in
 * order, until the call's own `call` event (it was journaled) or the run's end. What
 * `GET /api/workflow/{run_id}/calls/{seq}/events` answers, as a page or followed live.
 * @module
 */
import { endsStream, type FeedItem, type RunEvent } from "../ledger/mod.ts";
import type { CallEventsResult, CallProgressEvent } from "../schemas/mod.ts";

/** Most progress batches one page of a call's output holds. */
export const CALL_EVENTS_PAGE = 500;

/**
 * What one feed item is to call `seq`: a batch of its output, `end` (the call was journaled,
 * or the run ended), or nothing.
 */
export function callProgressOf(
  item: FeedItem<RunEvent>,
  seq: number,
): CallProgressEvent | "end" | undefined {
  const { event } = item;
  if (event.type === "progress" && event.seq === seq) {
    return { feed_seq: item.seq, at: event.at, items: event.items };
  }
  if (event.type === "call" && event.seq === seq) return "end";
  return endsStream(event) ? "end" : undefined;
}

/**
 * Call `seq`'s output from a feed read without following: at most `limit` batches after the
 * reader's position, and whether the call has ended (so that nothing more will come).
 */
export async function callEventsPage(
  feed: AsyncGenerator<FeedItem<RunEvent>>,
  runId: string,
  seq: number,
  limit: number = CALL_EVENTS_PAGE,
): Promise<CallEventsResult> {
  const events: CallProgressEvent[] = [];
  let done = false;
  try {
    for await (const item of feed) {
      const found = callProgressOf(item, seq);
      if (found === "end") {
        done = true;
        break;
      }
      if (found === undefined) continue;
      if (events.length === limit) break;
      events.push(found);
    }
  } finally {
    await feed.return(undefined);
  }
  return { run_id: runId, seq, events, done };
}

/** Call `seq`'s output as it is recorded, followed from a feed until the call ends. */
export async function* followCallEvents(
  feed: AsyncGenerator<FeedItem<RunEvent>>,
  seq: number,
): AsyncGenerator<CallProgressEvent> {
  try {
    for await (const item of feed) {
      const found = callProgressOf(item, seq);
      if (found === "end") return;
      if (found !== undefined) yield found;
    }
  } finally {
    await feed.return(undefined);
  }
}

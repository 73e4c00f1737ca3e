/**
 * What the run manager and the task manager share of a unit's lifecycle in its host: stopping
 * the live ones on close, one poll for cancels asked elsewhere, writing an end the ledger
 * refused until it takes it, the visibility check, the owner's listing query and the wait to
 * the end of a feed.
 *
 * @module
 */
export { CancelPoll, type CancelPollOptions } from "./cancel_poll.ts";
export { followToEnd } from "./follow_to_end.ts";
export { type LiveUnit, stopLive } from "./live_unit.ts";
export { ownerQuery } from "./owner_query.ts";
export { requireVisible, type VisibleTarget } from "./visible.ts";
export { writeUntilTaken, type WriteUntilTakenOptions } from "./write_retry.ts";

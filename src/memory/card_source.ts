import type { Caller } from "../ledger/mod.ts";

/** A board card as memory search reads it: the fields it indexes. */
export interface MemoryCard {
  /** The card's number or id. */
  issue_id: string | number;
  /** Whose card it is, when the source says; a card of another owner is never indexed. */
  owner?: string;
  /** The card's title. */
  title: string;
  /** Its description. */
  desc?: string;
  /** Its labels. */
  labels?: string[];
  /** Its project. */
  project?: string;
  /** Its log, oldest first. */
  log?: Array<{ message?: string }>;
  /** When it last changed (ISO 8601). */
  updated_at: string;
}

/**
 * Where memory search reads board cards: the board service, plugged in by the composition root.
 * `list` returns the caller's cards (everyone's for an administrator), newest first, a page at
 * a time.
 */
export interface CardSource {
  /** A page of the caller's cards, newest first; `next_cursor` null on the last page. */
  list(
    caller: Caller,
    options: { limit: number; cursor?: string },
  ): Promise<{ cards: MemoryCard[]; next_cursor: string | null }>;
}

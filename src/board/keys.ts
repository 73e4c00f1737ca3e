import type { KvKey } from "../platform/mod.ts";

/**
 * The board's KV schema, in `board.kv` of the board directory. Card numbers are negated in
 * keys, so a forward listing (with a `start` for the cursor) yields the newest card first.
 *
 * | key | value |
 * |---|---|
 * | `["meta", "schema"]` | `{version}` |
 * | `["counter"]` | `{last}`: the highest card number given out |
 * | `["cards", -n]` | `{v: 1, card}`: card `n` with its log |
 * | `["cards_by_owner", owner, -n]` | `{}`: index for an owner's listing |
 * | `["changes", seq]` | one applied write, from seq 0, without gaps |
 * | `["head"]` | `{seq}`: the last change; rewritten by every write, polled by followers |
 */
export const KEYS = {
  schema: ["meta", "schema"] as KvKey,
  counter: ["counter"] as KvKey,
  cards: ["cards"] as KvKey,
  card: (n: number): KvKey => ["cards", -n],
  byOwner: (owner: string, n?: number): KvKey =>
    n === undefined ? ["cards_by_owner", owner] : ["cards_by_owner", owner, -n],
  changes: ["changes"] as KvKey,
  change: (seq: number): KvKey => ["changes", seq],
  head: ["head"] as KvKey,
};

/** Version of the board's KV schema this code writes. */
export const BOARD_SCHEMA_VERSION = 1;

/**
 * Replayed journal entries packed together: a resume records every call it replays, and one
 * ledger value per call made the write of a 200-call replay most of the resume's cost (a KV
 * commit costs per value far more than per byte). Consecutive replayed entries of one write
 * share one value under the first one's key, `["journal", run_id, seq]`, as
 * `{"v":1,"pack":[doc, doc, ...]}`; each doc is the entry's own stored document, byte for byte,
 * so a packed entry reads back exactly as a single one does. A live or failed entry (whose
 * reply waits for its commit) is always a value of its own.
 * @module
 */
import type { Stored } from "./context.ts";
import { VALUE_LIMIT } from "./fit.ts";
import type { JournalEntry } from "./records.ts";

/** One journal entry as stored: the entry, and its result inline or in a blob file. */
export interface JournalDoc {
  v: 1;
  entry: JournalEntry;
  result?: Stored;
}

/** A value under a journal key: one entry's document, or a pack of consecutive ones. */
export type StoredJournal = JournalDoc | { v: 1; pack: JournalDoc[] };

const encoder = new TextEncoder();
const HEAD = encoder.encode('{"v":1,"pack":[');
const TAIL = encoder.encode("]}");
/** Most bytes of one pack, its wrapper and separators included. */
const PACK_LIMIT = VALUE_LIMIT;

/** The entries of the values under a run's journal keys, in key order: packs unpacked. */
export function unpackJournal(values: readonly StoredJournal[]): JournalDoc[] {
  return values.flatMap((value) => "pack" in value ? value.pack : [value]);
}

/**
 * Gathers the encoded documents of consecutive replayed entries of one write into packs.
 * `add` takes a document when it extends the open pack; `close` ends the pack and gives the
 * value to store under its first entry's seq.
 */
export class JournalPacker {
  #first = -1;
  #next = -1;
  #docs: Uint8Array[] = [];
  #bytes = HEAD.length + TAIL.length;

  /** Whether a pack is open. */
  get open(): boolean {
    return this.#docs.length > 0;
  }

  /** Whether the document of entry `seq` (`bytes` long) can join the open pack. */
  fits(seq: number, bytes: number): boolean {
    return !this.open || (seq === this.#next && this.#bytes + 1 + bytes <= PACK_LIMIT);
  }

  /** Adds entry `seq`'s document; {@linkcode fits} must have said yes. */
  add(seq: number, doc: Uint8Array): void {
    if (!this.open) this.#first = seq;
    this.#next = seq + 1;
    this.#docs.push(doc);
    this.#bytes += doc.length + 1;
  }

  /**
   * Ends the open pack: its first seq and the value to store (a lone document as it is), or
   * undefined when none is open.
   */
  close(): { seq: number; value: Uint8Array } | undefined {
    const docs = this.#docs;
    if (docs.length === 0) return undefined;
    const seq = this.#first;
    this.#docs = [];
    this.#bytes = HEAD.length + TAIL.length;
    if (docs.length === 1) return { seq, value: docs[0]! };
    const value = new Uint8Array(
      HEAD.length + TAIL.length + docs.reduce((sum, doc) => sum + doc.length + 1, -1),
    );
    value.set(HEAD, 0);
    let offset = HEAD.length;
    for (const [index, doc] of docs.entries()) {
      if (index > 0) value[offset++] = 44; // ","
      value.set(doc, offset);
      offset += doc.length;
    }
    value.set(TAIL, offset);
    return { seq, value };
  }
}

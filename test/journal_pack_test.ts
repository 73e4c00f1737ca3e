import assert from "node:assert/strict";
import { VALUE_LIMIT } from "../src/ledger/fit.ts";
import { JournalPacker, type StoredJournal, unpackJournal } from "../src/ledger/journal_pack.ts";
import { fromBytes, objectBytes, toBytes } from "../src/ledger/json_bytes.ts";

function doc(seq: number, text = "x") {
  return { v: 1 as const, entry: { seq, label: text }, result: { value: text } };
}

/** Packs docs of `seqs` as the ledger's write does; returns the stored values by first seq. */
function pack(seqs: number[], text = "x"): Map<number, Uint8Array> {
  const packer = new JournalPacker();
  const out = new Map<number, Uint8Array>();
  const close = () => {
    const done = packer.close();
    if (done) out.set(done.seq, done.value);
  };
  for (const seq of seqs) {
    const bytes = toBytes(doc(seq, text));
    if (!packer.fits(seq, bytes.length)) close();
    packer.add(seq, bytes);
  }
  close();
  return out;
}

function read(values: Map<number, Uint8Array>) {
  const stored = [...values.entries()].sort(([a], [b]) => a - b)
    .map(([, bytes]) => fromBytes<StoredJournal>(bytes));
  return unpackJournal(stored as never);
}

Deno.test("consecutive entries share one value and read back exactly, in order", () => {
  const values = pack([3, 4, 5, 6]);
  assert.deepEqual([...values.keys()], [3]);
  assert.deepEqual(read(values), [3, 4, 5, 6].map((seq) => doc(seq)));
});

Deno.test("a gap in the seqs starts a new pack; a lone entry is stored as itself", () => {
  const values = pack([1, 2, 5]);
  assert.deepEqual([...values.keys()], [1, 5]);
  assert.deepEqual(fromBytes(values.get(5)!), doc(5), "no pack around a single entry");
  assert.deepEqual(read(values).map((d) => d.entry.seq), [1, 2, 5]);
});

Deno.test("no pack exceeds the ledger's value limit", () => {
  const text = "y".repeat(9000);
  const seqs = Array.from({ length: 40 }, (_, i) => i + 1);
  const values = pack(seqs, text);
  assert.ok(values.size > 1);
  for (const value of values.values()) assert.ok(value.length <= VALUE_LIMIT, `${value.length}`);
  assert.deepEqual(read(values), seqs.map((seq) => doc(seq, text)));
});

Deno.test("a document built from encoded members is byte for byte what toBytes gives", () => {
  const entry = { seq: 1, label: 'é "quoted" \u2028', usage: { input_tokens: 1 } };
  const stored = { value: { nested: [1, "two", null] } };
  assert.deepEqual(
    objectBytes({ v: toBytes(1), entry: toBytes(entry), result: toBytes(stored) }),
    toBytes({ v: 1, entry, result: stored }),
  );
  assert.deepEqual(
    objectBytes({ v: toBytes(1), entry: toBytes(entry), result: undefined }),
    toBytes({ v: 1, entry }),
  );
  assert.deepEqual(objectBytes({}), toBytes({}));
});

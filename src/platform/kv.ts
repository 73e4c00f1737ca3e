import { SvcError } from "../errors/mod.ts";
import type { KvAtomic, KvEntry, KvKey, KvStore } from "./types.ts";

/** The part of an atomic operation svc uses; Deno.Kv's and @deno/kv's both have it. */
interface AtomicLike {
  check(...checks: Array<{ key: KvKey; versionstamp: string | null }>): unknown;
  set(key: KvKey, value: Uint8Array): unknown;
  delete(key: KvKey): unknown;
  commit(): Promise<{ ok: boolean }>;
}

interface RawEntry {
  key: readonly unknown[];
  value: unknown;
  versionstamp: string | null;
}

/** The part of a KV handle svc uses; `Deno.openKv()` and `@deno/kv`'s `openKv()` both return it. */
export interface KvLike {
  get(key: KvKey): Promise<RawEntry>;
  list(
    selector: { prefix: KvKey; start?: KvKey } | { prefix: KvKey; end: KvKey } | {
      start: KvKey;
      end: KvKey;
    },
    options?: { limit?: number; reverse?: boolean },
  ): AsyncIterable<RawEntry>;
  atomic(): AtomicLike;
  close(): void;
}

function entry(raw: RawEntry): KvEntry {
  const value = raw.value instanceof Uint8Array ? raw.value : null;
  return { key: raw.key as KvKey, value, versionstamp: raw.versionstamp };
}

/**
 * Attempts of a commit that finds the KV file locked by another connection's write (two
 * processes, or two handles, on one file): SQLite answers "database is locked" at once when a
 * transaction that read cannot become a writer, whatever its busy timeout. The commit applied
 * nothing, so it is made again, after a short random pause.
 */
const LOCKED_ATTEMPTS = 50;
/**
 * How long a commit keeps trying against a lock, in ms. A lock held by another program (not a
 * commit racing this one) makes every attempt wait out SQLite's busy timeout (5 s in Deno's
 * KV): without a deadline a write would hang for minutes instead of failing clearly.
 */
const LOCKED_DEADLINE_MS = 8_000;

function isLocked(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}

/** SQLite's words for faults of the storage under the ledger, and what svc says of each. */
const STORAGE_FAULTS: ReadonlyArray<[RegExp, string]> = [
  [/disk is full|no space left|quota/i, "the disk is full"],
  [/database is locked|database table is locked|busy/i, "another process holds it locked"],
  [/readonly database|read-only file system|permission denied/i, "its file cannot be written"],
  [
    /disk i\/o error|malformed|not a database|unable to open/i,
    "its file cannot be read or written",
  ],
];

/**
 * A fault of the storage (disk full, file locked, I/O error) as an `unavailable` SvcError that
 * names it: the ledger is not broken, it cannot be used now, and whoever asked may try again.
 * Anything else passes unchanged. The store's own message is never shown (it may name a path).
 */
export function storageFault(error: unknown, action: string): unknown {
  if (!(error instanceof Error) || error instanceof SvcError) return error;
  const found = STORAGE_FAULTS.find(([pattern]) => pattern.test(error.message));
  if (!found) return error;
  return new SvcError("unavailable", `Cannot ${action} the ledger: ${found[1]}`, { cause: error });
}

function wrapAtomic(open: () => AtomicLike): KvAtomic {
  const ops: Array<(atomic: AtomicLike) => void> = [];
  const wrapped: KvAtomic = {
    check(key, versionstamp) {
      ops.push((atomic) => atomic.check({ key, versionstamp }));
      return wrapped;
    },
    set(key, value) {
      ops.push((atomic) => atomic.set(key, value));
      return wrapped;
    },
    delete(key) {
      ops.push((atomic) => atomic.delete(key));
      return wrapped;
    },
    async commit() {
      const started = Date.now();
      for (let attempt = 1;; attempt++) {
        const atomic = open();
        for (const op of ops) op(atomic);
        try {
          const result = await atomic.commit();
          return { ok: result.ok };
        } catch (error) {
          if (
            !isLocked(error) || attempt >= LOCKED_ATTEMPTS ||
            Date.now() - started >= LOCKED_DEADLINE_MS
          ) throw storageFault(error, "write");
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * attempt));
        }
      }
    },
  };
  return wrapped;
}

/** Adapts a Deno KV handle (Deno's own or Node's @deno/kv) to the platform's {@linkcode KvStore}. */
export function wrapKv(kv: KvLike): KvStore {
  return {
    async get(key) {
      try {
        return entry(await kv.get(key));
      } catch (error) {
        throw storageFault(error, "read");
      }
    },
    async *list(prefix, options = {}) {
      const { start, end, ...rest } = options;
      // KV takes a prefix with one bound, or two bounds (both inside the prefix here).
      const selector = end === undefined
        ? start === undefined ? { prefix } : { prefix, start }
        : start === undefined
        ? { prefix, end }
        : { start, end };
      const iterator = kv.list(selector, rest)[Symbol.asyncIterator]();
      try {
        for (;;) {
          let next: IteratorResult<RawEntry>;
          try {
            next = await iterator.next();
          } catch (error) {
            throw storageFault(error, "read");
          }
          if (next.done) return;
          yield entry(next.value);
        }
      } finally {
        // A reader that stops early releases the store's iterator, as for-await would.
        await iterator.return?.();
      }
    },
    atomic: () => wrapAtomic(() => kv.atomic()),
    close: () => kv.close(),
  };
}

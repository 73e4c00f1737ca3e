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

function isLocked(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
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
      for (let attempt = 1;; attempt++) {
        const atomic = open();
        for (const op of ops) op(atomic);
        try {
          const result = await atomic.commit();
          return { ok: result.ok };
        } catch (error) {
          if (!isLocked(error) || attempt >= LOCKED_ATTEMPTS) throw error;
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
    get: async (key) => entry(await kv.get(key)),
    async *list(prefix, options = {}) {
      const { start, end, ...rest } = options;
      // KV takes a prefix with one bound, or two bounds (both inside the prefix here).
      const selector = end === undefined
        ? start === undefined ? { prefix } : { prefix, start }
        : start === undefined
        ? { prefix, end }
        : { start, end };
      for await (const raw of kv.list(selector, rest)) yield entry(raw);
    },
    atomic: () => wrapAtomic(() => kv.atomic()),
    close: () => kv.close(),
  };
}

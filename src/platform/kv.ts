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
    selector: { prefix: KvKey; start?: KvKey },
    options?: { limit?: number; reverse?: boolean },
  ): AsyncIterable<RawEntry>;
  atomic(): AtomicLike;
  close(): void;
}

function entry(raw: RawEntry): KvEntry {
  const value = raw.value instanceof Uint8Array ? raw.value : null;
  return { key: raw.key as KvKey, value, versionstamp: raw.versionstamp };
}

/** Attempts of a commit that SQLite refuses because another connection holds the write lock. */
const BUSY_ATTEMPTS = 60;

/**
 * Whether a commit failed only because another connection (another process, or another commit
 * of this one) held the database's write lock: SQLite's SQLITE_BUSY, which Deno KV and
 * @deno/kv report as "database is locked" instead of waiting. Nothing was written then.
 */
function isBusy(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}

/**
 * An atomic operation recorded, then built and committed at `commit()`; a commit refused as
 * busy is built again and retried after a short pause, so that several processes (and
 * concurrent commits of one) can write the same KV file.
 */
function wrapAtomic(begin: () => AtomicLike): KvAtomic {
  const steps: Array<(atomic: AtomicLike) => void> = [];
  const wrapped: KvAtomic = {
    check(key, versionstamp) {
      steps.push((atomic) => atomic.check({ key, versionstamp }));
      return wrapped;
    },
    set(key, value) {
      steps.push((atomic) => atomic.set(key, value));
      return wrapped;
    },
    delete(key) {
      steps.push((atomic) => atomic.delete(key));
      return wrapped;
    },
    async commit() {
      for (let attempt = 1;; attempt++) {
        const atomic = begin();
        for (const step of steps) step(atomic);
        try {
          const result = await atomic.commit();
          return { ok: result.ok };
        } catch (error) {
          if (!isBusy(error) || attempt >= BUSY_ATTEMPTS) throw error;
          // Up to 50 ms, with jitter so that the writers that collided do not collide again.
          const pause = Math.min(50, 2 ** attempt) * (0.5 + Math.random() / 2);
          await new Promise((resolve) => setTimeout(resolve, pause));
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
      const { start, ...rest } = options;
      const selector = start === undefined ? { prefix } : { prefix, start };
      for await (const raw of kv.list(selector, rest)) yield entry(raw);
    },
    atomic: () => wrapAtomic(() => kv.atomic()),
    close: () => kv.close(),
  };
}

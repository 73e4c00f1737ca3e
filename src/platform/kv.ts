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

/**
 * Commits a busy database refuses, retried: for under 2 s in all. Two handles on one
 * KV file (two processes, a host and a dashboard) that both read then write collide in SQLite
 * ("database is locked": a read transaction cannot become a write one while another writes),
 * and SQLite's own busy wait does not cover that case.
 */
const BUSY_RETRIES = 40;

/** Whether a KV error is SQLite's "database is locked" (SQLITE_BUSY). */
function busy(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}

function wrapAtomic(atomic: AtomicLike): KvAtomic {
  const wrapped: KvAtomic = {
    check(key, versionstamp) {
      atomic.check({ key, versionstamp });
      return wrapped;
    },
    set(key, value) {
      atomic.set(key, value);
      return wrapped;
    },
    delete(key) {
      atomic.delete(key);
      return wrapped;
    },
    async commit() {
      for (let attempt = 0;; attempt++) {
        try {
          const result = await atomic.commit();
          return { ok: result.ok };
        } catch (error) {
          if (!busy(error) || attempt >= BUSY_RETRIES) throw error;
          // SQLite rolled the commit back whole: it is safe to send it again.
          await new Promise((resolve) => setTimeout(resolve, Math.min(2 ** attempt, 50)));
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
    atomic: () => wrapAtomic(kv.atomic()),
    close: () => kv.close(),
  };
}

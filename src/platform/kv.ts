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
      const result = await atomic.commit();
      return { ok: result.ok };
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
    atomic: () => wrapAtomic(kv.atomic()),
    close: () => kv.close(),
  };
}

/**
 * Counts of the ledger's operations in the scale host (`bench_scale_host.ts`): every KV store
 * the host opens (the ledger's and the board's) is wrapped so that its reads, listed entries and
 * commits are counted, by the first part of their key, so a burst shows what each run costs the
 * store and which keys grow with the number of runs.
 * @module
 */
import { denoPlatform } from "../src/platform/deno.ts";
import { type KvAtomic, type KvKey, type KvStore, setPlatform } from "../src/platform/mod.ts";

/** Operations of the stores since the last {@linkcode LedgerOps.take}. */
export interface LedgerOpCounts {
  /** `get` calls. */
  gets: number;
  /** `list` calls, and the entries they yielded. */
  lists: number;
  listed: number;
  /** Commits made, and those whose checks failed (made again by their writer, or given up). */
  commits: number;
  conflicts: number;
  /** The same, by the first part of the key (a commit: of its first write or check). */
  byKey: Record<string, { gets: number; lists: number; listed: number; commits: number }>;
}

function empty(): LedgerOpCounts {
  return { gets: 0, lists: 0, listed: 0, commits: 0, conflicts: 0, byKey: {} };
}

/** The counts of the host's stores: install once, before the services open. */
export class LedgerOps {
  #counts = empty();

  /** Wraps every KV store the platform opens from now on. */
  install(): void {
    setPlatform({
      ...denoPlatform,
      openKv: async (path) => this.#wrap(await denoPlatform.openKv(path)),
    });
  }

  /** The counts since the last take, and a fresh start. */
  take(): LedgerOpCounts {
    const taken = this.#counts;
    this.#counts = empty();
    return taken;
  }

  #of(key: KvKey) {
    const name = String(key[0] ?? "");
    return this.#counts.byKey[name] ??= { gets: 0, lists: 0, listed: 0, commits: 0 };
  }

  #wrap(store: KvStore): KvStore {
    const get: KvStore["get"] = (key) => {
      this.#counts.gets++;
      this.#of(key).gets++;
      return store.get(key);
    };
    const list: KvStore["list"] = (prefix, options) => this.#list(store, prefix, options);
    return {
      get,
      list,
      atomic: () => this.#atomic(store.atomic()),
      close: () => store.close(),
    };
  }

  async *#list(store: KvStore, prefix: KvKey, options?: Parameters<KvStore["list"]>[1]) {
    this.#counts.lists++;
    const of = this.#of(prefix);
    of.lists++;
    for await (const entry of store.list(prefix, options)) {
      this.#counts.listed++;
      of.listed++;
      yield entry;
    }
  }

  #atomic(inner: KvAtomic): KvAtomic {
    let first: KvKey | undefined;
    const atomic: KvAtomic = {
      check: (key, versionstamp) => {
        first ??= key;
        inner.check(key, versionstamp);
        return atomic;
      },
      set: (key, value) => {
        first ??= key;
        inner.set(key, value);
        return atomic;
      },
      delete: (key) => {
        first ??= key;
        inner.delete(key);
        return atomic;
      },
      commit: async (options) => {
        this.#counts.commits++;
        this.#of(first ?? []).commits++;
        const result = await inner.commit(options);
        if (!result.ok) this.#counts.conflicts++;
        return result;
      },
    };
    return atomic;
  }
}

import { joinPath, type KvKey, type KvStore, platform } from "../platform/mod.ts";
import type { SharedKvStore } from "../platform/postgres.ts";

/** Options of {@linkcode openStore}. */
export interface OpenStoreOptions {
  /**
   * The database several hosts share (`postgres://...`, `SVC_LEDGER_URL`). Without it, the
   * store is the Deno KV file `file` of `dir`, this machine's alone.
   */
  url?: string;
  /** The directory of the KV file; created when missing. */
  dir: string;
  /** The KV file's name in `dir` (`svc.kv`, `board.kv`). */
  file: string;
  /** The store's namespace in the database, so that the ledger and the board share one. */
  namespace: string;
  /** Keys whose writes by other hosts the database announces (the feed tick, the board head). */
  watch: KvKey[];
  /** Most connections to the database; the client's default when absent. */
  max?: number;
}

/** An opened store: the KV file of a directory, or a shared database (then `shared` is set). */
export interface OpenedStore {
  /** The store. */
  kv: KvStore;
  /** The same store when it is a shared database, for its change notifications. */
  shared?: SharedKvStore;
}

/**
 * Opens the store of the ledger or the board: "a KV file, or Postgres by URL". The database
 * client is loaded only for a shared store, so a host on KV files never loads it.
 */
export async function openStore(options: OpenStoreOptions): Promise<OpenedStore> {
  const p = platform();
  await p.mkdir(options.dir);
  if (!options.url) return { kv: await p.openKv(joinPath(options.dir, options.file)) };
  const { openPostgresKv } = await import("../platform/postgres.ts");
  const shared = await openPostgresKv(options.url, {
    namespace: options.namespace,
    watch: options.watch,
    ...(options.max !== undefined ? { max: options.max } : {}),
  });
  return { kv: shared, shared };
}

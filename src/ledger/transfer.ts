/**
 * `svc ledger export` and `svc ledger import`: a ledger (and its board) as JSON Lines, to move
 * this machine's KV files to a shared Postgres ledger, or back. Every record of both stores is
 * copied as stored (schema versions included), with the ledger's files (scripts, inputs, large
 * values). Hosts and leases are not: they describe processes, which do not move.
 *
 * Lines: a header `{"svc_ledger_export": 1, ...}`, then `{"store", "key", "value"}` with the
 * value in base64, then `{"file", "content"}`.
 * @module
 */
import * as z from "zod";
import { SvcError } from "../errors/mod.ts";
import { joinPath, type KvKey, type KvStore, platform } from "../platform/mod.ts";
import type { SharedKvStore } from "../platform/postgres.ts";
import { type LedgerFiles, localFiles, sharedFiles } from "./files.ts";
import { isId } from "./ids.ts";

/** Where a ledger is: the KV files of a data directory and board directory, or a database. */
export interface LedgerLocation {
  /** The data directory (`SVC_HOME`). */
  home: string;
  /** The board directory (the KV backend's `board.kv`). */
  boardDir: string;
  /** A shared ledger's database (`postgres://...`); without it, the KV files. */
  url?: string;
}

/** What an export or an import moved. */
export interface TransferCounts {
  /** Records of the ledger's store. */
  ledger: number;
  /** Records of the board's store. */
  board: number;
  /** Files (scripts, inputs, large values). */
  files: number;
}

const STORES = ["ledger", "board"] as const;
type StoreName = typeof STORES[number];
/** Records of processes, not of work: never moved. */
const SKIPPED: ReadonlyArray<string> = ["hosts", "leases"];
/** Records per commit on import: inside both backends' limits (1000 mutations, 800 KiB). */
const BATCH_RECORDS = 400;
const BATCH_BYTES = 400 * 1024;
/** The longest line an import reads: a 64 KiB value or a large file, in base64. */
const MAX_LINE = 64 * 1024 * 1024;

const FILE_PATH =
  /^(runs|tasks)\/([a-z]+_[0-9a-z]+)\/(script\.js|input\.json|blobs\/[0-9a-f]{64}\.json)$/;

const HeaderSchema = z.object({ svc_ledger_export: z.literal(1) }).loose();
const RecordSchema = z.object({
  store: z.enum(STORES),
  key: z.array(z.union([z.string().max(1024), z.number()])).min(1).max(32),
  value: z.string().max(90_000),
}).strict();
const FileSchema = z.object({
  file: z.string().regex(FILE_PATH),
  content: z.string(),
}).strict();

interface Stores {
  kv: Record<StoreName, KvStore>;
  files: LedgerFiles;
  /** Every file's path. */
  listFiles(): AsyncIterable<string>;
  close(): Promise<void>;
}

async function openStores(where: LedgerLocation): Promise<Stores> {
  const p = platform();
  if (where.url) {
    const { openPostgresKv } = await import("../platform/postgres.ts");
    const ledger: SharedKvStore = await openPostgresKv(where.url, { namespace: "ledger" });
    const board = await openPostgresKv(where.url, { namespace: "board", max: 2 }).catch(
      async (error) => {
        await ledger.close();
        throw error;
      },
    );
    return {
      kv: { ledger, board },
      files: sharedFiles(ledger),
      listFiles: () => ledger.listFiles(),
      close: async () => {
        await ledger.close();
        await board.close();
      },
    };
  }
  await p.mkdir(where.home);
  await p.mkdir(where.boardDir);
  const ledger = await p.openKv(joinPath(where.home, "svc.kv"));
  const board = await p.openKv(joinPath(where.boardDir, "board.kv"));
  return {
    kv: { ledger, board },
    files: localFiles(where.home),
    listFiles: () => localPaths(where.home),
    close: async () => {
      await ledger.close();
      await board.close();
    },
  };
}

/** The ledger's files under `home`, as relative paths. */
async function* localPaths(home: string): AsyncIterable<string> {
  const p = platform();
  const names = async (dir: string) => {
    try {
      return (await p.readDir(dir)).sort();
    } catch {
      return [];
    }
  };
  for (const kind of ["runs", "tasks"]) {
    for (const id of await names(joinPath(home, kind))) {
      if (!isId(kind === "runs" ? "run" : "task", id)) continue;
      for (const name of ["script.js", "input.json"]) {
        const path = `${kind}/${id}/${name}`;
        if (FILE_PATH.test(path)) {
          const found = await p.stat(joinPath(home, kind, id, name)).then(() => true, () => false);
          if (found) yield path;
        }
      }
      for (const blob of await names(joinPath(home, kind, id, "blobs"))) {
        const path = `${kind}/${id}/blobs/${blob}`;
        if (FILE_PATH.test(path)) yield path;
      }
    }
  }
}

/** Bytes as base64, in chunks small enough for `String.fromCharCode`'s arguments. */
function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  }
  return btoa(binary);
}

/** The bytes of base64 text; undefined when it is not base64. */
function fromBase64(text: string): Uint8Array | undefined {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return undefined;
  }
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/**
 * The ledger at `where` as JSON Lines, one string per line (without its newline). Stop the
 * hosts first: records written during an export may be missed.
 */
export async function* exportLedger(
  where: LedgerLocation,
  counts: TransferCounts = { ledger: 0, board: 0, files: 0 },
): AsyncGenerator<string> {
  const stores = await openStores(where);
  try {
    yield JSON.stringify({
      svc_ledger_export: 1,
      created_at: new Date().toISOString(),
      from: where.url ? "postgres" : "kv",
    });
    for (const store of STORES) {
      for await (const entry of stores.kv[store].list([])) {
        if (!entry.value || SKIPPED.includes(String(entry.key[0]))) continue;
        counts[store]++;
        yield JSON.stringify({ store, key: entry.key, value: base64(entry.value) });
      }
    }
    for await (const path of stores.listFiles()) {
      const text = await stores.files.read(path);
      if (text === undefined) continue;
      counts.files++;
      yield JSON.stringify({ file: path, content: base64(new TextEncoder().encode(text)) });
    }
  } finally {
    await stores.close();
  }
}

function bad(line: number, what: string): SvcError {
  return new SvcError("invalid_argument", `Cannot import the ledger: line ${line} ${what}`);
}

/** Whether a store holds anything but its schema version. */
async function holdsWork(store: KvStore): Promise<boolean> {
  for await (const entry of store.list([], { limit: 3 })) {
    if (entry.key[0] !== "meta" && !SKIPPED.includes(String(entry.key[0]))) return true;
  }
  return false;
}

/**
 * Writes an export's lines into the ledger at `where`, which must hold no work yet (a new
 * database, or a data directory never used). The files first, then the records: a reader never
 * finds a run without its script. Resolves to what was imported.
 */
export async function importLedger(
  lines: AsyncIterable<string>,
  where: LedgerLocation,
): Promise<TransferCounts> {
  const counts: TransferCounts = { ledger: 0, board: 0, files: 0 };
  const stores = await openStores(where);
  try {
    for (const store of STORES) {
      if (await holdsWork(stores.kv[store])) {
        throw new SvcError(
          "conflict",
          `Cannot import the ledger: the target's ${store} already holds records (import into an empty ledger)`,
        );
      }
    }
    const pending: Record<StoreName, Array<[KvKey, Uint8Array]>> = { ledger: [], board: [] };
    const bytes: Record<StoreName, number> = { ledger: 0, board: 0 };
    const flush = async (store: StoreName) => {
      if (pending[store].length === 0) return;
      const atomic = stores.kv[store].atomic();
      for (const [key, value] of pending[store]) atomic.set(key, value);
      await atomic.commit();
      pending[store] = [];
      bytes[store] = 0;
    };
    let number = 0;
    let header = false;
    // Records wait until every file is in: an import cut short leaves no run without its script.
    const records: Array<{ store: StoreName; key: KvKey; value: Uint8Array }> = [];
    for await (const line of lines) {
      number++;
      if (line.trim() === "") continue;
      if (line.length > MAX_LINE) throw bad(number, "is too long");
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw bad(number, "is not JSON");
      }
      if (!header) {
        if (!HeaderSchema.safeParse(parsed).success) {
          throw bad(number, "is not the header of an svc ledger export (svc_ledger_export: 1)");
        }
        header = true;
        continue;
      }
      const file = FileSchema.safeParse(parsed);
      if (file.success) {
        const content = fromBase64(file.data.content);
        if (content === undefined) throw bad(number, "holds a file whose content is not base64");
        await stores.files.write(file.data.file, new TextDecoder().decode(content));
        counts.files++;
        continue;
      }
      const record = RecordSchema.safeParse(parsed);
      if (!record.success) throw bad(number, "is neither a record nor a file of an export");
      const value = fromBase64(record.data.value);
      if (value === undefined) throw bad(number, "holds a value that is not base64");
      if (value.length > 65_536) throw bad(number, "holds a value over 64 KiB");
      records.push({ store: record.data.store, key: record.data.key, value });
    }
    if (!header) throw bad(number, "ends the input: it holds no export");
    for (const { store, key, value } of records) {
      if (SKIPPED.includes(String(key[0]))) continue;
      pending[store].push([key, value]);
      bytes[store] += value.length;
      counts[store]++;
      if (pending[store].length >= BATCH_RECORDS || bytes[store] >= BATCH_BYTES) {
        await flush(store);
      }
    }
    for (const store of STORES) await flush(store);
    return counts;
  } finally {
    await stores.close();
  }
}

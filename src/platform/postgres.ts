/**
 * The ledger's key-value store on Postgres, for several hosts sharing one ledger. It keeps the
 * contract of the Deno KV store ({@linkcode KvStore}) exactly: ordered keys, atomic commits
 * guarded by versionstamp checks, the same size limits. Over it, the ledger needs no code of its
 * own per backend, so a run behaves identically on either.
 *
 * - Rows: `svc_kv(ns, key, value, version)`; `key` holds the ordered encoding of `pg_keys.ts`.
 * - A commit is one call of `svc_kv_commit()`: it takes a transaction-scoped advisory lock per
 *   key it checks or writes (a 64-bit hash of the key, in ascending order, so commits never
 *   deadlock), checks, then writes, in one statement. Two commits on one key run one after the other; a check of an absent key is
 *   as safe as any other. This is what makes a queue claim go to one host only.
 * - A lazy commit ({@linkcode KvCommitOptions.lazy}: a run's feed events alone) is the same
 *   statement with `synchronous_commit` off for its transaction: it costs no disk flush of its
 *   own, and the run's next journal commit flushes it (the WAL is written in order), so a
 *   sequential step costs one flush, not two.
 * - A commit that sets a watched key (the ledger's feed tick) sends `NOTIFY svc_kv`; every other
 *   host `LISTEN`s and wakes its readers at once instead of at its next poll (a host's own
 *   readers are woken by its own write, so it ignores its own notifications). A host's writes
 *   of the few milliseconds after one notification share the next (`pg_announce.ts`).
 * - Files (a run's script, input and large values) live in `svc_files`, so that any host can
 *   resume or read a run another host started.
 * - Schema changes are versioned migrations applied in one transaction at start-up; a host
 *   refuses a database whose schema is newer than it knows.
 * @module
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import postgres from "postgres";
import { SvcError } from "../errors/mod.ts";
import { Announcer } from "./pg_announce.ts";
import { decodeKey, encodeKey, encodeKeyHex, prefixEnd } from "./pg_keys.ts";
import type { KvAtomic, KvCommitOptions, KvEntry, KvKey, KvStore } from "./types.ts";

/** Deno KV's limits, kept so that the ledger clips and splits the same way on both backends. */
const MAX_VALUE_BYTES = 65_536;
const MAX_KEY_BYTES = 2_048;
const MAX_MUTATIONS = 1_000;
const MAX_CHECKS = 100;
const MAX_COMMIT_BYTES = 819_200;
/** Rows a list reads per query. */
const PAGE_ROWS = 256;
/** The channel of change notifications; the payload is the namespace written. */
const CHANNEL = "svc_kv";
/** The advisory lock that makes one host at a time migrate. */
const MIGRATION_LOCK = 7_311_000_019;

/** The schema, as ordered migrations. A new version appends; none is ever edited. */
const MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: "kv rows, files and the commit function",
    sql: `
CREATE TABLE svc_kv (
  ns text NOT NULL,
  key bytea NOT NULL,
  value bytea NOT NULL,
  version bigint NOT NULL,
  PRIMARY KEY (ns, key)
);
CREATE SEQUENCE svc_kv_version;
CREATE TABLE svc_files (
  ns text NOT NULL,
  path text NOT NULL,
  content bytea NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (ns, path)
);
CREATE FUNCTION svc_kv_commit(
  p_ns text, p_check_keys text[], p_check_stamps bigint[], p_set_keys text[],
  p_set_values text[], p_delete_keys text[], p_locks bigint[], p_origin text
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  v_found bigint;
  v_stamp bigint;
  i integer;
BEGIN
  -- p_locks: one per key, distinct and in ascending order (the caller sorts them); unnest
  -- yields them in that order, so every commit takes its locks in one global order.
  PERFORM pg_advisory_xact_lock(l) FROM unnest(p_locks) AS l;
  FOR i IN 1 .. coalesce(array_length(p_check_keys, 1), 0) LOOP
    v_found := NULL;
    SELECT version INTO v_found FROM svc_kv
      WHERE ns = p_ns AND key = decode(p_check_keys[i], 'hex');
    IF v_found IS DISTINCT FROM p_check_stamps[i] THEN
      RETURN NULL;
    END IF;
  END LOOP;
  v_stamp := nextval('svc_kv_version');
  DELETE FROM svc_kv WHERE ns = p_ns
    AND key IN (SELECT decode(k, 'hex') FROM unnest(p_delete_keys) AS k);
  INSERT INTO svc_kv (ns, key, value, version)
    SELECT p_ns, decode(k, 'hex'), decode(v, 'hex'), v_stamp
    FROM unnest(p_set_keys, p_set_values) AS t(k, v)
  ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, version = excluded.version;
  IF p_origin IS NOT NULL THEN
    PERFORM pg_notify('${CHANNEL}', p_ns || ' ' || p_origin);
  END IF;
  RETURN v_stamp;
END
$fn$;
`,
  },
  {
    version: 2,
    name: "a commit plans no statement it does not run",
    // The same function (arguments, locks, checks, result), its DELETE and INSERT run only when
    // there is something to delete or write. PL/pgSQL re-plans the DELETE on every call (its
    // plan for a given array estimates cheaper than the generic one), about 0.1 ms of server
    // time a commit, though a step's commit deletes nothing. Hosts of schema 1 that are
    // running call it unchanged.
    sql: `
CREATE OR REPLACE FUNCTION svc_kv_commit(
  p_ns text, p_check_keys text[], p_check_stamps bigint[], p_set_keys text[],
  p_set_values text[], p_delete_keys text[], p_locks bigint[], p_origin text
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  v_found bigint;
  v_stamp bigint;
  i integer;
BEGIN
  -- p_locks: one per key, distinct and in ascending order (the caller sorts them); unnest
  -- yields them in that order, so every commit takes its locks in one global order.
  PERFORM pg_advisory_xact_lock(l) FROM unnest(p_locks) AS l;
  FOR i IN 1 .. coalesce(array_length(p_check_keys, 1), 0) LOOP
    v_found := NULL;
    SELECT version INTO v_found FROM svc_kv
      WHERE ns = p_ns AND key = decode(p_check_keys[i], 'hex');
    IF v_found IS DISTINCT FROM p_check_stamps[i] THEN
      RETURN NULL;
    END IF;
  END LOOP;
  v_stamp := nextval('svc_kv_version');
  IF cardinality(p_delete_keys) > 0 THEN
    DELETE FROM svc_kv WHERE ns = p_ns
      AND key IN (SELECT decode(k, 'hex') FROM unnest(p_delete_keys) AS k);
  END IF;
  IF cardinality(p_set_keys) > 0 THEN
    INSERT INTO svc_kv (ns, key, value, version)
      SELECT p_ns, decode(k, 'hex'), decode(v, 'hex'), v_stamp
      FROM unnest(p_set_keys, p_set_values) AS t(k, v)
    ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, version = excluded.version;
  END IF;
  IF p_origin IS NOT NULL THEN
    PERFORM pg_notify('${CHANNEL}', p_ns || ' ' || p_origin);
  END IF;
  RETURN v_stamp;
END
$fn$;
`,
  },
];

/** One commit: a single statement, so one round trip (prepared once per connection). */
const COMMIT = "SELECT svc_kv_commit($1, $2::text[], $3::bigint[], $4::text[], $5::text[], " +
  "$6::text[], $7::bigint[], $8)::text AS stamp";
/**
 * A lazy commit: the same, and its transaction does not wait for its WAL flush
 * (`synchronous_commit` is read when the transaction commits, so setting it anywhere in the
 * statement counts). The WAL is one sequence: the next flushed commit of any session, or the
 * WAL writer within a fraction of a second, makes it durable, and never a later commit
 * without it.
 */
const LAZY_COMMIT = `${COMMIT}, set_config('synchronous_commit', 'off', true)`;

/** The newest schema version this svc knows. */
export const POSTGRES_SCHEMA_VERSION: number = MIGRATIONS.length;

/** Options of {@linkcode openPostgresKv}. */
export interface PostgresKvOptions {
  /** Which store of the host this is (`ledger`, `board`): rows of each are kept apart. */
  namespace: string;
  /** Keys whose writes notify every host's {@linkcode SharedKvStore.onChange} listeners. */
  watch?: readonly KvKey[];
  /** Most connections of the pool. Default 8. */
  max?: number;
  /** How long one statement may take before the database cancels it, in ms. Default 15000. */
  statementTimeoutMs?: number;
}

/** A store several hosts share: it tells of other hosts' writes, and keeps files too. */
export interface SharedKvStore extends KvStore {
  /** Where it is, for messages (without a password). */
  readonly location: string;
  /**
   * Calls `listener` after any host commits a write of a watched key (soon after, not at
   * once; never for certain: a reader still polls as a fallback). Returns the unsubscribe.
   */
  onChange(listener: () => void): () => void;
  /** Writes a file, whole (a reader sees the old content or the new, never a part). */
  writeFile(path: string, content: Uint8Array): Promise<void>;
  /** A file's content, or undefined when there is none. */
  readFile(path: string): Promise<Uint8Array | undefined>;
  /** The paths of every file, in order. */
  listFiles(): AsyncIterable<string>;
  /** Closes every connection; resolves once they are closed. */
  close(): Promise<void>;
}

/** Postgres's SQLSTATE classes and client codes, and what svc says of each. */
function faultOf(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = String((error as { code?: unknown }).code ?? "");
  if (code === "57014") return "the database did not answer in time";
  if (code === "53100") return "the database's disk is full";
  if (code.startsWith("53")) return "the database is out of resources";
  if (code.startsWith("28")) return "the database refused svc's login";
  if (code === "3D000") return "the database does not exist";
  if (
    code.startsWith("08") || code.startsWith("57P") || code.startsWith("CONNECT") ||
    /^E(CONNREFUSED|CONNRESET|PIPE|HOSTUNREACH|NETUNREACH|AI_AGAIN)$/.test(code) ||
    code === "ENOTFOUND" || code === "ETIMEDOUT" || error.name === "ConnectionRefused" ||
    error.name === "ConnectionReset" || error.name === "BrokenPipe"
  ) return "the database cannot be reached";
  return undefined;
}

/**
 * A fault of the database (unreachable, restarting, too slow, full) as an `unavailable`
 * SvcError that names it; anything else passes unchanged. The driver's own message is never
 * shown (it may name an address or a user).
 */
export function databaseFault(error: unknown, action: string): unknown {
  if (error instanceof SvcError) return error;
  const fault = faultOf(error);
  if (fault === undefined) return error;
  return new SvcError("unavailable", `Cannot ${action} the ledger: ${fault}`, { cause: error });
}

/** The URL without its password: safe to print. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = "";
    parsed.search = "";
    return parsed.toString();
  } catch {
    return "a database URL that does not parse";
  }
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** A Postgres array literal of `items` (hex strings and digits only: nothing to quote). */
function arrayLiteral(items: ReadonlyArray<string | null>): string {
  return `{${items.map((item) => item ?? "NULL").join(",")}}`;
}

/**
 * The advisory lock of a key: the first 8 bytes of its SHA-256 (with the namespace), as a
 * signed 64-bit number. Two keys sharing a lock only wait for each other. Every host of a ledger
 * must take the same lock for a key, whatever its version: this is fixed.
 */
function lockOf(ns: string, keyHex: string): bigint {
  const digest = createHash("sha256").update(ns).update("\0").update(keyHex).digest();
  return digest.readBigInt64BE(0);
}

function stampOf(version: string | number | bigint): string {
  return BigInt(version).toString(16).padStart(20, "0");
}

function versionOf(stamp: string | null): string | null {
  if (stamp === null) return null;
  if (!/^[0-9a-f]{1,20}$/.test(stamp)) return "-1";
  return BigInt(`0x${stamp}`).toString();
}

function bytesOf(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return new Uint8Array(value);
  throw new TypeError("Cannot read a ledger row: its value is not bytes");
}

type Sql = postgres.Sql;

async function migrate(sql: Sql, location: string): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx.unsafe(
      "CREATE TABLE IF NOT EXISTS svc_schema (version integer PRIMARY KEY, name text NOT NULL, " +
        "applied_at timestamptz NOT NULL DEFAULT now())",
    );
    const [row] = await tx<Array<{ version: number }>>`
      SELECT coalesce(max(version), 0)::integer AS version FROM svc_schema`;
    const version = row?.version ?? 0;
    if (version > POSTGRES_SCHEMA_VERSION) {
      throw new SvcError(
        "internal",
        `Cannot open the ledger at ${location}: it has schema version ${version}, this svc knows up to ${POSTGRES_SCHEMA_VERSION}`,
      );
    }
    for (const migration of MIGRATIONS.slice(version)) {
      await tx.unsafe(migration.sql);
      await tx`INSERT INTO svc_schema (version, name) VALUES (${migration.version}, ${migration.name})`;
    }
  });
}

/**
 * Opens a store in the Postgres database of `url` (`postgres://...`), bringing its schema up to
 * date. Fails with an `unavailable` error naming the fault when the database cannot be used.
 */
export async function openPostgresKv(
  url: string,
  options: PostgresKvOptions,
): Promise<SharedKvStore> {
  const location = redactUrl(url);
  let sql: Sql;
  try {
    sql = postgres(url, {
      max: options.max ?? 8,
      connect_timeout: 10,
      idle_timeout: 60,
      onnotice: () => {},
      connection: {
        application_name: "svc",
        statement_timeout: options.statementTimeoutMs ?? 15_000,
      },
    });
  } catch (error) {
    throw new SvcError(
      "invalid_argument",
      `Cannot open the ledger: SVC_LEDGER_URL does not parse`,
      {
        cause: error,
      },
    );
  }
  try {
    await migrate(sql, location);
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw databaseFault(error, "open");
  }
  const store = new PostgresKv(sql, options, location);
  try {
    await store.listen();
  } catch (error) {
    await store.close();
    throw databaseFault(error, "open");
  }
  return store;
}

/** The store itself; see the module's documentation. */
class PostgresKv implements SharedKvStore {
  readonly location: string;
  readonly #sql: Sql;
  readonly #ns: string;
  readonly #watched: Set<string>;
  readonly #listeners = new Set<() => void>();
  /** This handle's mark on its notifications, so that it ignores its own. */
  readonly #origin = crypto.randomUUID();
  readonly #announcer: Announcer;
  #unlisten: (() => Promise<void>) | undefined;
  #closing: Promise<void> | undefined;

  constructor(sql: Sql, options: PostgresKvOptions, location: string) {
    this.#sql = sql;
    const payload = `${options.namespace} ${this.#origin}`;
    this.#announcer = new Announcer({
      send: async () => {
        await sql`SELECT pg_notify(${CHANNEL}, ${payload})`;
      },
    });
    this.#ns = options.namespace;
    this.#watched = new Set((options.watch ?? []).map(encodeKeyHex));
    this.location = location;
  }

  async listen(): Promise<void> {
    const { unlisten } = await this.#sql.listen(CHANNEL, (payload) => {
      // Another handle's write of this namespace: this handle's own writes woke its readers.
      if (payload === `${this.#ns} ${this.#origin}` || !payload.startsWith(`${this.#ns} `)) return;
      for (const listener of this.#listeners) listener();
    });
    this.#unlisten = unlisten;
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async get(key: KvKey): Promise<KvEntry> {
    let rows: Array<{ value: Uint8Array; version: string }>;
    try {
      rows = await this.#sql`SELECT value, version FROM svc_kv
        WHERE ns = ${this.#ns} AND key = decode(${encodeKeyHex(key)}, 'hex')`;
    } catch (error) {
      throw databaseFault(error, "read");
    }
    const row = rows[0];
    if (!row) return { key, value: null, versionstamp: null };
    return { key, value: bytesOf(row.value), versionstamp: stampOf(row.version) };
  }

  async *list(
    prefix: KvKey,
    options: { limit?: number; reverse?: boolean; start?: KvKey; end?: KvKey } = {},
  ): AsyncIterable<KvEntry> {
    const encoded = encodeKey(prefix);
    // The prefix itself is not under it: its range starts just past it.
    let lower = hex(options.start ? encodeKey(options.start) : encoded);
    let lowerInclusive = options.start !== undefined;
    let upper = hex(options.end ? encodeKey(options.end) : prefixEnd(encoded));
    const reverse = options.reverse === true;
    let left = options.limit ?? Infinity;
    while (left > 0) {
      const take = Math.min(PAGE_ROWS, left);
      let rows: Array<{ key: Uint8Array; value: Uint8Array; version: string }>;
      try {
        const from = lowerInclusive
          ? this.#sql`key >= decode(${lower}, 'hex')`
          : this.#sql`key > decode(${lower}, 'hex')`;
        rows = await this.#sql`SELECT key, value, version FROM svc_kv
          WHERE ns = ${this.#ns} AND ${from} AND key < decode(${upper}, 'hex')
          ORDER BY key ${reverse ? this.#sql`DESC` : this.#sql`ASC`} LIMIT ${take}`;
      } catch (error) {
        throw databaseFault(error, "read");
      }
      for (const row of rows) {
        yield {
          key: decodeKey(bytesOf(row.key)),
          value: bytesOf(row.value),
          versionstamp: stampOf(row.version),
        };
      }
      left -= rows.length;
      if (rows.length < take) return;
      const last = hex(bytesOf(rows[rows.length - 1]!.key));
      if (reverse) upper = last;
      else {
        lower = last;
        lowerInclusive = false;
      }
    }
  }

  atomic(): KvAtomic {
    const checks = new Map<string, string | null>();
    const writes = new Map<string, Uint8Array | null>();
    let bytes = 0;
    const keyHex = (key: KvKey) => {
      // Straight to hex, the form the commit sends: the bytes themselves are never needed.
      const encoded = encodeKeyHex(key);
      if (encoded.length > 2 * MAX_KEY_BYTES) {
        throw new TypeError(`Key too large for write (max ${MAX_KEY_BYTES} bytes)`);
      }
      bytes += encoded.length / 2;
      return encoded;
    };
    const atomic: KvAtomic = {
      check: (key, versionstamp) => {
        checks.set(keyHex(key), versionstamp);
        return atomic;
      },
      set: (key, value) => {
        if (value.length > MAX_VALUE_BYTES) {
          throw new TypeError(`Value too large (max ${MAX_VALUE_BYTES} bytes)`);
        }
        bytes += value.length;
        // A later write of a key replaces an earlier one, as Deno KV applies them in order.
        writes.set(keyHex(key), value);
        return atomic;
      },
      delete: (key) => {
        writes.set(keyHex(key), null);
        return atomic;
      },
      commit: (options) => this.#commit(checks, writes, bytes, options),
    };
    return atomic;
  }

  async #commit(
    checks: Map<string, string | null>,
    writes: Map<string, Uint8Array | null>,
    bytes: number,
    options: KvCommitOptions = {},
  ): Promise<{ ok: boolean }> {
    if (checks.size > MAX_CHECKS) throw new TypeError(`Too many checks (max ${MAX_CHECKS})`);
    if (writes.size > MAX_MUTATIONS) {
      throw new TypeError(`Too many mutations (max ${MAX_MUTATIONS})`);
    }
    if (bytes > MAX_COMMIT_BYTES) {
      throw new TypeError(`Total mutation size too large (max ${MAX_COMMIT_BYTES} bytes)`);
    }
    const setKeys: string[] = [];
    const setValues: string[] = [];
    const deleteKeys: string[] = [];
    let notify = false;
    const locks = new Set<bigint>();
    for (const key of checks.keys()) locks.add(lockOf(this.#ns, key));
    for (const [key, value] of writes) {
      locks.add(lockOf(this.#ns, key));
      if (value === null) deleteKeys.push(key);
      else {
        setKeys.push(key);
        setValues.push(hex(value));
        if (this.#watched.has(key)) notify = true;
      }
    }
    // The other hosts learn of a watched write from this commit, or soon after with others.
    const covered = notify ? this.#announcer.inline() : undefined;
    const announce = covered !== undefined;
    const locked = [...locks].sort((a, b) => a < b ? -1 : a > b ? 1 : 0).map(String);
    const args = [
      this.#ns,
      arrayLiteral([...checks.keys()]),
      arrayLiteral([...checks.values()].map(versionOf)),
      arrayLiteral(setKeys),
      arrayLiteral(setValues),
      arrayLiteral(deleteKeys),
      arrayLiteral(locked),
      announce ? this.#origin : null,
    ];
    let rows: Array<{ stamp: string | null }>;
    try {
      const commit = this.#sql.unsafe<Array<{ stamp: string | null }>>(
        options.lazy === true ? LAZY_COMMIT : COMMIT,
        args,
        {
          prepare: true,
        },
      );
      if (notify && !announce) this.#announcer.later(commit);
      rows = await commit;
      if (covered && rows[0]?.stamp) this.#announcer.announced(covered);
    } catch (error) {
      throw databaseFault(error, "write");
    }
    return { ok: rows[0]?.stamp !== null && rows[0]?.stamp !== undefined };
  }

  async writeFile(path: string, content: Uint8Array): Promise<void> {
    try {
      await this.#sql`INSERT INTO svc_files (ns, path, content)
        VALUES (${this.#ns}, ${path}, decode(${hex(content)}, 'hex'))
        ON CONFLICT (ns, path) DO UPDATE SET content = excluded.content, written_at = now()`;
    } catch (error) {
      throw databaseFault(error, "write");
    }
  }

  async readFile(path: string): Promise<Uint8Array | undefined> {
    let rows: Array<{ content: Uint8Array }>;
    try {
      rows = await this.#sql`SELECT content FROM svc_files
        WHERE ns = ${this.#ns} AND path = ${path}`;
    } catch (error) {
      throw databaseFault(error, "read");
    }
    const row = rows[0];
    return row ? bytesOf(row.content) : undefined;
  }

  async *listFiles(): AsyncIterable<string> {
    let after = "";
    for (;;) {
      let rows: Array<{ path: string }>;
      try {
        rows = await this
          .#sql`SELECT path FROM svc_files WHERE ns = ${this.#ns} AND path COLLATE "C" > ${after}
          ORDER BY path COLLATE "C" LIMIT ${PAGE_ROWS}`;
      } catch (error) {
        throw databaseFault(error, "read");
      }
      for (const row of rows) yield row.path;
      if (rows.length < PAGE_ROWS) return;
      after = rows[rows.length - 1]!.path;
    }
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#listeners.clear();
      await this.#announcer.close();
      await this.#unlisten?.().catch(() => {});
      await this.#sql.end({ timeout: 2 }).catch(() => {});
    })();
    return this.#closing;
  }
}

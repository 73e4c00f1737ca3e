/**
 * What one journaled sequential step costs the Postgres server, counted rather than timed (so
 * that the counts hold on a loaded machine): WAL flushes, ledger commits and notifications per
 * step, as (chain of 41 calls - chain of 1) / 40 (the median of 3 such counts), and the host's
 * CPU per step. Where a step's
 * time goes, as the server tracks it: the time inside the commit function and the time of the
 * WAL flushes; and the host's CPU of the store and its client alone, for one commit of the
 * step's rows.
 * The server counts a connection's WAL flushes and transactions when it ends, so each chain runs
 * on a ledger of its own, closed before its counts are read.
 * @module
 */
import process from "node:process";
import postgres from "postgres";
import { openPostgresKv } from "../src/platform/postgres.ts";
import { decodeKey } from "../src/platform/pg_keys.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { RunManager } from "../src/engine/mod.ts";
import { openLedger } from "../src/ledger/mod.ts";
import type { PgServer } from "../test/pg_server.ts";
import { limited } from "./bench_limit.ts";

const LONG = 41;
const DATABASE = "bench_profile";

/** Per-step counts of a sequential chain on a Postgres ledger. */
export interface PostgresStepProfile {
  /** WAL flushes (fsyncs) per step. */
  walFlushes: number;
  /** Ledger commits (calls of `svc_kv_commit()`) per step. */
  commits: number;
  /** Notifications (`NOTIFY svc_kv`) other hosts receive per step. */
  notifications: number;
  /** CPU of the host's process per step, in ms (the guest's not included). */
  hostCpuMs: number;
  /** Server time inside `svc_kv_commit()` per step, in ms (its statements, locks and notify). */
  commitFunctionMs: number;
  /** Time of the WAL flushes (fsyncs) per step, in ms (`pg_stat_wal.wal_sync_time`). */
  walSyncMs: number;
  /** The host's CPU of the store and its Postgres client for one commit of a step's rows, ms. */
  storeCpuMs: number;
}

interface Counts {
  walFlushes: number;
  commits: number;
  notifications: number;
  hostCpuMs: number;
  commitFunctionMs: number;
  walSyncMs: number;
}

/** Commits of a step's rows timed for the store's own CPU. */
const STORE_COMMITS = 300;

interface ServerCounts {
  wal: number;
  commits: number;
  commitMs: number;
  walSyncMs: number;
}

async function serverCounts(server: PgServer): Promise<ServerCounts> {
  // A backend reports its counts when it exits: wait until svc's have.
  for (let i = 0; i < 200; i++) {
    const left = await server.psql(
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'svc'",
    );
    if (Number(left.trim()) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const [wal, commits] = await Promise.all([
    server.psql("SELECT wal_sync || ' ' || wal_sync_time FROM pg_stat_wal"),
    server.psql(
      "SELECT coalesce(sum(calls), 0) || ' ' || coalesce(sum(total_time), 0) " +
        "FROM pg_stat_user_functions WHERE funcname = 'svc_kv_commit'",
      DATABASE,
    ),
  ]);
  const [walCount, walMs] = wal.trim().split(" ").map(Number);
  const [commitCount, commitMs] = commits.trim().split(" ").map(Number);
  return { wal: walCount!, walSyncMs: walMs!, commits: commitCount!, commitMs: commitMs! };
}

async function countChain(server: PgServer, url: string, home: string, calls: number) {
  let notifications = 0;
  const listener = postgres(url, { max: 1, onnotice: () => {} });
  await listener.listen("svc_kv", () => notifications++);
  const before = await serverCounts(server);
  const ledger = await openLedger(home, { url });
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
  });
  const cpu = process.cpuUsage();
  try {
    const script = `for (let i = 0; i < ${calls}; i++) await agent("step " + i);\nreturn 1;\n`;
    const started = await manager.start(
      { script, filename: "chain.js", fake_dispatch: true },
      { owner: "local" },
    );
    await limited("the profiled chain", manager.wait(started.run_id, { owner: "local" }));
  } finally {
    await manager.close();
    await ledger.close();
  }
  const used = process.cpuUsage(cpu);
  const after = await serverCounts(server);
  await listener.end({ timeout: 2 });
  return {
    walFlushes: after.wal - before.wal,
    commits: after.commits - before.commits,
    notifications,
    hostCpuMs: (used.user + used.system) / 1000,
    commitFunctionMs: after.commitMs - before.commitMs,
    walSyncMs: after.walSyncMs - before.walSyncMs,
  };
}

/**
 * The host's CPU per commit of the store and its client alone: the rows of the chain's last
 * step (the latest commit of six rows) committed again and again through a store of its own.
 */
async function storeCpu(url: string): Promise<number> {
  const reader = postgres(url, { max: 1, onnotice: () => {} });
  let rows: Array<{ key: Uint8Array; value: Uint8Array }>;
  try {
    rows = await reader`SELECT key, value FROM svc_kv WHERE ns = 'ledger' AND version = (
      SELECT version FROM svc_kv WHERE ns = 'ledger' GROUP BY version HAVING count(*) = 6
      ORDER BY version DESC LIMIT 1)`;
  } finally {
    await reader.end({ timeout: 2 });
  }
  const writes = rows.map((row) => ({ key: decodeKey(row.key), value: new Uint8Array(row.value) }));
  const store = await openPostgresKv(url, {
    namespace: "store_cpu",
    watch: [["meta", "feed_tick"]],
  });
  try {
    const commit = () => {
      const atomic = store.atomic();
      for (const { key, value } of writes) atomic.set(key, value);
      return atomic.commit();
    };
    for (let i = 0; i < 30; i++) await commit();
    const cpu = process.cpuUsage();
    for (let i = 0; i < STORE_COMMITS; i++) await commit();
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / 1000 / STORE_COMMITS;
  } finally {
    await store.close();
  }
}

/** How many times the two chains are counted; each figure is the median of the repetitions. */
const COUNTS = 3;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Counts a step's work on `server` (fsync on for the flushes to count). */
export async function profilePostgresStep(
  server: PgServer,
  root: string,
): Promise<PostgresStepProfile> {
  const url = await server.database(DATABASE);
  // Counted for every session of the database, from its next connection on.
  await server.psql(`ALTER DATABASE ${DATABASE} SET track_functions = 'pl'`);
  await server.psql(`ALTER DATABASE ${DATABASE} SET track_wal_io_timing = on`);
  const steps: Counts[] = [];
  for (let rep = 0; rep < COUNTS; rep++) {
    const one = await countChain(server, url, `${root}/pg_profile_${rep}_1`, 1);
    const long = await countChain(server, url, `${root}/pg_profile_${rep}_${LONG}`, LONG);
    const per = (key: keyof Counts) => (long[key] - one[key]) / (LONG - 1);
    steps.push({
      walFlushes: per("walFlushes"),
      commits: per("commits"),
      notifications: per("notifications"),
      hostCpuMs: per("hostCpuMs"),
      commitFunctionMs: per("commitFunctionMs"),
      walSyncMs: per("walSyncMs"),
    });
  }
  const of = (key: keyof Counts) => median(steps.map((step) => step[key]));
  return {
    walFlushes: of("walFlushes"),
    commits: of("commits"),
    notifications: of("notifications"),
    hostCpuMs: of("hostCpuMs"),
    commitFunctionMs: of("commitFunctionMs"),
    walSyncMs: of("walSyncMs"),
    storeCpuMs: await storeCpu(url),
  };
}

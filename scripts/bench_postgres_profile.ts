/**
 * What one journaled sequential step costs the Postgres server, counted rather than timed (so
 * that the counts hold on a loaded machine): WAL flushes, ledger commits and notifications per
 * step, as (chain of 41 calls - chain of 1) / 40, and the host's CPU per step.
 * The server counts a connection's WAL flushes and transactions when it ends, so each chain runs
 * on a ledger of its own, closed before its counts are read.
 * @module
 */
import process from "node:process";
import postgres from "postgres";
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
}

interface Counts {
  walFlushes: number;
  commits: number;
  notifications: number;
  hostCpuMs: number;
}

async function serverCounts(server: PgServer): Promise<{ wal: number; commits: number }> {
  // A backend reports its counts when it exits: wait until svc's have.
  for (let i = 0; i < 200; i++) {
    const left = await server.psql(
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'svc'",
    );
    if (Number(left.trim()) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const [wal, commits] = await Promise.all([
    server.psql("SELECT wal_sync FROM pg_stat_wal"),
    server.psql(
      "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = 'svc_kv_commit'",
      DATABASE,
    ),
  ]);
  return { wal: Number(wal.trim()), commits: Number(commits.trim()) };
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
  };
}

/** Counts a step's work on `server` (fsync on for the flushes to count). */
export async function profilePostgresStep(
  server: PgServer,
  root: string,
): Promise<PostgresStepProfile> {
  const url = await server.database(DATABASE);
  // Counted for every session of the database, from its next connection on.
  await server.psql(`ALTER DATABASE ${DATABASE} SET track_functions = 'pl'`);
  const one: Counts = await countChain(server, url, `${root}/pg_profile_1`, 1);
  const long: Counts = await countChain(server, url, `${root}/pg_profile_${LONG}`, LONG);
  const per = (key: keyof Counts) => (long[key] - one[key]) / (LONG - 1);
  return {
    walFlushes: per("walFlushes"),
    commits: per("commits"),
    notifications: per("notifications"),
    hostCpuMs: per("hostCpuMs"),
  };
}

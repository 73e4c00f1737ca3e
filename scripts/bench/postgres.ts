/**
 * The postgres group (`bench_postgres.ts`): the shared ledger on a real Postgres server.
 * @module
 */
import { measurePostgres } from "../bench_postgres.ts";
import { summarize } from "./common.ts";
import type { GroupContext, Report } from "./report.ts";

/** The postgres group: a step on a Postgres ledger against a bare commit. */
export async function reportPostgres(report: Report, context: GroupContext): Promise<void> {
  if (context.only.has("postgres")) {
    const pg = await measurePostgres(context.root, context.args.runs);
    report.baseline(
      "pg_bare_commit_ms",
      "baseline: one bare Postgres commit of a step's size (fsync on)",
      summarize(pg.bareCommitMs),
      "ms",
    );
    report.figure(
      "pg_step_ms",
      "journaled sequential step on a Postgres ledger, against it",
      summarize(pg.stepMs),
      "ms",
      "pg_bare_commit_ms",
      "<= 2x",
    );
    if (pg.profile) {
      const { walFlushes, commits, notifications, hostCpuMs } = pg.profile;
      const { commitFunctionMs, walSyncMs, storeCpuMs } = pg.profile;
      report.part("pg_step_wal_flushes", "  of a step: WAL flushes (fsyncs)", walFlushes, "/step");
      report.part(
        "pg_step_commits",
        "  of a step: ledger commits (svc_kv_commit)",
        commits,
        "/step",
      );
      report.part("pg_step_notifications", "  of a step: notifications", notifications, "/step");
      report.part("pg_step_host_cpu_ms", "  of a step: the host's CPU", hostCpuMs, "ms");
      report.part(
        "pg_step_store_cpu_ms",
        "    of it: the store and its client (a commit of the step's rows)",
        storeCpuMs,
        "ms",
      );
      report.part(
        "pg_step_commit_function_ms",
        "  of a step: the server inside svc_kv_commit",
        commitFunctionMs,
        "ms",
      );
      report.part(
        "pg_step_wal_sync_ms",
        "  of a step: the WAL flushes (fsync time)",
        walSyncMs,
        "ms",
      );
    }
    report.baseline(
      "pg_claims_one_per_s",
      "baseline: queue claims per second, one daemon (Postgres)",
      summarize(pg.claimsOne),
      "claims/s",
    );
    report.figure(
      "pg_claims_two_per_s",
      "queue claims per second, two daemons, against one",
      summarize(pg.claimsTwo),
      "claims/s",
      "pg_claims_one_per_s",
    );
  }
}

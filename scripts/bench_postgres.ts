/**
 * The shared ledger's figures (`deno task bench --only postgres`), on a real Postgres server
 * started for the bench (Debian's package, fsync on: commits cost what they cost):
 *
 * - a journaled sequential step: (T200 - T1) / 199 of a script awaiting `agent()` in a loop
 *   (fake provider, latency 0) on a ledger in Postgres, against one bare Postgres commit of the
 *   same size (one statement writing the step's journal entry, call record and run document, as
 *   three rows of a plain table, autocommitted). Goal <= 2x.
 * - per step, counted: WAL flushes, commits, notifications and the host's CPU
 *   (`bench_postgres_profile.ts`).
 * - queue claims per second: 200 queued tasks (fake provider, latency 0) drained by one daemon,
 *   then by two daemons (two hosts of one process, each with its own home), from the first
 *   claim to the last task's end.
 * @module
 */
import { Buffer } from "node:buffer";
import postgres from "postgres";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { RunManager } from "../src/engine/mod.ts";
import { type JournalEntry, openLedger, type RunStatus, toBytes } from "../src/ledger/mod.ts";
import { startDaemon } from "../src/daemon/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { startPostgres } from "../test/pg_server.ts";
import { limited } from "./bench_limit.ts";
import { type PostgresStepProfile, profilePostgresStep } from "./bench_postgres_profile.ts";

const LOCAL = { owner: "local" };
const CHAIN_CALLS = 200;
const BARE_COMMITS = 200;
const QUEUED_TASKS = 200;

/** Samples of every figure, one per repetition. */
export interface PostgresSamples {
  /** Marginal ms of one journaled sequential step on Postgres. */
  stepMs: number[];
  /** ms of one bare Postgres commit of the same size. */
  bareCommitMs: number[];
  /** Queue claims per second with one daemon. */
  claimsOne: number[];
  /** Queue claims per second with two daemons. */
  claimsTwo: number[];
  /** What a step costs the server, counted once after the repetitions. */
  profile?: PostgresStepProfile;
}

function chainScript(calls: number): string {
  return `const values = [];\nfor (let i = 0; i < ${calls}; i++) values.push(await agent("step " + i));\nreturn values;\n`;
}

async function timeChain(
  manager: RunManager,
  calls: number,
): Promise<{ ms: number; status: RunStatus }> {
  const t0 = performance.now();
  const started = await manager.start({
    script: chainScript(calls),
    filename: "chain.js",
    fake_dispatch: true,
  }, LOCAL);
  const status = await limited(`the ${calls}-call chain`, manager.wait(started.run_id, LOCAL));
  const ms = performance.now() - t0;
  if (status.state !== "succeeded") {
    throw new Error(`the ${calls}-call chain on Postgres ended ${status.state}`);
  }
  return { ms, status };
}

/** One bare commit of a journal entry, its call record and the run document, `BARE_COMMITS` times. */
async function timeBareCommit(
  url: string,
  template: { entry: JournalEntry; status: RunStatus },
): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`CREATE TABLE IF NOT EXISTS bare (k text PRIMARY KEY, v bytea NOT NULL)`;
    const { result, ...entry } = template.entry;
    const { result: _result, ...status } = template.status;
    const runDoc = toBytes({ v: 1, status: { ...status, narration: [], security_events: [] } });
    const runId = template.status.run_id;
    const t0 = performance.now();
    for (let seq = 1; seq <= BARE_COMMITS; seq++) {
      const at = new Date().toISOString();
      const journal = toBytes({ v: 1, entry: { ...entry, seq }, result: { value: result } });
      const call = toBytes({ at, source: "run", id: runId, seq, owner: status.owner });
      await sql`INSERT INTO bare (k, v) VALUES
        (${`journal/${runId}/${seq}`}, ${Buffer.from(journal)}),
        (${`calls/${at}/${seq}`}, ${Buffer.from(call)}),
        (${`runs/${runId}`}, ${Buffer.from(runDoc)})
        ON CONFLICT (k) DO UPDATE SET v = excluded.v`;
    }
    return (performance.now() - t0) / BARE_COMMITS;
  } finally {
    await sql.end({ timeout: 2 });
  }
}

/** Claims per second of `daemons` daemons draining `QUEUED_TASKS` queued tasks. */
async function timeClaims(url: string, root: string, daemons: number): Promise<number> {
  const homes = Array.from({ length: daemons + 1 }, (_, i) => `${root}/claims_${daemons}_${i}`);
  const open = (home: string, role?: "daemon") =>
    openServices({
      home,
      ledgerUrl: url,
      dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
      ...(role ? { role } : {}),
    });
  const queuer: Services = await open(homes[0]!);
  const hosts: Services[] = [];
  try {
    const ids: string[] = [];
    for (let i = 0; i < QUEUED_TASKS; i++) {
      ids.push(
        (await queuer.tasks.enqueue({ prompt: `t${i}`, fake_dispatch: true }, LOCAL)).task_id,
      );
    }
    for (const home of homes.slice(1)) hosts.push(await open(home, "daemon"));
    const t0 = performance.now();
    const running = await Promise.all(
      hosts.map((services) =>
        startDaemon(services, { concurrency: 16, pollMs: 5, env: () => undefined })
      ),
    );
    try {
      await limited(
        "draining the queue",
        (async () => {
          for (const id of ids) await queuer.tasks.wait(id, LOCAL);
        })(),
      );
    } finally {
      for (const daemon of running) await daemon.stop();
    }
    return QUEUED_TASKS / ((performance.now() - t0) / 1000);
  } finally {
    for (const services of hosts) await services.close();
    await queuer.close();
  }
}

/**
 * Every figure, `reps` times after one warm-up repetition, on one Postgres server made for the
 * bench.
 */
export async function measurePostgres(root: string, reps: number): Promise<PostgresSamples> {
  await using server = await startPostgres({ durable: true });
  const kept: PostgresSamples = { stepMs: [], bareCommitMs: [], claimsOne: [], claimsTwo: [] };
  const warmup: PostgresSamples = { stepMs: [], bareCommitMs: [], claimsOne: [], claimsTwo: [] };
  for (let rep = 0; rep <= reps; rep++) {
    const samples = rep === 0 ? warmup : kept;
    const url = await server.database(`bench_${rep}`);
    const ledger = await openLedger(`${root}/pg_chain_${rep}`, { url });
    const manager = await RunManager.create({
      dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
      ledger,
    });
    let template: { entry: JournalEntry; status: RunStatus };
    try {
      const short = await timeChain(manager, 1);
      const long = await timeChain(manager, CHAIN_CALLS);
      samples.stepMs.push((long.ms - short.ms) / (CHAIN_CALLS - 1));
      const entries = await manager.journal(long.status.run_id, LOCAL);
      template = { entry: entries[entries.length - 1]!, status: long.status };
    } finally {
      await manager.close();
      await ledger.close();
    }
    samples.bareCommitMs.push(await timeBareCommit(url, template));
    samples.claimsOne.push(await timeClaims(await server.database(`claims1_${rep}`), root, 1));
    samples.claimsTwo.push(await timeClaims(await server.database(`claims2_${rep}`), root, 2));
  }
  kept.profile = await profilePostgresStep(server, root);
  return kept;
}

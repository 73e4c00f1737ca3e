/**
 * The chain, fanout and replay groups: durable steps (sequential, fanned out, replayed) in
 * process, against one bare KV commit of a journal entry.
 * @module
 */
import { createDispatcher } from "../../src/dispatch/mod.ts";
import { RunManager, type RunStatus } from "../../src/engine/mod.ts";
import { type JournalEntry, openLedger, toBytes } from "../../src/ledger/mod.ts";
import {
  BARE_COMMITS,
  CHAIN_CALLS,
  chainScript,
  CONCURRENCY,
  expectSucceeded,
  FANOUT_CALLS,
  FANOUT_SCRIPT,
  fanoutScript,
  LOCAL,
  noCallScript,
  ONE_CALL_SCRIPT,
  RUN_TIMEOUT_S,
  runToEnd,
  type Stats,
} from "./common.ts";
import type { GroupContext, Report } from "./report.ts";

/** What one repetition of the chain measures, and the entry the bare commit mirrors. */
export interface ChainSample {
  chain1Ms: number;
  chainMs: number;
  noCallMs: number;
  resumeChainMs: number;
  /** The last journal entry of the long chain and the status written with it. */
  template: { entry: JournalEntry; status: RunStatus };
}

/**
 * Sequential chains of 1 and {@linkcode CHAIN_CALLS} calls, the same loop with no call, and a
 * resume of the long chain, on one host. Throws unless the resume returns exactly what the
 * chain returned, every call replayed.
 */
export async function timeChainAndReplay(home: string): Promise<ChainSample> {
  const ledger = await openLedger(home);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
  });
  try {
    const short = await runToEnd(manager, { script: chainScript(1), filename: "chain_1.js" });
    expectSucceeded(short.status, "the 1-call chain");
    const long = await runToEnd(manager, {
      script: chainScript(CHAIN_CALLS),
      filename: "chain.js",
    });
    expectSucceeded(long.status, `the ${CHAIN_CALLS}-call chain`);
    if (!Array.isArray(long.status.result) || long.status.result.length !== CHAIN_CALLS) {
      throw new Error(`the chain returned ${JSON.stringify(long.status.result).slice(0, 200)}`);
    }
    const noCall = await runToEnd(manager, {
      script: noCallScript(CHAIN_CALLS),
      filename: "chain.js",
    });
    expectSucceeded(noCall.status, "the chain without calls");
    const resumed = await runToEnd(manager, {
      script: chainScript(CHAIN_CALLS),
      filename: "chain.js",
      resume_from: long.status.run_id,
    });
    expectSucceeded(resumed.status, "the resumed chain");
    if (JSON.stringify(resumed.status.result) !== JSON.stringify(long.status.result)) {
      throw new Error("the resumed chain returned something else than the original run");
    }
    if (resumed.status.journal.replayed !== CHAIN_CALLS) {
      throw new Error(
        `the resumed chain replayed ${resumed.status.journal.replayed} calls, not ${CHAIN_CALLS}`,
      );
    }
    const entries = await manager.journal(long.status.run_id, LOCAL);
    const entry = entries[entries.length - 1];
    if (!entry) throw new Error("the chain left no journal entry");
    return {
      chain1Ms: short.ms,
      chainMs: long.ms,
      noCallMs: noCall.ms,
      resumeChainMs: resumed.ms,
      template: { entry, status: long.status },
    };
  } finally {
    await manager.close();
    ledger.close();
  }
}

/** ms from `start()` to the end of a `parallel()` of `calls` calls at concurrency 8. */
export async function timeFanout(home: string, calls: number): Promise<number> {
  const ledger = await openLedger(home);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
    concurrency: CONCURRENCY,
  });
  try {
    const run = await runToEnd(manager, { script: fanoutScript(calls), filename: "fan.js" });
    expectSucceeded(run.status, `the ${calls}-call fan-out`);
    if (run.status.result !== calls) {
      throw new Error(`the ${calls}-call fan-out returned ${JSON.stringify(run.status.result)}`);
    }
    return run.ms;
  } finally {
    await manager.close();
    ledger.close();
  }
}

/**
 * Baseline of a journaled step: mean ms of one atomic commit, on a Deno KV file of its own, of
 * what the ledger's `write()` commits for one journal op (the entry with its result inline, the
 * call record, the run document), the entry and status being a real chain step's.
 */
export async function timeBareCommit(
  dir: string,
  template: { entry: JournalEntry; status: RunStatus },
): Promise<number> {
  const kv = await Deno.openKv(`${dir}/bare_commit.kv`);
  try {
    const { result, ...entry } = template.entry;
    const { result: _result, ...status } = template.status;
    const runDoc = toBytes({ v: 1, status: { ...status, narration: [], security_events: [] } });
    const runId = template.status.run_id;
    const t0 = performance.now();
    for (let seq = 1; seq <= BARE_COMMITS; seq++) {
      const at = new Date().toISOString();
      const ok = await kv.atomic()
        .set(
          ["journal", runId, seq],
          toBytes({ v: 1, entry: { ...entry, seq }, result: { value: result } }),
        )
        .set(
          ["calls", at, runId, seq],
          toBytes({
            at,
            source: "run",
            id: runId,
            seq,
            owner: status.owner,
            provider: entry.provider,
            model: entry.model,
            outcome: entry.outcome,
            duration_ms: entry.duration_ms,
            usage: entry.usage,
            cost_usd: entry.cost_usd,
          }),
        )
        .set(["runs", runId], runDoc)
        .commit();
      if (!ok.ok) throw new Error("a bare KV commit failed");
    }
    return (performance.now() - t0) / BARE_COMMITS;
  } finally {
    kv.close();
  }
}

/** The 200-call fan-out, then a resume of it: ms of the live run and of the replay. */
export async function timeFanoutAndReplay(
  home: string,
): Promise<{ liveMs: number; replayMs: number }> {
  const ledger = await openLedger(home);
  const dispatcher = createDispatcher({ fakeLatencyMs: 0 });
  const manager = await RunManager.create({ dispatcher, ledger, concurrency: CONCURRENCY });
  try {
    const timeRun = async (resumeFrom?: string): Promise<{ ms: number; status: RunStatus }> => {
      let endedAt: number | undefined = undefined;
      const t0 = performance.now();
      const started = await manager.start({
        script: FANOUT_SCRIPT,
        filename: "bench_fanout.js",
        fake_dispatch: true,
        timeout: RUN_TIMEOUT_S,
        ...(resumeFrom ? { resume_from: resumeFrom } : {}),
      }, LOCAL);
      for await (const _item of manager.events(started.run_id, LOCAL)) {
        // The feed ends with the run's terminal state.
      }
      endedAt = performance.now();
      const status = await manager.wait(started.run_id, LOCAL);
      expectSucceeded(status, resumeFrom ? "the resumed fan-out" : "the fan-out run");
      if (status.result !== FANOUT_CALLS) {
        throw new Error(
          `the fan-out returned ${JSON.stringify(status.result)}, expected ${FANOUT_CALLS}`,
        );
      }
      return { ms: (endedAt ?? performance.now()) - t0, status };
    };
    const live = await timeRun();
    const replay = await timeRun(live.status.run_id);
    if (replay.status.journal.replayed !== FANOUT_CALLS) {
      throw new Error(
        `the resume replayed ${replay.status.journal.replayed} calls, expected ${FANOUT_CALLS}`,
      );
    }
    return { liveMs: live.ms, replayMs: replay.ms };
  } finally {
    await manager.close();
    ledger.close();
  }
}

/** Mean ms of one journal write (entry plus run counters, one atomic commit), over 200 writes. */
export async function timeJournalWrite(home: string): Promise<number> {
  const ledger = await openLedger(home);
  const manager = await RunManager.create({
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
    ledger,
  });
  try {
    // A real run supplies a real status document to write with each entry.
    const started = await manager.start({ script: ONE_CALL_SCRIPT, fake_dispatch: true }, LOCAL);
    const status = await manager.wait(started.run_id, LOCAL);
    const [template] = await manager.journal(started.run_id, LOCAL);
    if (!template) throw new Error("the one-call run left no journal entry");
    const t0 = performance.now();
    for (let seq = 1; seq <= FANOUT_CALLS; seq++) {
      await ledger.write(status.run_id, [{
        kind: "journal",
        status,
        entry: { ...template, seq: seq + 1 },
      }]);
    }
    return (performance.now() - t0) / FANOUT_CALLS;
  } finally {
    await manager.close();
    ledger.close();
  }
}

/** The chain, fanout and replay groups: durable steps against a bare commit. */
export function reportSteps(report: Report, context: GroupContext): void {
  // Durable steps.
  const chainMarginal = report.stat((r) => (r.chainMs - r.chain1Ms) / (CHAIN_CALLS - 1));
  const fanoutMarginal = report.stat((r) => (r.fanoutMs - r.fanout1Ms) / (FANOUT_CALLS - 1));
  const replayPerCall = report.stat((r) => (r.resumeChainMs - r.noCallMs) / CHAIN_CALLS);
  if (context.only.has("chain") || context.only.has("fanout") || context.only.has("replay")) {
    report.baseline(
      "bare_commit_ms",
      "baseline: one bare KV commit of a journal entry (alone)",
      report.pick("bareCommitMs"),
      "ms",
    );
  }
  if (context.only.has("chain")) {
    report.figure(
      "chain_step_ms",
      `sequential step, marginal (T${CHAIN_CALLS} - T1) / ${CHAIN_CALLS - 1}`,
      chainMarginal,
      "ms",
      "bare_commit_ms",
      "<= 2x",
    );
    report.part("chain_1_ms", "  T1: 1-call chain, start -> end", report.pick("chain1Ms"), "ms");
    report.part(
      "chain_ms",
      `  T${CHAIN_CALLS}: ${CHAIN_CALLS}-call chain, start -> end`,
      report.pick("chainMs"),
      "ms",
    );
  }
  if (context.only.has("fanout")) {
    report.figure(
      "fanout_step_ms",
      `fan-out step, marginal (T${FANOUT_CALLS} - T1) / ${FANOUT_CALLS - 1}, conc ${CONCURRENCY}`,
      fanoutMarginal,
      "ms",
      "bare_commit_ms",
      "<= 0.5x",
    );
    report.figure(
      "journal_write_ms",
      "one ledger.write() of a journal op alone (the ledger's own path)",
      report.pick("journalWriteMs"),
      "ms",
      "bare_commit_ms",
    );
  }
  if (context.only.has("replay") || context.only.has("chain")) {
    report.baseline(
      "no_call_ms",
      `baseline: the same loop with no agent() call, start -> end`,
      report.pick("noCallMs"),
      "ms",
    );
    report.figure(
      "resume_chain_ms",
      `resume of the ${CHAIN_CALLS}-call chain (all replayed), start -> end`,
      report.pick("resumeChainMs"),
      "ms",
      "no_call_ms",
      "<= 1.1x",
    );
    report.figure(
      "replayed_call_ms",
      "  per replayed call: (T_resume - T_nocall) / 200",
      replayPerCall,
      "ms",
      "bare_commit_ms",
    );
  }
  let live: Stats | null = null;
  let replay: Stats | null = null;
  if (context.only.has("fanout")) {
    live = report.stat((r) => FANOUT_CALLS / (r.fanoutMs / 1000));
    replay = report.stat((r) => FANOUT_CALLS / (r.replayMs / 1000));
    report.baseline(
      "fanout_calls_per_s",
      `baseline: ${FANOUT_CALLS} live fake calls, conc ${CONCURRENCY}`,
      live,
      "calls/s",
    );
    report.figure(
      "fanout_replay_calls_per_s",
      `  resume of it: ${FANOUT_CALLS} replayed calls`,
      replay,
      "calls/s",
      "fanout_calls_per_s",
    );
  }
}

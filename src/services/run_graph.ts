/**
 * A run as a graph (`GET /api/workflow/{run_id}/dag`): its journaled calls and the calls
 * running now (its feed's `call_started` events), placed by their logical positions, each with
 * its state, label, phase, timing, usage and replay origin. Bounded: the first
 * {@linkcode DAG_MAX_CALLS} journaled calls by seq and every running one.
 * @module
 */
import type { RunManager } from "../engine/mod.ts";
import {
  type Caller,
  type FeedLedger,
  isTerminal,
  type JournalEntry,
  type NarrationEntry,
} from "../ledger/mod.ts";
import { DAG_MAX_CALLS, type RunDag } from "../schemas/mod.ts";
import { noSuch } from "./not_found.ts";
import { buildGraph, type GraphCall } from "./run_graph_build.ts";
import { type StartedCall, StartedCalls } from "./run_graph_started.ts";

const STATE_OF = {
  live: "succeeded",
  replayed: "replayed",
  failed: "failed",
  skipped: "skipped",
} as const;

/** The phase narrated last at or before `at`, or null. */
function phaseAt(marks: readonly NarrationEntry[], at: string): string | null {
  let phase: string | null = null;
  for (const mark of marks) if (mark.at <= at) phase = mark.text;
  return phase;
}

function journaled(entry: JournalEntry, marks: readonly NarrationEntry[]): GraphCall {
  return {
    seq: entry.seq,
    position: entry.position ?? null,
    label: entry.label,
    phase: entry.phase ?? phaseAt(marks, entry.started_at),
    state: STATE_OF[entry.outcome],
    started_at: entry.started_at,
    ended_at: entry.ended_at,
    usage: { ...entry.usage },
    cost_usd: entry.cost_usd,
    provider: entry.provider,
    model: entry.model,
    replayed_from: entry.replayed_from ?? null,
  };
}

function running(event: StartedCall): GraphCall {
  return {
    seq: event.seq,
    position: event.position,
    label: event.label,
    phase: event.phase,
    state: "running",
    started_at: event.at,
    ended_at: null,
    usage: { input_tokens: 0, output_tokens: 0 },
    cost_usd: 0,
    provider: null,
    model: null,
    replayed_from: null,
  };
}

/** Builds runs' graphs for their owners. */
export class RunGraph {
  readonly #runs: RunManager;
  readonly #started: StartedCalls;

  /** Graphs over the run manager (status, journal, who may see a run) and the runs' feeds. */
  constructor(services: { runs: RunManager; ledger: Pick<FeedLedger, "readEvents"> }) {
    this.#runs = services.runs;
    this.#started = new StartedCalls(services.ledger);
  }

  /** The graph of `runId`; not_found for an unknown id or another owner's run. */
  async dag(runId: string, caller: Caller): Promise<RunDag> {
    const status = await this.#runs.get(runId, caller);
    if (!status) throw noSuch("run", runId);
    const ended = isTerminal(status.state);
    if (ended) this.#started.forget(runId);
    // The feed before the journal: a call that ends in between is then journaled, not lost.
    const open = ended ? [] : await this.#started.running(runId);
    const entries = await this.#runs.journal(runId, caller);
    const marks = status.narration.filter((n) => n.kind === "phase");
    const sorted = [...entries].sort((a, b) => a.seq - b.seq);
    const seen = new Set(sorted.map((e) => e.seq));
    const shown = sorted.slice(0, DAG_MAX_CALLS).map((e) => journaled(e, marks));
    const live = open.filter((event) => !seen.has(event.seq)).map(running);
    const calls = [...shown, ...live];
    const resumed = status.resumed_from !== null;
    const first = resumed
      ? calls.filter((c) => c.state !== "replayed").sort((a, b) => a.seq - b.seq)[0]
      : undefined;
    return {
      run_id: status.run_id,
      state: status.state,
      resumed_from: status.resumed_from,
      nodes: buildGraph(calls, { resumed }),
      calls: {
        total: sorted.length + live.length,
        shown: calls.length,
        omitted: sorted.length - shown.length,
        running: live.length,
        replayed: sorted.filter((e) => e.outcome === "replayed").length,
      },
      live_from: first
        ? { seq: first.seq, position: first.position?.join(".") ?? null, at: first.started_at }
        : null,
      max_calls: DAG_MAX_CALLS,
    };
  }
}

/**
 * The journal entries of `agent()` calls, built in one place: every call's entry has the same
 * stamp (sequence, position, hash, label, phase, times), then what its ending says.
 * @module
 */

import type { JournalEntry } from "../../ledger/mod.ts";
import { callHash, type ReplayCandidate } from "../journal.ts";
import { now } from "../run_context.ts";
import type { AdmittedCall, CallWork, Ending } from "./types.ts";
import { callLabel } from "./label.ts";

/** The work of a call no provider answered: nothing used, nothing paid, no attempt. */
export function noWork(
  by: { provider: string | null; model: string | null } = { provider: null, model: null },
): CallWork {
  return {
    provider: by.provider,
    model: by.model,
    usage: { input_tokens: 0, output_tokens: 0 },
    cost_usd: 0,
    attempts: 0,
  };
}

/** The journal entry of `call` ended with `ending`; its end is stamped now. */
export function callEntry(call: AdmittedCall, ending: Ending): JournalEntry {
  const { decision, position, started } = call;
  const { prompt, options } = call.call;
  const stamp = {
    seq: decision.seq,
    ...(position ? { position } : {}),
    // A refused call takes its hash only here: a refusal that is not journaled costs none.
    hash: decision.kind === "refused" ? callHash(prompt, call.given ?? options) : decision.hash,
    label: callLabel(call.call),
    // A call without its own phase is in the one the script narrated last, as its feed says.
    ...(options.phase !== undefined
      ? { phase: options.phase }
      : started.phase !== null
      ? { phase: started.phase }
      : {}),
    started_at: started.at,
    ended_at: now(),
    duration_ms: Math.round(performance.now() - started.t0),
  };
  switch (ending.outcome) {
    case "replayed":
      return { ...stamp, ...replayedFields(ending.candidate) };
    case "skipped":
      return { ...stamp, outcome: "skipped", ...workFields(noWork()), reason: ending.reason };
    case "failed":
      return {
        ...stamp,
        outcome: "failed",
        ...workFields(ending.work),
        reason: ending.reason,
        ...ending.work.trace,
      };
    case "live":
      return {
        ...stamp,
        outcome: "live",
        result: ending.value,
        ...workFields(ending.work),
        ...ending.work.trace,
      };
  }
}

/**
 * The entry of a call the guest answered itself from a value offered at start: stamped with
 * the source entry's label and phase, taking no time.
 */
export function answeredEntry(
  seq: number,
  position: number[],
  candidate: ReplayCandidate,
): JournalEntry {
  const { entry } = candidate;
  const at = now();
  return {
    seq,
    position,
    hash: entry.hash,
    label: entry.label,
    ...(entry.phase !== undefined ? { phase: entry.phase } : {}),
    started_at: at,
    ended_at: at,
    duration_ms: 0,
    ...replayedFields(candidate),
  };
}

/** What a replayed call's entry takes from the source's: its value and who made it, at no cost. */
function replayedFields({ entry, from }: ReplayCandidate) {
  return {
    outcome: "replayed" as const,
    result: entry.result,
    provider: entry.provider,
    model: entry.model,
    usage: { input_tokens: 0, output_tokens: 0 },
    cost_usd: 0,
    attempts: 0,
    replayed_from: from,
  };
}

function workFields(work: CallWork) {
  const { provider, model, usage, cost_usd, attempts } = work;
  return { provider, model, usage, cost_usd, attempts };
}

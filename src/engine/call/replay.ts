import type { ReplayedNotice } from "../guest_protocol.ts";
import { parsePosition, positionKey } from "../journal.ts";
import type { RunContext } from "../run_context.ts";
import { unrecordable } from "./conditions.ts";
import { answeredEntry, noWork } from "./entry.ts";
import type { Ending, ReplayCall } from "./types.ts";

/**
 * The replay stage, for a call the guest asked the host to replay: it ends with the source's
 * value, unless the run's ledger limits cannot take that value (the script then gets null).
 */
export function replayEnding(
  ctx: RunContext,
  call: ReplayCall,
): Ending {
  const { seq, candidate } = call.decision;
  const { entry } = candidate;
  const refused = entry.result === undefined ? undefined : unrecordable(ctx, seq, entry.result);
  if (refused === undefined) return { outcome: "replayed", candidate };
  return {
    outcome: "failed",
    cause: "ledger_limit",
    reason: refused,
    narrate: false,
    work: noWork(entry),
  };
}

/**
 * Records the calls the guest answered itself from the values offered at start (a `replayed`
 * notification lists their positions, in the order the script made them; one without any is
 * reported at the boundary): journaled and counted like replays the host answers. A position
 * that was not offered, or was already replayed, is a security event and records nothing;
 * neither do the positions after it in the same frame.
 */
export function recordReplayedCalls(ctx: RunContext, notice: ReplayedNotice): void {
  for (const item of notice.positions) {
    const position = parsePosition(item);
    const candidate = position ? ctx.replay?.take(positionKey(position)) : undefined;
    if (!position || !candidate) {
      ctx.security("malformed_frame", "replayed frame for a call that was not offered");
      break;
    }
    const seq = ctx.callPlaced();
    ctx.callReplayed();
    if (candidate.entry.result !== undefined) ctx.countResult(candidate.entry.result);
    // Not awaited, and write-ahead still holds: the script already has the value, and it is
    // durable in the source's journal, where a resume after a crash finds it (mergeReplay).
    ctx.journal(answeredEntry(seq, position, candidate));
  }
}

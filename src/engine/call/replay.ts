import { REPLAYED_LABEL_CHARS } from "../../schemas/mod.ts";
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
 * Most bytes one `calls_replayed` event is let grow to (by a bound on each call's JSON, so that
 * it always fits one ledger value); more calls go into the next event.
 */
export const REPLAYED_EVENT_BYTES = 32 * 1024;

type ReplayedEvent = Parameters<RunContext["callsReplayed"]>[0];

/** A bound on the bytes of one call's note as JSON: a character escapes to at most 6. */
function noteBytes(label: string | null, position: readonly number[]): number {
  return 48 + (label?.length ?? 0) * 6 + position.length * 17;
}

/**
 * Records the calls the guest answered itself from the values offered at start (a `replayed`
 * notification lists their positions, in the order the script made them; one without any is
 * reported at the boundary): journaled and counted like replays the host answers, but put into
 * the feed as one `calls_replayed` event per notification (more when its calls come from
 * several source runs or do not fit one event), not one `call` event each. A position that was
 * not offered, or was already replayed, is a security event and records nothing; neither do
 * the positions after it in the same frame.
 */
export function recordReplayedCalls(ctx: RunContext, notice: ReplayedNotice): void {
  let event: ReplayedEvent | undefined;
  let bytes = 0;
  const send = () => {
    if (event) ctx.callsReplayed(event);
    event = undefined;
  };
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
    const entry = answeredEntry(seq, position, candidate);
    ctx.journal(entry, { quiet: true });
    const label = entry.label === null ? null : entry.label.slice(0, REPLAYED_LABEL_CHARS);
    const size = noteBytes(label, position);
    if (event && (event.from !== candidate.from || bytes + size > REPLAYED_EVENT_BYTES)) send();
    if (!event) {
      event = {
        at: entry.ended_at,
        count: 0,
        first_seq: seq,
        last_seq: seq,
        from: candidate.from,
        calls: [],
      };
      bytes = 200;
    }
    event.calls.push({ seq, position, label });
    event.count++;
    event.last_seq = seq;
    bytes += size;
  }
  send();
}

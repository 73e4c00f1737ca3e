import { StopReason } from "../../dispatch/mod.ts";

/**
 * Why a call ended with its run, for its journal entry: the run's own stop reason (its timeout,
 * a cancel, a limit) when it has one, so that the entry names the cause.
 */
export function stoppedText(signal: AbortSignal, when = ""): string {
  const reason = signal.reason;
  const cause = reason instanceof StopReason ? ` (${reason.message})` : "";
  return `the run stopped${when}${cause}`;
}

import type { JsonValue } from "../../schemas/mod.ts";
import type { AgentReply } from "../guest_session.ts";
import type { RunContext } from "../run_context.ts";
import { callEntry } from "./entry.ts";
import type { AdmittedCall, Ending } from "./types.ts";

/**
 * The record stage: counts how `call` ended and journals it, then replies. The counters change
 * before the entry is queued (its commit copies the status with them). The reply goes to the
 * script as soon as the entry is queued, while it commits: whatever the guest sends after it
 * waits for that commit (`RunContext.answerAhead()`), so nothing the script does with the
 * value reaches the host, the ledger or a reader before the value is in the journal
 * (write-ahead, as the host sees it), and a resume replays it. The guest's own turn and the
 * pipe's two crossings overlap the commit instead of following it.
 */
export function record(ctx: RunContext, call: AdmittedCall, ending: Ending): AgentReply {
  switch (ending.outcome) {
    case "skipped":
      ctx.answerAhead(
        ctx.callSkipped(ending.refusal, ending.reason, () => callEntry(call, ending)),
      );
      return reply(ctx, null);
    case "replayed":
      ctx.callReplayed();
      ctx.answerAhead(ctx.journal(callEntry(call, ending)));
      return reply(ctx, ending.candidate.entry.result ?? null);
    case "live":
      ctx.callSucceeded();
      ctx.answerAhead(ctx.journal(callEntry(call, ending)));
      return reply(ctx, ending.value);
    case "failed":
      ctx.callFailed(ending.cause);
      if (ending.narrate) {
        ctx.narrate({
          kind: "call",
          text: `agent call #${call.decision.seq}${callTags(call)} failed: ${ending.reason}`,
        });
      }
      ctx.answerAhead(ctx.journal(callEntry(call, ending)));
      return reply(ctx, null);
  }
}

/** The reply stage: the call's value for the script, and the budget spent so far. */
export function reply(ctx: RunContext, value: JsonValue | null): AgentReply {
  return { value, spent: ctx.budget.spent() };
}

/** ` (label, phase P)`: how a failure's narration names the call, from its own options. */
function callTags({ call }: AdmittedCall): string {
  const { label, phase } = call.options;
  const tags = [label, phase === undefined ? undefined : `phase ${phase}`]
    .filter((tag) => tag !== undefined && tag !== "");
  return tags.length === 0 ? "" : ` (${tags.join(", ")})`;
}

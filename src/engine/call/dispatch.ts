import { ProgressRecorder, type StepResult, structuredStep } from "../../dispatch/mod.ts";
import type { RunContext } from "../run_context.ts";
import type { Approved } from "./approve.ts";
import { budgetExceeded } from "./conditions.ts";
import type { AgentCallDeps, Ending, LiveCall } from "./types.ts";
import { callLabel } from "./label.ts";

/**
 * The dispatch stage, run while the call holds its slot: the budget admits the call's
 * estimate, then the call goes to its provider (or continues its session), asked again while
 * its answer is not valid against its schema. What it used settles the budget, whatever the
 * outcome; a part not known counts its estimate against the budget.
 */
export async function dispatch(
  ctx: RunContext,
  deps: AgentCallDeps,
  call: LiveCall,
  { options, context }: Approved,
): Promise<{ step: StepResult } | { ending: Ending }> {
  const { seq, schema } = call.decision;
  const admission = ctx.budget.admit(ctx.budget.estimateOf(call.call.options));
  if (!admission.ok) {
    budgetExceeded(ctx, seq, admission.reason);
    return { ending: { outcome: "skipped", refusal: "budget", reason: admission.reason } };
  }
  // A sub-workflow's calls show in its group whatever phase they name, as in Claude Code.
  const phase = call.group ?? call.call.options.phase;
  ctx.callStarted({
    seq,
    label: callLabel(call.call),
    ...(phase !== undefined ? { phase } : {}),
    ...(call.position ? { position: call.position } : {}),
  });
  const progress = new ProgressRecorder((items) => ctx.progress(seq, items), {
    budgetBytes: ctx.progressBytes,
  });
  let step: StepResult | undefined;
  try {
    step = await structuredStep(schema, {
      attempts: ctx.request.schema_attempts,
      options,
      once(options) {
        const input = {
          prompt: call.call.prompt,
          options,
          ...(call.agent?.system !== undefined ? { system: call.agent.system } : {}),
          signal: call.signal,
          ...(call.cwd !== undefined ? { cwd: call.cwd } : {}),
          // Checked again right before the process starts, against the run's checked workdir.
          ...(call.cwd !== undefined && ctx.workdirRoot !== undefined
            ? { cwdRoot: ctx.workdirRoot }
            : {}),
          ...(ctx.progressBytes > 0 ? { onProgress: progress.listener } : {}),
        };
        return call.call.options.session === undefined
          ? deps.dispatcher.dispatch(input, context)
          : deps.sessions.dispatch(deps.dispatcher, input, {
            ...context,
            owner: ctx.status.owner,
            ref: call.call.options.session,
          });
      },
    });
    return { step };
  } finally {
    // Before the call's `call` event: a reader sees its output end, then the call.
    progress.close();
    const spent = step?.spent;
    ctx.budget.settle(admission.reservation, {
      tokens: spent ? spent.usage.input_tokens + spent.usage.output_tokens : 0,
      usd: spent?.cost_usd ?? 0,
      unknown: { tokens: spent?.usageUnknown ?? false, usd: spent?.costUnknown ?? false },
    });
    ctx.callReturned();
  }
}

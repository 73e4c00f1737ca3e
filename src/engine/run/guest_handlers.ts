import type { Dispatcher } from "../../dispatch/mod.ts";
import type { SchemaRegistry } from "../../structured/mod.ts";
import type { AgentTypeRegistry } from "../../agent_types/mod.ts";
import type { SessionStore } from "../../tasks/mod.ts";
import { SvcError } from "../../errors/mod.ts";
import type { ApprovalLedger, LedgerCore } from "../../ledger/mod.ts";
import { handleAgentCall, recordReplayedCalls } from "../call/mod.ts";
import { type GuestHandlers, ScriptCallError, type WorkflowReply } from "../guest_session.ts";
import type { RunContext } from "../run_context.ts";
import { resolveWorkflow, type WorkflowRef } from "../sub_workflow.ts";

/** What a run's guest handlers answer with: the host's services and the run's places. */
export interface GuestHandlerContext {
  /** Where the run's `agent()` calls go. */
  dispatcher: Dispatcher;
  /** Where `agent(..., {session})` conversations live. */
  sessions: SessionStore;
  /** The run's named output schemas. */
  schemas: SchemaRegistry;
  /** The run's agent types. */
  agentTypes: AgentTypeRegistry;
  /** Where approvals are asked and decided, and whose home holds saved workflows. */
  ledger: ApprovalLedger & Pick<LedgerCore, "home">;
  /** How often a call waiting for approval looks for its decision, in ms. */
  pollMs: number;
  /** The run's project: its workflows come first. */
  projectDir: string;
  /** The user's home, whose workflows come after the project's. */
  userHome: string | undefined;
  /** The folder of the run's own script, for `workflow({scriptPath})`. */
  scriptDir: string | undefined;
}

/**
 * The host's side of a run's guest protocol: each method the guest may call, answered for
 * `run` (its calls through the agent() pipeline, its narration into the run's status).
 */
export function guestHandlers(run: RunContext, context: GuestHandlerContext): GuestHandlers {
  const { status } = run;
  return {
    replayed: (params) => recordReplayedCalls(run, params),
    agent: (params, signal) => {
      for (const text of params.warnings) run.narrate({ kind: "warning", text });
      const reply = handleAgentCall(
        run,
        {
          dispatcher: context.dispatcher,
          sessions: context.sessions,
          schemas: context.schemas,
          agentTypes: context.agentTypes,
          maxAgents: status.limits.max_agents,
          approvals: { ledger: context.ledger, pollMs: context.pollMs },
        },
        params,
        signal,
      );
      run.inflight.add(reply);
      reply.finally(() => run.inflight.delete(reply)).catch(() => {});
      return reply;
    },
    gate: () => run.framesGate(),
    workflow: (params) => subWorkflow(run, context, params),
    phase: (title) => run.narrate({ kind: "phase", text: title }),
    log: (message) => run.narrate({ kind: "log", text: message }),
    itemError: (report) => run.itemError(report),
    output: (text, stream) => run.narrate({ kind: "output", text, stream }),
    security: (kind, detail) => run.security(kind, detail),
    spawned: (_pid, sandbox) => {
      if (sandbox) run.guestStarted(sandbox);
    },
    queued: (message) => run.narrate({ kind: "warning", text: message }),
  };
}

/** Resolves a guest's `workflow(nameOrRef)`: refusals become errors the script sees. */
async function subWorkflow(
  run: RunContext,
  context: GuestHandlerContext,
  ref: WorkflowRef,
): Promise<WorkflowReply> {
  try {
    const resolved = await resolveWorkflow(ref, {
      projectDir: context.projectDir,
      home: context.ledger.home,
      ...(context.userHome !== undefined ? { userHome: context.userHome } : {}),
      ...(context.scriptDir !== undefined ? { scriptDir: context.scriptDir } : {}),
    });
    for (const text of resolved.warnings) run.narrate({ kind: "warning", text });
    return { body: resolved.body, filename: resolved.filename };
  } catch (error) {
    if (error instanceof SvcError) throw new ScriptCallError("Error", error.message);
    throw error;
  }
}

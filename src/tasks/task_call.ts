import {
  type DispatchContext,
  type Dispatcher,
  type DispatchOutcome,
  type ProgressListener,
  ProviderError,
  stepCost,
  type StepResult,
} from "../dispatch/mod.ts";
import {
  type AgentDefinition,
  agentFolders,
  agentTypeNarrowingProblem,
  AgentTypeRegistry,
  applyAgentType,
} from "../agent_types/mod.ts";
import { SvcError } from "../errors/mod.ts";
import type { TaskStatus } from "../ledger/mod.ts";
import { platform } from "../platform/mod.ts";
import type { DispatchTaskRequest } from "../schemas/mod.ts";
import { type CompiledSchema, SchemaError, schemaRegistryFor } from "../structured/mod.ts";
import type { WorkspacePolicy } from "../workspace/mod.ts";
import type { SessionStore } from "./sessions.ts";

/** A task's call as it is dispatched: its options with its agent type applied, and its schema. */
export interface TaskCall {
  options: DispatchTaskRequest;
  /** The agent type's system prompt, when the task names one. */
  system: string | undefined;
  schema: CompiledSchema | undefined;
  /** The real path the task's workdir had when it was checked, which its call must stay in. */
  cwdRoot: string | undefined;
}

/**
 * Prepares a task's call on this host: its workdir at its place here (a scratch workdir is
 * recorded by role), its agent type resolved and applied, its schema compiled or resolved.
 */
export async function prepareTaskCall(
  status: TaskStatus,
  host: { workspace: WorkspacePolicy; home: string },
): Promise<TaskCall> {
  const given = status.options as DispatchTaskRequest;
  const place = host.workspace.placeOf(given.workdir);
  const asked = place === undefined ? given : { ...given, workdir: place };
  const workdir = asked.workdir ?? platform().cwd();
  const agent = await taskAgentType(asked.agentType, workdir);
  const problem = agent ? agentTypeNarrowingProblem(asked, agent) : undefined;
  if (problem !== undefined) throw new SvcError("invalid_request", problem);
  const options = agent ? { ...asked, ...applyAgentType(asked, agent) } : asked;
  const registry = schemaRegistryFor({ projectDir: workdir, home: host.home });
  let schema: CompiledSchema | undefined;
  try {
    if (options.schema !== undefined) schema = await registry.compile(options.schema);
    else if (options.schema_id !== undefined) schema = await registry.resolve(options.schema_id);
  } catch (error) {
    if (error instanceof SchemaError) {
      throw new SvcError(
        "invalid_request",
        error.message.replace(/^agent\(\): /, "Cannot dispatch: "),
      );
    }
    throw error;
  }
  const cwdRoot = await host.workspace.rootOf(given.workdir);
  return { options, system: agent?.system, schema, cwdRoot };
}

/** A direct dispatch's own ask is its default; `sandbox_max` alone can bound it lower. */
export function taskContext(status: TaskStatus, options: DispatchTaskRequest): DispatchContext {
  return {
    fakeOnly: status.fake_dispatch,
    ...(options.sandbox_max !== undefined ? { sandboxMax: options.sandbox_max } : {}),
  };
}

/** Records on the task how its call went: route, sandbox, usage, cost and worktree. */
export function settleTask(status: TaskStatus, outcome: DispatchOutcome): void {
  status.provider = outcome.provider;
  status.model = outcome.model;
  status.route = outcome.route.reason;
  status.sandbox = outcome.sandbox;
  status.sandbox_clamped = outcome.sandbox_clamped;
  status.usage = { ...outcome.usage };
  status.cost_usd = outcome.cost_usd;
  status.worktree = outcome.worktree ?? null;
}

/** One attempt of a task's call: through its session when it names one, else straight. */
export function dispatchTaskOnce(
  through: { dispatcher: Dispatcher; sessions: SessionStore },
  status: TaskStatus,
  options: DispatchTaskRequest,
  call: {
    signal: AbortSignal;
    system: string | undefined;
    fullApproved: boolean;
    onProgress?: ProgressListener;
    /** The real path the task's workdir had when it was checked. */
    cwdRoot?: string;
  },
): Promise<DispatchOutcome> {
  const { signal, system, onProgress, cwdRoot } = call;
  const input = {
    prompt: status.prompt,
    options,
    ...(system !== undefined ? { system } : {}),
    signal,
    ...(onProgress ? { onProgress } : {}),
    ...(options.workdir ? { cwd: options.workdir } : {}),
    ...(options.workdir && cwdRoot !== undefined ? { cwdRoot } : {}),
  };
  const context: DispatchContext = {
    ...taskContext(status, options),
    ...(call.fullApproved ? { fullApproved: true } : {}),
  };
  const { dispatcher, sessions } = through;
  if (options.session === undefined) return dispatcher.dispatch(input, context);
  // Told before the turn runs, so that nothing after the agent's answer can lose it. A
  // fake-dispatch turn leaves the session alone, and may not have one at all.
  return sessions.dispatch(dispatcher, input, {
    ...context,
    owner: status.owner,
    ref: options.session,
    onSession(sessionId) {
      status.session_id = sessionId;
    },
  });
}

/**
 * What a failed step throws, with the task charged for it: the last answer's route and usage,
 * and, when a provider ran and failed, every attempt's spend.
 */
export function stepFailure(
  status: TaskStatus,
  step: Extract<StepResult, { ok: false }>,
): unknown {
  if (step.last) settleTask(status, step.last);
  if (step.reason === "invalid") {
    return new SvcError(
      "provider_failed",
      `Cannot get an answer valid against the schema: ${step.attempts} attempts failed (${
        step.problems.join("; ")
      })`,
    );
  }
  // A provider that ran and failed is paid for, with every earlier attempt.
  if (step.error instanceof ProviderError) {
    status.usage = { ...step.spent.usage };
    status.cost_usd = stepCost(step.spent);
  }
  return step.error;
}

/**
 * A task's agent type, from `.claude/agents/` of its workdir (else the current directory), then
 * of the user's home, then the built-in types; an unknown one is refused.
 */
async function taskAgentType(
  name: string | undefined,
  workdir: string,
): Promise<AgentDefinition | undefined> {
  if (name === undefined) return undefined;
  const registry = new AgentTypeRegistry(
    agentFolders({ projectDir: workdir, userHome: platform().homeDir() }),
  );
  try {
    return await registry.resolve(name);
  } catch (error) {
    if (!(error instanceof SvcError)) throw error;
    throw new SvcError(error.code, error.message.replace(/^agent\(\): /, "Cannot dispatch: "));
  }
}

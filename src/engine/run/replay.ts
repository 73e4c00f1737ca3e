import { SvcError } from "../../errors/mod.ts";
import {
  type Caller,
  type RunInput,
  type RunLedger,
  type RunStatus,
  shownId,
  TERMINAL_STATES,
} from "../../ledger/mod.ts";
import {
  CONCURRENCY_LIMIT,
  describeIssue,
  MAX_AGENTS_LIMIT,
  type WorkflowResumeRequest,
  WorkflowResumeRequestSchema,
  type WorkflowRunRequest,
} from "../../schemas/mod.ts";
import { mergeReplay, type ReplayCandidate, ReplaySource } from "../journal.ts";

/** Runs back along `resumed_from` whose journals a resume still consults. */
const REPLAY_CHAIN_DEPTH = 8;

/** A run request as rebuilt from a recorded run: `schema_attempts` only when it was kept. */
export type RebuiltRequest = Omit<WorkflowRunRequest, "schema_attempts" | "script"> & {
  script: string;
  schema_attempts?: number;
};

/** What a resume reads of recorded runs. */
export type ReplayLedger = Pick<RunLedger, "getRun" | "getRunInput" | "getJournal">;

/** How the resume and replay helpers read runs: the manager's view, which sees live runs. */
export interface ReplayReader {
  /** Where journals and older runs of the chain are read. */
  ledger: ReplayLedger;
  /** The run's status as `caller` may see it (the manager's `get`). */
  get(runId: string, caller: Caller): Promise<RunStatus | undefined>;
}

/**
 * The request that resumes `runId` for `caller`, with what `options` (checked by
 * `WorkflowResumeRequestSchema`) changes. Another owner's run is `not_found`.
 */
export async function resumeRequest(
  runId: string,
  caller: Caller,
  options: unknown,
  reader: ReplayReader,
): Promise<RebuiltRequest> {
  const parsed = WorkflowResumeRequestSchema.safeParse(options ?? {});
  if (!parsed.success) {
    throw new SvcError(
      "invalid_request",
      `Cannot resume run '${shownId(runId)}': ${describeIssue(parsed.error)}`,
    );
  }
  const source = await reader.get(runId, caller);
  if (!source) {
    throw new SvcError("not_found", `Cannot resume run '${shownId(runId)}': no such run`);
  }
  const input = await reader.ledger.getRunInput(runId);
  if (!input) {
    throw new SvcError("not_found", `Cannot resume run '${shownId(runId)}': no such run`);
  }
  return replayRequest(source, input, parsed.data);
}

/**
 * The request that runs `source` again from its recorded input, resuming from it, with what
 * `changes` names changed. Limits out of a request's range (only a host's own defaults can be)
 * are left to that default again.
 */
export function replayRequest(
  source: RunStatus,
  input: RunInput,
  changes: WorkflowResumeRequest,
): RebuiltRequest {
  const { limits, budget } = source;
  const budgetTokens = changes.budget_tokens ?? budget.tokens.cap ?? undefined;
  const budgetUsd = changes.budget_usd ?? budget.usd.cap ?? undefined;
  return {
    script: input.script,
    filename: source.filename,
    ...(source.title !== undefined ? { title: source.title } : {}),
    ...(source.description !== undefined ? { description: source.description } : {}),
    ...(input.args !== undefined ? { args: input.args } : {}),
    sandbox_default: source.sandbox_default,
    sandbox_max: source.sandbox_max,
    isolation: source.isolation,
    ...(source.workdir !== null ? { workdir: source.workdir } : {}),
    ...(input.script_dir !== undefined ? { script_dir: input.script_dir } : {}),
    timeout: changes.timeout ?? source.timeout,
    fake_dispatch: changes.fake_dispatch ?? source.fake_dispatch,
    ...(budgetTokens !== undefined ? { budget_tokens: budgetTokens } : {}),
    ...(budgetUsd !== undefined ? { budget_usd: budgetUsd } : {}),
    resume_from: source.run_id,
    ...(limits.max_agents <= MAX_AGENTS_LIMIT ? { max_agents: limits.max_agents } : {}),
    ...(limits.concurrency <= CONCURRENCY_LIMIT ? { concurrency: limits.concurrency } : {}),
    // Runs recorded before schema_attempts was kept ran with the default, which applies again.
    ...(input.schema_attempts !== undefined ? { schema_attempts: input.schema_attempts } : {}),
  };
}

/** The request a queued run was recorded with, rebuilt from its status and input. */
export function queuedRequest(status: RunStatus, input: RunInput): RebuiltRequest {
  const { resume_from: _self, ...request } = replayRequest(status, input, {});
  return {
    ...request,
    ...(status.resumed_from ? { resume_from: status.resumed_from } : {}),
    ...(status.card_id !== undefined ? { card_id: status.card_id } : {}),
  };
}

/**
 * What a run resuming from `runId` may replay: the source's journal over its own chain. The
 * source must exist for `caller` and have ended, which is checked now; its journal is read in
 * the background, while the run is recorded and its guest boots (the offer waits for it).
 */
export async function replaySource(
  runId: string,
  caller: Caller,
  reader: ReplayReader,
): Promise<ReplaySource> {
  const source = await reader.get(runId, caller);
  if (!source) {
    throw new SvcError("not_found", `Cannot resume from run '${runId}': no such run`);
  }
  refuseUnended(source);
  return new ReplaySource(runId, replayChain(reader.ledger, source, 0));
}

/**
 * What a resume of `status`'s run may replay: its journal, over what its own source offered
 * it (a run killed mid-replay may not have recorded every call it replayed).
 */
async function replayChain(
  ledger: ReplayLedger,
  status: RunStatus,
  depth: number,
): Promise<ReplayCandidate[]> {
  const entries = await ledger.getJournal(status.run_id);
  const from = status.resumed_from;
  const older = from && depth < REPLAY_CHAIN_DEPTH
    ? await ledger.getRun(from).then((s) => s ? replayChain(ledger, s, depth + 1) : [])
    : [];
  return mergeReplay(status.run_id, entries, older);
}

/** Only a run that has ended can be resumed: a running one is still writing its journal. */
function refuseUnended(source: RunStatus): void {
  if (!TERMINAL_STATES.has(source.state)) {
    throw new SvcError(
      "conflict",
      `Cannot resume from run '${source.run_id}': it is still ${source.state}`,
    );
  }
}

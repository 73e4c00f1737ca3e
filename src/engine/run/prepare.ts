import type { Dispatcher } from "../../dispatch/mod.ts";
import { SvcError, toSvcError } from "../../errors/mod.ts";
import type { Caller, HostRef, RunError, RunLedger, RunStatus } from "../../ledger/mod.ts";
import { platform } from "../../platform/mod.ts";
import {
  describeIssue,
  type WorkflowRunRequest,
  WorkflowRunRequestSchema,
} from "../../schemas/mod.ts";
import type { WorkspacePolicy } from "../../workspace/mod.ts";
import { BudgetGate } from "../budget.ts";
import type { ReplaySource } from "../journal.ts";
import { boundMeta } from "../record_bounds.ts";
import { checkScript } from "../script_check.ts";
import { type RebuiltRequest, type ReplayReader, replaySource } from "./replay.ts";
import { type LimitFigures, runLimits } from "./run_limits.ts";
import { type ScriptRequest, scriptSource } from "./script_source.ts";
import { newRunStatus } from "./status.ts";

/** A checked run request with the run's first status, ready to record and launch. */
export interface PreparedRun {
  /** The run's status: new and `queued`, or the queued run's own. */
  status: RunStatus;
  /** The checked request, its paths placed for a remote caller, its script read in. */
  request: ScriptRequest;
  /** The script's body as the guest runs it. */
  body: string;
  /** What the script check and the host warned about, narrated when the run starts. */
  warnings: string[];
  /** The host's own part of `warnings` (a field ignored, a limit clamped), recorded with the run. */
  notes: string[];
  /** The real path of the request's `script_dir`, when it named one. */
  scriptDir: string | undefined;
  /** What a resumed run may replay. */
  replay: ReplaySource | undefined;
  /** The real path the run's workdir had when it was checked, which its calls must stay in. */
  workdirRoot?: string;
  /** The run's budget gate. */
  budget: BudgetGate;
  /** Set when a queued run can no longer start: it fails with this error at once. */
  refused?: RunError;
}

/** What preparing a request reads beyond the request: the manager's settings and views. */
export interface PrepareContext extends ReplayReader {
  /** Whose providers say whether the fake is the only one. */
  dispatcher: Dispatcher;
  /** Which workdirs a remote caller may name. */
  workspace: WorkspacePolicy;
  /** The host's default of `max_agents`. */
  maxAgents: number;
  /** The host's default of `concurrency`. */
  concurrency: number;
  /** The operator's ceilings: a script's meta or a run's options raise its limits up to them. */
  ceiling: LimitFigures;
  /** The host's project: a run without a workdir finds saved workflows there. */
  projectDir: string;
  /** `SVC_HOME`, whose `workflows/` a saved workflow's name is looked up in last. */
  home: string;
  /** The user's home, whose `.claude/workflows/` comes after the project's. */
  userHome?: string;
}

/** Options of {@linkcode prepareRun}. */
export interface PrepareOptions {
  /** The run was queued with this status: it is reused, and its paths were checked then. */
  queued?: RunStatus;
  /** The notes recorded when the queued run was asked for, narrated again when it starts. */
  notes?: string[];
  /** Hears of the request once it and its script passed the checks that need no I/O. */
  checked?: (request: WorkflowRunRequest) => void;
}

/**
 * Checks a request and builds the run's first status (`queued`), or uses `queued`'s.
 * Bad input throws an SvcError before anything of it reaches a guest.
 */
export async function prepareRun(
  input: unknown,
  caller: Caller,
  context: PrepareContext,
  options: PrepareOptions = {},
): Promise<PreparedRun> {
  const { queued } = options;
  const parsed = WorkflowRunRequestSchema.safeParse(input);
  if (!parsed.success) {
    throw new SvcError("invalid_request", `Cannot start the run: ${describeIssue(parsed.error)}`);
  }
  // A remote caller's paths are checked (and made real) before anything reads them; a
  // queued run's were checked when it was queued.
  const placed = queued ? parsed.data : await placedRequest(parsed.data, caller, context);
  // A saved workflow is read from the run's own project (a remote caller's is inside its roots).
  const source = await scriptSource(placed, {
    projectDir: context.workspace.placeOf(placed.workdir) ?? context.projectDir,
    home: context.home,
    ...(context.userHome !== undefined ? { userHome: context.userHome } : {}),
  });
  const request = source.request;
  const filename = request.filename ?? "script.js";
  const checked = checkScript(request.script, { filename });
  options.checked?.(request);
  const scriptDir = request.script_dir === undefined
    ? undefined
    : await existingDir(request.script_dir);
  const meta = boundMeta(checked.meta);
  const replay = request.resume_from
    ? await replaySource(request.resume_from, caller, context)
    : undefined;
  const budget = new BudgetGate({ tokens: request.budget_tokens, usd: request.budget_usd });
  const limits = runLimits(request, checked.meta, {
    maxAgents: context.maxAgents,
    concurrency: context.concurrency,
  }, context.ceiling);
  // A queued run's request carries its limits as they were set: its notes were recorded then.
  const notes = queued ? options.notes ?? [] : [...source.warnings, ...limits.warnings];
  const warnings = [...notes, ...checked.warnings];
  const workdirRoot = await context.workspace.rootOf(request.workdir);
  const common = {
    request,
    body: checked.body,
    warnings,
    notes,
    scriptDir,
    replay,
    ...(workdirRoot !== undefined ? { workdirRoot } : {}),
  };
  if (queued) return { ...common, status: queued, budget };
  // With nothing configured, the fake is the only provider: calls "succeed" with fake
  // answers, which the user must hear about unless they asked for exactly that.
  const fakeProviderOnly = !request.fake_dispatch &&
    context.dispatcher.providers().every((name) => name === "fake");
  const status = newRunStatus({
    request,
    owner: caller.owner,
    meta,
    filename,
    limits: limits.limits,
    budget: budget.figures(),
    fakeProviderOnly,
  });
  return { ...common, status, budget };
}

/**
 * A queued run that can no longer start (what was valid when queued may not be now: a
 * script_dir removed, a resumed run gone): it fails with `error`'s reason instead of staying
 * queued forever.
 */
export function refusedRun(
  status: RunStatus,
  request: RebuiltRequest,
  error: unknown,
): PreparedRun {
  const e = toSvcError(error);
  const parsed = WorkflowRunRequestSchema.safeParse(request);
  return {
    status,
    // The run fails before its script is read: any valid request serves the context.
    request: {
      ...(parsed.success ? parsed.data : WorkflowRunRequestSchema.parse({ script: "null" })),
      script: request.script,
    },
    body: "",
    warnings: [],
    notes: [],
    scriptDir: undefined,
    replay: undefined,
    budget: new BudgetGate({ tokens: request.budget_tokens, usd: request.budget_usd }),
    refused: { code: e.code === "internal" ? "invalid_request" : e.code, message: e.message },
  };
}

/**
 * Records a prepared run: running on `host`, or queued for a worker when `host` is null. With
 * `ownerCap`, a run on `host` is recorded only while its owner has fewer live runs on every
 * host of the ledger; false when it was not recorded for that.
 */
export async function recordRun(
  ledger: Pick<RunLedger, "createRun">,
  prepared: PreparedRun,
  host: HostRef | null,
  options: { ownerCap?: number } = {},
): Promise<boolean> {
  const { status, request } = prepared;
  return await ledger.createRun(status, {
    input: {
      script: request.script,
      ...(request.args !== undefined ? { args: request.args } : {}),
      schema_attempts: request.schema_attempts,
      ...(request.script_dir !== undefined ? { script_dir: request.script_dir } : {}),
      ...(prepared.notes.length > 0 ? { notes: prepared.notes } : {}),
    },
    host,
    event: { type: "state", run_id: status.run_id, at: status.created_at, state: "queued" },
    ...(options.ownerCap !== undefined ? { ownerCap: options.ownerCap } : {}),
  });
}

/**
 * The request with the workdir the workspace policy gives `caller`: for a remote caller a
 * real path inside its roots, and a fresh scratch workdir when it named none. A resumed
 * run's scratch workdir is the caller's own and is accepted again.
 */
async function placedRequest(
  request: WorkflowRunRequest,
  caller: Caller,
  context: PrepareContext,
): Promise<WorkflowRunRequest> {
  if (caller.remote !== true) {
    // The operator's choice, recorded at its real path: what its calls are checked against.
    const workdir = await context.workspace.workdirFor(caller, request.workdir, {
      what: "workdir",
    });
    return workdir === undefined ? request : { ...request, workdir };
  }
  const source = request.resume_from ? await context.get(request.resume_from, caller) : undefined;
  const inherited = source?.workdir ?? undefined;
  const workdir = await context.workspace.workdirFor(caller, request.workdir, {
    what: "workdir",
    scratch: true,
    ...(inherited !== undefined ? { inherited } : {}),
  });
  // `script_dir` is no field of the API's body: only the host sets it (the command line, a
  // saved workflow of A2A or the daemon), so it is the host's choice, not the caller's.
  return workdir === undefined ? request : { ...request, workdir };
}

/** The real path of `dir`, which must be an existing directory; a refusal otherwise. */
async function existingDir(dir: string): Promise<string> {
  const p = platform();
  try {
    const real = await p.realPath(dir);
    if ((await p.stat(real)).isDirectory) return real;
  } catch {
    // Refused below.
  }
  throw new SvcError(
    "invalid_request",
    `Cannot start the run: 'script_dir' ${
      JSON.stringify(dir.slice(0, 200))
    } is not an existing directory`,
  );
}

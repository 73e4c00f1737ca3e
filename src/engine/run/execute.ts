import { StopReason as RunStop } from "../../dispatch/mod.ts";
import { type SchemaRegistry, schemaRegistryFor } from "../../structured/mod.ts";
import { agentFolders, AgentTypeRegistry } from "../../agent_types/mod.ts";
import { toSvcError } from "../../errors/mod.ts";
import type {
  ApprovalLedger,
  HostLedger,
  LedgerCore,
  RunLedger,
  RunStatus,
} from "../../ledger/mod.ts";
import type { JsonValue } from "../../schemas/mod.ts";
import { type GuestOutcome, runGuest } from "../guest_session.ts";
import { now, type RunContext } from "../run_context.ts";
import { finishFromOutcome, finishRun, type RunEndContext } from "./finish.ts";
import { guestHandlers } from "./guest_handlers.ts";
import { guestClock } from "./guest_prime.ts";
import type { ResolvedRunOptions } from "./options.ts";

/** Values the guest gets at start to answer replayed calls itself; larger ones it asks for. */
const REPLAY_OFFER = { totalBytes: 32 * 1024 * 1024, valueBytes: 1024 * 1024 };

/** What one run's execution writes and reads in the ledger. */
export type ExecuteLedger =
  & Pick<LedgerCore, "home">
  & Pick<RunLedger, "write">
  & Pick<HostLedger, "interruptRun">
  & ApprovalLedger;

/** What executing a run needs of its host: its settings, scratch root and teardowns. */
export interface ExecuteContext extends RunEndContext {
  /** Where the run's writes, approvals and unwritten end go, and whose home holds workflows. */
  ledger: ExecuteLedger;
  /** The host's settings the guest and its calls use. */
  options: Pick<
    ResolvedRunOptions,
    | "dispatcher"
    | "sessions"
    | "isolation"
    | "heapMb"
    | "frameLimit"
    | "nonce"
    | "projectDir"
    | "userHome"
    | "cancelPollMs"
  >;
  /** Where guests (and calls) make their scratch directories. */
  scratchRoot: string;
  /** Guests' teardowns still under way: the host's close waits for them. */
  teardowns: Set<Promise<void>>;
}

/** The checked script a run executes. */
export interface RunScript {
  /** The script's body as the guest runs it. */
  body: string;
  /** What the script check warned about: narrated first. */
  warnings: string[];
  /** The real path of the request's `script_dir`, when it named one. */
  scriptDir: string | undefined;
}

/**
 * Runs one recorded run to its end: starts its guest under the run's timeout, answers the
 * guest's calls, and ends the run from the guest's outcome. Resolves with the final status.
 */
export async function executeRun(
  run: RunContext,
  script: RunScript,
  context: ExecuteContext,
): Promise<RunStatus> {
  // Start on a later task, so that whoever awaited start() can subscribe before anything happens.
  await new Promise((resolve) => setTimeout(resolve, 0));
  for (const text of script.warnings) run.narrate({ kind: "warning", text });
  const { status, controller, request } = run;
  if (controller.signal.aborted) {
    return await finishFromOutcome(run, {
      kind: "aborted",
      reason: controller.signal.reason,
    }, context);
  }
  const timer = setTimeout(
    () =>
      controller.abort(
        new RunStop("timeout", `the run exceeded its timeout of ${request.timeout} s`),
      ),
    request.timeout * 1000,
  );
  status.started_at = now();
  // The state event carries the same instant as the status, so a follower can match them.
  run.setState("running", status.started_at);
  const places = runPlaces(run, context);
  let outcome: GuestOutcome;
  try {
    outcome = await startGuest(run, script, places, context);
  } catch (error) {
    // The guest never started (no backend, no binary): the run fails closed, nothing ran.
    const e = toSvcError(error);
    const code = e.code === "internal" ? "guest_failed" : e.code;
    const message = e.code === "internal"
      ? "Cannot start the script: the guest process could not be spawned"
      : e.message;
    clearTimeout(timer);
    return await finishRun(run, "failed", { error: { code, message } }, context);
  }
  clearTimeout(timer);
  return await finishFromOutcome(run, outcome, context);
}

/** Where a run's calls look for schemas, agent types and workflows. */
interface RunPlaces {
  projectDir: string;
  schemas: SchemaRegistry;
  agentTypes: AgentTypeRegistry;
}

/** The run's places: its workdir (else the host's project) and the registries over it. */
function runPlaces(run: RunContext, context: ExecuteContext): RunPlaces {
  const projectDir = run.request.workdir ?? context.options.projectDir;
  return {
    projectDir,
    schemas: schemaRegistryFor({ projectDir, home: context.ledger.home }),
    agentTypes: new AgentTypeRegistry(
      agentFolders({ projectDir, userHome: context.options.userHome }),
    ),
  };
}

/** Runs the run's guest with its handlers; resolves with how the guest ended. */
function startGuest(
  run: RunContext,
  script: RunScript,
  places: RunPlaces,
  context: ExecuteContext,
): Promise<GuestOutcome> {
  const { status, controller, request } = run;
  const { options, ledger } = context;
  return runGuest({
    backend: options.isolation[request.isolation],
    scratchRoot: context.scratchRoot,
    body: script.body,
    filename: status.filename,
    args: { given: request.args !== undefined, value: request.args as JsonValue },
    budget: { total: status.budget.total, unit: status.budget.unit },
    heapMb: options.heapMb,
    // A little past the wall-clock timeout, so that the host's own timeout normally wins.
    ...guestClock(request.timeout),
    frameLimit: options.frameLimit,
    nonce: options.nonce,
    signal: controller.signal,
    teardowns: context.teardowns,
    ...(run.replay
      ? { replay: run.replay.offer(REPLAY_OFFER), maxAgents: status.limits.max_agents }
      : {}),
    handlers: guestHandlers(run, {
      // The providers and routing as configured now: a reload while it runs changes neither.
      dispatcher: options.dispatcher.pinned?.() ?? options.dispatcher,
      sessions: options.sessions,
      schemas: places.schemas,
      agentTypes: places.agentTypes,
      ledger,
      pollMs: options.cancelPollMs,
      projectDir: places.projectDir,
      userHome: options.userHome,
      scriptDir: script.scriptDir,
    }),
  });
}

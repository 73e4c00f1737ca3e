import { abortableSleep } from "../concurrency/mod.ts";
import {
  agentFolders,
  AgentTypeRegistry,
  type Dispatcher,
  schemaRegistryFor,
  SessionStore,
} from "../dispatch/mod.ts";
import { SvcError, toSvcError } from "../errors/mod.ts";
import {
  defaultIsolationBackends,
  type IsolationBackends,
  type PrestartedBackend,
  prestartedBackend,
} from "../isolation/mod.ts";
import { withDefaults } from "../options/mod.ts";
import {
  type Caller,
  type FeedItem,
  followEvents,
  HostLease,
  type HostRef,
  isId,
  type JournalEntry,
  type Ledger,
  mayAccess,
  newId,
  ownerScope,
  type QueueItem,
  type RunError,
  type RunEvent,
  type RunInput,
  type RunState,
  type RunStatus,
  shownId,
  TERMINAL_STATES,
  type WorkTrigger,
} from "../ledger/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import {
  CONCURRENCY_LIMIT,
  DEFAULT_RUN_TIMEOUT_S,
  describeIssue,
  type JsonValue,
  MAX_AGENTS_LIMIT,
  type WorkflowResumeRequest,
  WorkflowResumeRequestSchema,
  type WorkflowRunRequest,
  WorkflowRunRequestSchema,
} from "../schemas/mod.ts";
import { sweepScratch } from "../scratch/mod.ts";
import { WorkspacePolicy } from "../workspace/mod.ts";
import { handleAgentCall, recordReplayedCalls } from "./agent_call.ts";
import { BudgetGate } from "./budget.ts";
import {
  type GuestOutcome,
  runGuest,
  ScriptCallError,
  type WorkflowReply,
} from "./guest_session.ts";
import { mergeReplay, type ReplayCandidate, ReplaySource } from "./journal.ts";
import { now, RunContext } from "./run_context.ts";
import { checkScript } from "./script_check.ts";
import { boundError, boundMeta } from "./record_bounds.ts";
import { scriptRunError } from "./script_error.ts";
import { StopReason as RunStop } from "../dispatch/mod.ts";
import { resolveWorkflow } from "./sub_workflow.ts";
import { RunAdmission, type RunAdmissionLimits, type RunAdmissionSnapshot } from "./admission.ts";

/** Options of {@linkcode RunManager.create}. */
export interface RunManagerOptions {
  /** Where the runs' `agent()` calls go. */
  dispatcher: Dispatcher;
  /** Where runs, journals and event feeds are kept. */
  ledger: Ledger;
  /** Where `agent(..., {session})` conversations live. Default: a store over `ledger`. */
  sessions?: SessionStore;
  /** The project: its `schemas/` and `workflows/` folders come before those of `SVC_HOME`. Default: the current directory. */
  projectDir?: string;
  /** The user's home, whose `.claude/agents/` and `.claude/workflows/` come after the project's. Default: `HOME`. */
  userHome?: string;
  /** The backends scripts run in, by isolation tier. Default: unsafe-local and microvm. */
  isolation?: IsolationBackends;
  /** Simultaneous `agent()` calls of one run; more queue. Default 8. */
  concurrency?: number;
  /** `agent()` calls one run may make; later ones return null. Default 200. */
  maxAgents?: number;
  /**
   * Refused `agent()` calls after which a run fails with `agent_limit_exceeded` (a script
   * looping over refused calls). Default 1000.
   */
  maxRefusedCalls?: number;
  /** V8 heap cap of each guest in MiB. Default 512. */
  heapMb?: number;
  /** Largest frame a guest may send, in bytes. Default 4 MiB. */
  frameLimit?: number;
  /** Most narration entries kept per run; later ones are counted, not kept. Default 5000. */
  maxNarration?: number;
  /** Bytes of narration text kept per run; later entries are counted, not kept. Default 2 MiB. */
  maxNarrationBytes?: number;
  /** Most security events kept per run. Default 200. */
  maxSecurityEvents?: number;
  /**
   * Bytes of journal one run may record (entries and the results kept inline in them).
   * A call whose result would pass it fails with `LedgerLimitExceeded`. Default 16 MiB.
   */
  maxJournalBytes?: number;
  /** Bytes of results over 48 KiB (kept in blob files) one run may record. Default 64 MiB. */
  maxBlobBytes?: number;
  /** Source of bridge nonces (tests pass a known one to prove it never leaks). */
  nonce?: () => string;
  /**
   * Which directories remote callers may name as `workdir`. Default: no roots,
   * so a remote caller's run gets a fresh scratch workdir and cannot name one; the command
   * line's choice is free either way.
   */
  workspace?: WorkspacePolicy;
  /** This process's identity in the ledger, shared with its task manager. Default: its own. */
  host?: HostLease;
  /**
   * How often the runs of this host look for a cancel asked for by another process, and a call
   * waiting for approval for its decision, in ms. Default 250.
   */
  cancelPollMs?: number;
  /**
   * Keep one `unsafe-local` guest started ahead of the next run, so that a run in a long-lived
   * host (dashboard, daemon) pays no process boot before its first call. Each run still gets a
   * fresh process. Default false: a one-shot command would start a guest it never uses.
   */
  prestartGuest?: boolean;
  /** Admission control: the host's and remote owners' caps. Default: `DEFAULT_RUN_ADMISSION`. */
  admission?: Partial<RunAdmissionLimits>;
}

/** A checked run request with the run's first status, ready to record and launch. */
interface PreparedRun {
  status: RunStatus;
  request: WorkflowRunRequest;
  body: string;
  warnings: string[];
  scriptDir: string | undefined;
  replay: ReplaySource | undefined;
  budget: BudgetGate;
  /** Set when a queued run can no longer start: it fails with this error at once. */
  refused?: RunError;
}

/** Options of {@linkcode RunManager.events}. */
export interface RunEventsOptions {
  /** Start after this position (the last `seq` seen). Default: from the first event. */
  after?: number;
  /** Stops following. */
  signal?: AbortSignal;
  /** With false, ends after the events recorded so far. Default true. */
  follow?: boolean;
}

/** The guests' `--seed`: the same in every run, so that the runtime's own randomness replays. */
const GUEST_SEED = 1;
/** CPU seconds a guest gets past its run's timeout, so that the host's own timeout wins. */
const GUEST_CPU_GRACE_S = 5;
/** Runs back along `resumed_from` whose journals a resume still consults. */
const REPLAY_CHAIN_DEPTH = 8;
/** Values the guest gets at start to answer replayed calls itself; larger ones it asks for. */
const REPLAY_OFFER = { totalBytes: 32 * 1024 * 1024, valueBytes: 1024 * 1024 };
/** The first and the longest pause between attempts to write the end of a run the ledger refused. */
const UNWRITTEN_RETRY_MIN_MS = 100;
const UNWRITTEN_RETRY_MAX_MS = 2_000;

/**
 * Starts workflow runs, keeps their state in the ledger, and tells subscribers what happens.
 * Every run is a guest process driven by {@linkcode runGuest}; every `agent()` call it makes
 * passes the agent limit, resume matching, the run's concurrency cap and budget gate, then
 * goes through the dispatcher and into the journal.
 */
export class RunManager {
  readonly #options:
    & Required<
      Omit<
        RunManagerOptions,
        | "nonce"
        | "projectDir"
        | "sessions"
        | "userHome"
        | "host"
        | "workspace"
        | "admission"
      >
    >
    & {
      sessions: SessionStore;
      workspace: WorkspacePolicy;
      nonce?: () => string;
      projectDir: string;
      userHome?: string;
    };
  readonly #runs = new Map<string, RunContext>();
  /** What each live run holds of the host lease (its heartbeat). */
  readonly #holds = new Map<string, () => void>();
  readonly #host: HostLease;
  /** Whether this manager made its host lease, and so closes it. */
  readonly #ownsHost: boolean;
  #cancelPoll: ReturnType<typeof setInterval> | undefined;
  #recovered: string[] = [];
  /** Guests' teardowns still under way: close() waits for them. */
  readonly #teardowns = new Set<Promise<void>>();
  /** Runs whose end is still being written after the ledger refused their writes. */
  readonly #endings = new Set<Promise<void>>();
  /** Aborted when the manager closes: the endings stop retrying. */
  readonly #closed = new AbortController();
  /** The `unsafe-local` backend, starting guests ahead of need. */
  readonly #prestarted: PrestartedBackend;
  /** Admission control: whether a new run runs now, queues, or is refused. */
  readonly #admission: RunAdmission;
  /** Set when close() begins: queued runs are no longer started. */
  #closing = false;

  private constructor(options: RunManagerOptions) {
    this.#options = {
      ...withDefaults({
        isolation: defaultIsolationBackends(),
        concurrency: 8,
        maxAgents: 200,
        maxRefusedCalls: 1000,
        heapMb: 512,
        frameLimit: 4 * 1024 * 1024,
        maxNarration: 5000,
        maxNarrationBytes: 2 * 1024 * 1024,
        maxSecurityEvents: 200,
        maxJournalBytes: 16 * 1024 * 1024,
        maxBlobBytes: 64 * 1024 * 1024,
        cancelPollMs: 250,
        prestartGuest: false as boolean,
        projectDir: platform().cwd(),
        userHome: platform().homeDir(),
      }, options),
      sessions: options.sessions ?? new SessionStore(options.ledger),
      workspace: options.workspace ?? new WorkspacePolicy({
        forbidden: [options.ledger.home],
        home: options.ledger.home,
      }),
    };
    this.#ownsHost = options.host === undefined;
    this.#host = options.host ?? new HostLease(options.ledger);
    const { isolation } = this.#options;
    this.#prestarted = prestartedBackend(isolation["unsafe-local"], {
      refill: this.#options.prestartGuest,
    });
    this.#options.isolation = { ...isolation, "unsafe-local": this.#prestarted };
    this.#admission = new RunAdmission(options.admission);
  }

  /**
   * Creates the manager over an open ledger. Runs left `queued` or `running` by a host that
   * has died are marked `interrupted` first, and the scratch directories of dead hosts are
   * removed.
   */
  static async create(options: RunManagerOptions): Promise<RunManager> {
    const manager = new RunManager(options);
    await manager.recover();
    await sweepScratch(manager.#scratchRoot);
    if (manager.#options.prestartGuest) manager.#primeGuest(DEFAULT_RUN_TIMEOUT_S);
    return manager;
  }

  /**
   * Marks `interrupted` the runs of hosts that have died (any process's, never this one's);
   * returns their ids. A long-lived host calls it now and then, not only at start-up.
   */
  async recover(): Promise<string[]> {
    const found = await this.#ledger.recoverInterrupted(this.#host.ref);
    this.#recovered.push(...found);
    return found;
  }

  /** Runs this manager found left `running` by a host that died, and marked `interrupted`. */
  get recovered(): readonly string[] {
    return this.#recovered;
  }

  /**
   * Starts an `unsafe-local` guest with the settings runGuest() will ask for under `timeout`,
   * so that it boots while the host records the run (or waits for the next run).
   */
  #primeGuest(timeout: number): void {
    this.#prestarted.prime({
      scratchRoot: this.#scratchRoot,
      heapMb: this.#options.heapMb,
      seed: GUEST_SEED,
      cpuSeconds: timeout + GUEST_CPU_GRACE_S,
    });
  }

  /** Where guests (and calls) make their scratch directories. */
  get #scratchRoot(): string {
    return joinPath(this.#ledger.home, "tmp");
  }

  get #ledger(): Ledger {
    return this.#options.ledger;
  }

  /**
   * Validates the request and the script, records the run and starts it, and returns its
   * first status (`queued`) at once. Bad input throws an SvcError before anything of it reaches
   * a guest. The run's guest starts booting as soon as the request and the script are checked,
   * while the host reads what else the run needs (a resumed run's journal) and records it.
   */
  async start(input: unknown, caller: Caller): Promise<RunStatus> {
    const prepared = await this.#prepare(this.#admission.boundTimeout(input, caller), caller, {
      checked: (request) => {
        if (request.isolation === "unsafe-local") this.#primeGuest(request.timeout);
      },
    });
    const release = await this.#host.hold();
    const runId = prepared.status.run_id;
    let placement;
    try {
      // Admission control: at the live caps the run is recorded queued, and this process starts
      // it when a slot frees; at the queue's caps it is refused (rate_limited).
      placement = await this.#admission.serial(async () => {
        const placed = await this.#admission.place(caller, runId, () => this.#queuedRuns());
        await this.#record(prepared, placed === "run" ? this.#host.ref : null);
        return placed;
      });
    } catch (error) {
      this.#admission.release(runId);
      release();
      throw error;
    }
    if (placement === "run") return this.#launch(prepared, release);
    release();
    return await this.#withPosition(structuredClone(prepared.status));
  }

  /**
   * Validates and records the run as `queued` without running it: a worker (the daemon's)
   * claims it with {@linkcode work}, in this process or another. Bad input throws an SvcError
   * and records nothing.
   */
  async enqueue(
    input: unknown,
    caller: Caller,
    options: { trigger?: WorkTrigger } = {},
  ): Promise<RunStatus> {
    const prepared = await this.#prepare(this.#admission.boundTimeout(input, caller), caller, {});
    if (options.trigger) prepared.status.trigger = options.trigger;
    await this.#admission.serial(async () => {
      this.#admission.checkQueue(caller, await this.#queuedRuns());
      await this.#record(prepared, null);
    });
    return await this.#withPosition(structuredClone(prepared.status));
  }

  /** The runs in the ledger's queue (every owner's), oldest first, as far as admission looks. */
  #queuedRuns(): Promise<QueueItem[]> {
    return this.#ledger.listQueue({
      kind: "run",
      limit: this.#admission.limits.hostQueuedRuns + 64,
    });
  }

  /** A queued run's status with its 1-based place in the queue's fair order. */
  async #withPosition(status: RunStatus): Promise<RunStatus> {
    if (status.state !== "queued") return status;
    const position = this.#admission.position(status.run_id, await this.#queuedRuns());
    if (position !== undefined) status.queue_position = position;
    return status;
  }

  /**
   * Throws the `rate_limited` refusal a new run of `caller` would get now, taking nothing
   * (a surface that must refuse before it answers); {@linkcode start} admits the run again.
   */
  async checkAdmission(caller: Caller): Promise<void> {
    await this.#admission.serial(() => this.#admission.check(caller, () => this.#queuedRuns()));
  }

  /** How full the caps are, host-wide and for the caller's owner. */
  async admission(caller: Caller): Promise<RunAdmissionSnapshot> {
    return this.#admission.snapshot(caller.owner, await this.#queuedRuns());
  }

  /**
   * Takes up the runs waiting in the ledger's queue that this process does not wait for yet
   * (queued by a host that stopped, or for a daemon that is gone): they start here as live
   * slots free, owners in turn, each claimed atomically so no run starts twice. Returns how
   * many it took up.
   */
  async adoptQueued(): Promise<number> {
    if (this.#closing) return 0;
    let taken = 0;
    for (const item of await this.#queuedRuns()) {
      if (this.#admission.adopt(item.id, item.owner)) taken++;
    }
    this.#pump();
    return taken;
  }

  /** Starts the runs this process queued, as far as live slots have freed, owners in turn. */
  #pump(): void {
    if (this.#closing) return;
    for (const { runId } of this.#admission.startable()) {
      if (!this.#admission.tryClaim(runId, this.#admission.ownerWaiting(runId) ?? "")) continue;
      this.#claimHeld(runId).catch(() => this.#admission.release(runId));
    }
  }

  /**
   * Claims a queued run and runs it in this process; resolves with its first status once it
   * has started (its end: {@linkcode wait}). Undefined when another worker claimed it first or
   * it is no longer queued, so that workers racing for one run never both run it.
   */
  async work(runId: string): Promise<RunStatus | undefined> {
    return await this.#work(runId, { force: false });
  }

  /**
   * {@linkcode work}, after admission: undefined also when this host, or the run's owner, is
   * at its live cap (owners' queued runs take turns). `force` (a cancel) passes the caps.
   */
  async #work(runId: string, options: { force: boolean }): Promise<RunStatus | undefined> {
    if (!isId("run", runId) || this.#closing) return undefined;
    const owner = (await this.#ledger.getRun(runId))?.owner;
    if (owner === undefined) return undefined;
    if (!this.#admission.tryClaim(runId, owner, options)) return undefined;
    try {
      return await this.#claimHeld(runId);
    } catch (error) {
      this.#admission.release(runId);
      throw error;
    }
  }

  /** Claims a queued run whose live slot is taken, and starts it; undefined when not claimed. */
  async #claimHeld(runId: string): Promise<RunStatus | undefined> {
    const release = await this.#host.hold();
    let claimed = false;
    try {
      claimed = await this.#ledger.claimRun(runId, this.#host.ref);
      if (!claimed) {
        release();
        this.#admission.release(runId);
        return undefined;
      }
      this.#admission.forgetWaiting(runId);
      return await this.#resumeQueued(runId, release);
    } catch (error) {
      if (!claimed) release();
      throw error;
    }
  }

  /** Starts a run this host has just claimed, from what the ledger kept of its request. */
  async #resumeQueued(runId: string, release: () => void): Promise<RunStatus> {
    const status = await this.#ledger.getRun(runId);
    const input = await this.#ledger.getRunInput(runId);
    if (!status || !input) {
      release();
      throw new SvcError("not_found", `Cannot work on run '${shownId(runId)}': no such run`);
    }
    const caller: Caller = { owner: status.owner };
    const request = queuedRequest(status, input);
    let prepared: PreparedRun;
    try {
      prepared = await this.#prepare(request, caller, { queued: status });
    } catch (error) {
      // What was valid when queued may not be now (a script_dir removed, a resumed run gone):
      // the run fails with the reason instead of staying queued forever.
      const e = toSvcError(error);
      const parsed = WorkflowRunRequestSchema.safeParse(request);
      prepared = {
        status,
        // The run fails before its script is read: any valid request serves the context.
        request: parsed.success ? parsed.data : WorkflowRunRequestSchema.parse({ script: "null" }),
        body: "",
        warnings: [],
        scriptDir: undefined,
        replay: undefined,
        budget: new BudgetGate({ tokens: request.budget_tokens, usd: request.budget_usd }),
        refused: { code: e.code === "internal" ? "invalid_request" : e.code, message: e.message },
      };
    }
    return this.#launch(prepared, release);
  }

  /**
   * Checks a request and builds the run's first status (`queued`), or uses `queued`'s.
   * `checked` hears of the request once it and its script passed the checks that need no I/O.
   */
  async #prepare(
    input: unknown,
    caller: Caller,
    options: { queued?: RunStatus; checked?: (request: WorkflowRunRequest) => void },
  ): Promise<PreparedRun> {
    const { queued } = options;
    const parsed = WorkflowRunRequestSchema.safeParse(input);
    if (!parsed.success) {
      throw new SvcError("invalid_request", `Cannot start the run: ${describeIssue(parsed.error)}`);
    }
    // A remote caller's paths are checked (and made real) before anything reads them; a
    // queued run's were checked when it was queued.
    const request = queued ? parsed.data : await this.#placed(parsed.data, caller);
    const owner = caller.owner;
    const filename = request.filename ?? "script.js";
    const checked = checkScript(request.script, { filename });
    options.checked?.(request);
    const scriptDir = request.script_dir === undefined
      ? undefined
      : await existingDir(request.script_dir);
    const meta = boundMeta(checked.meta);
    const replay = request.resume_from
      ? await this.#replaySource(request.resume_from, caller)
      : undefined;
    const budget = new BudgetGate({ tokens: request.budget_tokens, usd: request.budget_usd });
    const common = { request, body: checked.body, warnings: checked.warnings, scriptDir, replay };
    if (queued) return { ...common, status: queued, budget };
    const limits = {
      max_agents: request.max_agents ?? this.#options.maxAgents,
      concurrency: request.concurrency ?? this.#options.concurrency,
    };
    // With nothing configured, the fake is the only provider: calls "succeed" with fake
    // answers, which the user must hear about unless they asked for exactly that.
    const fakeProviderOnly = !request.fake_dispatch &&
      this.#options.dispatcher.providers().every((name) => name === "fake");
    const createdAt = now();
    const status: RunStatus = {
      run_id: newId("run"),
      state: "queued",
      owner,
      name: meta.name ?? null,
      meta,
      filename,
      isolation: request.isolation,
      sandbox_default: request.sandbox_default,
      sandbox_max: request.sandbox_max ?? request.sandbox_default,
      workdir: request.workdir ?? null,
      fake_dispatch: request.fake_dispatch,
      timeout: request.timeout,
      resumed_from: request.resume_from ?? null,
      created_at: createdAt,
      started_at: null,
      ended_at: null,
      narration: [],
      narration_dropped: 0,
      conditions: [],
      conditions_dropped: 0,
      security_events: [],
      security_events_dropped: 0,
      script_errors: [],
      script_errors_dropped: 0,
      failures: {},
      fake_provider_only: fakeProviderOnly,
      limits,
      budget: budget.figures(),
      calls: { total: 0, queued: 0, running: 0, succeeded: 0, failed: 0, replayed: 0, skipped: 0 },
      journal: {
        calls: 0,
        replayed: 0,
        live: 0,
        failed: 0,
        skipped: 0,
        omitted: 0,
        usage: { input_tokens: 0, output_tokens: 0, cost_usd: 0 },
      },
    };
    return { ...common, status, budget };
  }

  /**
   * The request with the workdir the workspace policy gives `caller`: for a remote caller a
   * real path inside its roots, and a fresh scratch workdir when it named none. A resumed
   * run's scratch workdir is the caller's own and is accepted again.
   */
  async #placed(request: WorkflowRunRequest, caller: Caller): Promise<WorkflowRunRequest> {
    if (caller.remote !== true) return request;
    const policy = this.#options.workspace;
    const source = request.resume_from ? await this.get(request.resume_from, caller) : undefined;
    const inherited = source?.workdir ?? undefined;
    const workdir = await policy.workdirFor(caller, request.workdir, {
      what: "workdir",
      scratch: true,
      ...(inherited !== undefined ? { inherited } : {}),
    });
    // `script_dir` is no field of the API's body: only the host sets it (the command line, a
    // saved workflow of A2A or the daemon), so it is the host's choice, not the caller's.
    return workdir === undefined ? request : { ...request, workdir };
  }

  /** Records a prepared run: running on `host`, or queued for a worker when `host` is null. */
  async #record(prepared: PreparedRun, host: HostRef | null): Promise<void> {
    const { status, request } = prepared;
    await this.#ledger.createRun(status, {
      input: {
        script: request.script,
        ...(request.args !== undefined ? { args: request.args } : {}),
        schema_attempts: request.schema_attempts,
        ...(request.script_dir !== undefined ? { script_dir: request.script_dir } : {}),
      },
      host,
      event: { type: "state", run_id: status.run_id, at: status.created_at, state: "queued" },
    });
  }

  /** Runs a recorded run in this process, holding `release` (its part of the host lease). */
  #launch(prepared: PreparedRun, release: () => void): RunStatus {
    const { status, budget, replay } = prepared;
    // A scratch workdir is recorded by role; the run works at its place on this host.
    const workdir = this.#options.workspace.placeOf(prepared.request.workdir);
    const request = workdir === undefined ? prepared.request : { ...prepared.request, workdir };
    this.#holds.set(status.run_id, release);
    this.#startCancelPoll();
    const run = new RunContext(status, request, {
      ledger: this.#ledger,
      concurrency: status.limits.concurrency,
      budget,
      replay,
      maxNarration: this.#options.maxNarration,
      maxNarrationBytes: this.#options.maxNarrationBytes,
      maxSecurityEvents: this.#options.maxSecurityEvents,
      maxJournalBytes: this.#options.maxJournalBytes,
      maxBlobBytes: this.#options.maxBlobBytes,
      maxRefusedCalls: this.#options.maxRefusedCalls,
    });
    this.#runs.set(status.run_id, run);
    const snapshot = structuredClone(status);
    run.done = prepared.refused
      ? this.#finish(run, "failed", { error: prepared.refused })
      : this.#execute(run, {
        body: prepared.body,
        warnings: prepared.warnings,
        scriptDir: prepared.scriptDir,
      });
    return snapshot;
  }

  /**
   * Starts a new run that replays a finished one: the source's script, filename, args,
   * isolation, sandbox levels, workdir, timeout, fake dispatch, budgets, limits and schema
   * attempts, with `resume_from` the source. `options` (checked by
   * `WorkflowResumeRequestSchema`) may change `fake_dispatch`, `timeout` and the budgets. Another
   * owner's run is `not_found`; a run still queued or running is a `conflict`.
   */
  async resume(runId: string, caller: Caller, options: unknown = {}): Promise<RunStatus> {
    const parsed = WorkflowResumeRequestSchema.safeParse(options ?? {});
    if (!parsed.success) {
      throw new SvcError(
        "invalid_request",
        `Cannot resume run '${shownId(runId)}': ${describeIssue(parsed.error)}`,
      );
    }
    const source = await this.#visible(runId, caller, "resume");
    const input = await this.#ledger.getRunInput(runId);
    if (!input) {
      throw new SvcError("not_found", `Cannot resume run '${shownId(runId)}': no such run`);
    }
    // start() refuses a source still running, as for any resume_from.
    return await this.start(replayRequest(source, input, parsed.data), caller);
  }

  /**
   * What a run was started with: its filename, script and args (when it got any); not_found
   * for an unknown id or a run the caller may not see.
   */
  async input(
    runId: string,
    caller: Caller,
  ): Promise<{ run_id: string; filename: string; script: string; args?: JsonValue }> {
    const status = await this.#visible(runId, caller, "read the script of");
    const input = await this.#ledger.getRunInput(runId);
    if (!input) {
      throw new SvcError(
        "not_found",
        `Cannot read the script of run '${shownId(runId)}': no such run`,
      );
    }
    return {
      run_id: runId,
      filename: status.filename,
      script: input.script,
      ...(input.args !== undefined ? { args: input.args } : {}),
    };
  }

  async #replaySource(runId: string, caller: Caller): Promise<ReplaySource> {
    const source = await this.get(runId, caller);
    if (!source) {
      throw new SvcError("not_found", `Cannot resume from run '${runId}': no such run`);
    }
    refuseUnended(source);
    return new ReplaySource(runId, await this.#replayChain(source, 0));
  }

  /**
   * What a resume of `status`'s run may replay: its journal, over what its own source offered
   * it (a run killed mid-replay may not have recorded every call it replayed).
   */
  async #replayChain(status: RunStatus, depth: number): Promise<ReplayCandidate[]> {
    const entries = await this.#ledger.getJournal(status.run_id);
    const from = status.resumed_from;
    const older = from && depth < REPLAY_CHAIN_DEPTH
      ? await this.#ledger.getRun(from).then((s) => s ? this.#replayChain(s, depth + 1) : [])
      : [];
    return mergeReplay(status.run_id, entries, older);
  }

  /**
   * The run's status, wherever it runs; undefined for an unknown id and for a run the caller
   * may not see alike.
   */
  async get(runId: string, caller: Caller): Promise<RunStatus | undefined> {
    if (!isId("run", runId)) return undefined;
    const live = this.#runs.get(runId);
    const status = live ? structuredClone(live.status) : await this.#ledger.getRun(runId);
    if (!status || !mayAccess(caller, status.owner)) return undefined;
    return await this.#withPosition(status);
  }

  async #visible(runId: string, caller: Caller, action: string): Promise<RunStatus> {
    const status = await this.get(runId, caller);
    if (!status) {
      throw new SvcError("not_found", `Cannot ${action} run '${shownId(runId)}': no such run`);
    }
    return status;
  }

  /** The run's journal, in call order; not_found for an unknown id or a run the caller may not see. */
  async journal(runId: string, caller: Caller): Promise<JournalEntry[]> {
    const live = this.#runs.get(runId);
    if (live) await live.writes;
    await this.#visible(runId, caller, "read the journal of");
    return await this.#ledger.getJournal(runId);
  }

  /**
   * Statuses of the caller's recent runs (everyone's for an administrator), newest first,
   * without narration. `before` (a run id, e.g. the last of the page before) pages: only
   * older runs; anything but a run id is refused with `invalid_request`.
   */
  list(
    caller: Caller,
    options: { states?: readonly RunState[]; limit?: number; before?: string } = {},
  ): Promise<RunStatus[]> {
    const owner = ownerScope(caller);
    return this.#ledger.listRuns({
      ...(owner !== undefined ? { owner } : {}),
      ...(options.states !== undefined ? { states: options.states } : {}),
      ...(options.limit !== undefined ? { limit: options.limit } : {}),
      ...(options.before !== undefined ? { before: options.before } : {}),
    });
  }

  /**
   * The run's event feed: replays from `after`, then follows live events, wherever the run
   * executes, until its last event (a terminal state) or `signal`. While it waits it also
   * recovers runs of dead hosts, so that following a run whose host died ends.
   */
  async *events(
    runId: string,
    caller: Caller,
    options: RunEventsOptions = {},
  ): AsyncGenerator<FeedItem<RunEvent>> {
    await this.#visible(runId, caller, "follow");
    const feed = followEvents(this.#ledger, { kind: "run", id: runId }, {
      ...options,
      onIdle: async () => {
        await this.recover();
      },
    });
    for await (const item of feed) yield item as FeedItem<RunEvent>;
  }

  /**
   * Resolves with the final status once the run has ended, wherever it runs (a run of a host
   * that died: once recovery marks it interrupted).
   */
  async wait(
    runId: string,
    caller: Caller,
    options: { signal?: AbortSignal } = {},
  ): Promise<RunStatus> {
    const run = this.#runs.get(runId);
    if (run && mayAccess(caller, run.status.owner)) {
      return structuredClone(await run.done);
    }
    const status = await this.#visible(runId, caller, "wait for");
    if (TERMINAL_STATES.has(status.state)) return status;
    for await (const _item of this.events(runId, caller, options)) {
      // Only the end matters here.
    }
    if (options.signal?.aborted) {
      throw new SvcError("unavailable", `Cannot wait for run '${runId}': the wait was stopped`);
    }
    return await this.#visible(runId, caller, "wait for");
  }

  /**
   * Asks a run to stop, wherever it runs: it ends `cancelled` (its guest and calls are
   * killed by its host). Idempotent: a run that has ended is left as it is. Returns the run's
   * status at the time of asking; {@linkcode wait} gives the end.
   */
  async cancel(runId: string, caller: Caller): Promise<RunStatus> {
    const status = await this.#visible(runId, caller, "cancel");
    if (TERMINAL_STATES.has(status.state)) return status;
    const run = this.#runs.get(runId);
    if (run) {
      run.controller.abort(new RunStop("cancelled", "the run was cancelled"));
      return structuredClone(run.status);
    }
    await this.#ledger.requestRunCancel(runId);
    if (status.state === "queued") {
      // Queued and unclaimed: claim it here and end it at once, since no worker may be about.
      await this.#work(runId, { force: true }).catch(() => undefined);
      const claimed = this.#runs.get(runId);
      if (claimed) {
        claimed.controller.abort(
          new RunStop("cancelled", "the run was cancelled before it started"),
        );
        return structuredClone(await claimed.done);
      }
    }
    return (await this.get(runId, caller)) ?? status;
  }

  /** Cancels every run that has not ended, waits for all of them, and says goodbye to the ledger. */
  async close(): Promise<void> {
    this.#closing = true;
    for (const run of this.#runs.values()) {
      if (!TERMINAL_STATES.has(run.status.state)) {
        run.controller.abort(new RunStop("cancelled", "the host is shutting down"));
      }
    }
    await Promise.all([...this.#runs.values()].map((run) => run.done.catch(() => {})));
    this.#closed.abort();
    await Promise.all(this.#endings);
    this.#stopCancelPoll();
    await this.#prestarted[Symbol.asyncDispose]();
    await Promise.all(this.#teardowns);
    if (this.#ownsHost) await this.#host.close();
  }

  /** Looks for cancels asked for by other processes, while this host has runs. */
  #startCancelPoll(): void {
    if (this.#cancelPoll !== undefined) return;
    this.#cancelPoll = setInterval(async () => {
      const live = [...this.#runs.values()].filter((run) =>
        !TERMINAL_STATES.has(run.status.state) && !run.controller.signal.aborted
      );
      if (live.length === 0) return this.#stopCancelPoll();
      const asked = await this.#ledger.runCancelsRequested(live.map((run) => run.runId))
        .catch(() => []);
      for (const runId of asked) {
        this.#runs.get(runId)?.controller.abort(new RunStop("cancelled", "the run was cancelled"));
      }
    }, this.#options.cancelPollMs);
  }

  #stopCancelPoll(): void {
    if (this.#cancelPoll !== undefined) clearInterval(this.#cancelPoll);
    this.#cancelPoll = undefined;
  }

  async #execute(
    run: RunContext,
    script: { body: string; warnings: string[]; scriptDir: string | undefined },
  ): Promise<RunStatus> {
    const { body, warnings } = script;
    // Start on a later task, so that whoever awaited start() can subscribe before anything happens.
    await new Promise((resolve) => setTimeout(resolve, 0));
    for (const text of warnings) run.narrate({ kind: "warning", text });
    const { status, controller, request } = run;
    if (controller.signal.aborted) {
      return await this.#finishFromOutcome(run, {
        kind: "aborted",
        reason: controller.signal.reason,
      });
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
    const projectDir = request.workdir ?? this.#options.projectDir;
    const schemas = schemaRegistryFor({ projectDir, home: this.#ledger.home });
    const agentTypes = new AgentTypeRegistry(
      agentFolders({ projectDir, userHome: this.#options.userHome }),
    );
    let outcome: GuestOutcome;
    try {
      outcome = await runGuest({
        backend: this.#options.isolation[request.isolation],
        scratchRoot: this.#scratchRoot,
        body,
        filename: status.filename,
        args: { given: request.args !== undefined, value: request.args as JsonValue },
        budget: { total: status.budget.total, unit: status.budget.unit },
        heapMb: this.#options.heapMb,
        // A little past the wall-clock timeout, so that the host's own timeout normally wins.
        seed: GUEST_SEED,
        cpuSeconds: request.timeout + GUEST_CPU_GRACE_S,
        frameLimit: this.#options.frameLimit,
        nonce: this.#options.nonce,
        signal: controller.signal,
        teardowns: this.#teardowns,
        ...(run.replay
          ? { replay: run.replay.offer(REPLAY_OFFER), maxAgents: status.limits.max_agents }
          : {}),
        handlers: {
          replayed: (params) => recordReplayedCalls(run, params),
          agent: (params, signal) => {
            const reply = handleAgentCall(
              run,
              {
                dispatcher: this.#options.dispatcher,
                sessions: this.#options.sessions,
                schemas,
                agentTypes,
                maxAgents: status.limits.max_agents,
                approvals: { ledger: this.#ledger, pollMs: this.#options.cancelPollMs },
              },
              params,
              signal,
            );
            run.inflight.add(reply);
            reply.finally(() => run.inflight.delete(reply)).catch(() => {});
            return reply;
          },
          workflow: (params) =>
            this.#workflow(run, { projectDir, scriptDir: script.scriptDir }, params),
          phase: (title) => run.narrate({ kind: "phase", text: title }),
          log: (message) => run.narrate({ kind: "log", text: message }),
          itemError: (report) => run.itemError(report),
          output: (text, stream) => run.narrate({ kind: "output", text, stream }),
          security: (kind, detail) => run.security(kind, detail),
          spawned: (_pid, sandbox) => {
            if (sandbox) run.guestStarted(sandbox);
          },
          queued: (message) => run.narrate({ kind: "warning", text: message }),
        },
      });
    } catch (error) {
      // The guest never started (no backend, no binary): the run fails closed, nothing ran.
      const e = toSvcError(error);
      const code = e.code === "internal" ? "guest_failed" : e.code;
      const message = e.code === "internal"
        ? "Cannot start the script: the guest process could not be spawned"
        : e.message;
      clearTimeout(timer);
      return await this.#finish(run, "failed", { error: { code, message } });
    }
    clearTimeout(timer);
    return await this.#finishFromOutcome(run, outcome);
  }

  #finishFromOutcome(run: RunContext, outcome: GuestOutcome): Promise<RunStatus> {
    switch (outcome.kind) {
      case "returned":
        return this.#finish(run, "succeeded", { result: outcome.value });
      case "threw":
        return this.#finish(run, "failed", {
          error: scriptRunError(outcome.error),
        });
      case "crashed":
        return this.#finish(run, "failed", {
          error: {
            code: outcome.outOfMemory ? "out_of_memory" : "guest_crashed",
            message: outcome.message,
          },
        });
      case "aborted": {
        const stop = outcome.reason instanceof RunStop
          ? outcome.reason
          : new RunStop("cancelled", "the run was stopped");
        return this.#finish(run, stop.state, {
          error: { code: stop.code, message: stop.message },
        });
      }
    }
  }

  async #finish(
    run: RunContext,
    state: RunState,
    end: { result?: JsonValue; error?: RunError },
  ): Promise<RunStatus> {
    const { status } = run;
    if (!TERMINAL_STATES.has(status.state)) {
      // Calls still in flight were aborted with the guest; they settle first, so that their
      // journal entries land before the final status.
      await Promise.allSettled([...run.inflight]);
      status.ended_at = now();
      if (end.result !== undefined) status.result = end.result;
      if (end.error !== undefined) status.error = boundError(end.error);
      status.calls.queued = 0;
      status.calls.running = 0;
      status.budget = run.budget.figures();
      run.flushCounts();
      run.setState(state, status.ended_at);
    }
    await run.writes;
    if (run.writeError !== undefined) {
      // The ledger refused a write: what it holds ends at its last commit. The run ends
      // `interrupted` (resumable) here at once, and in the ledger as soon as it takes writes.
      const cause = run.writeError;
      status.state = "interrupted";
      delete status.result;
      // Counted as the ledger has them: calls whose entries were lost are not the run's.
      const committed = run.committed;
      if (committed) {
        status.journal = structuredClone(committed.journal);
        status.calls = { ...committed.calls, queued: 0, running: 0 };
        status.budget = structuredClone(committed.budget);
      }
      status.error = {
        code: "ledger_unavailable",
        message: `${
          cause instanceof SvcError ? cause.message : "Cannot write the ledger: the write failed"
        }; the journal up to the failure is kept: resume the run with resume_from`,
      };
      this.#endUnwritten(run);
      return status;
    }
    this.#forget(status.run_id);
    return status;
  }

  /** Drops an ended run that the ledger holds: a long-lived host must not keep every run. */
  #forget(runId: string): void {
    this.#holds.get(runId)?.();
    this.#holds.delete(runId);
    this.#runs.delete(runId);
    // Its guest is gone: its live slot goes to the next queued run.
    this.#admission.release(runId);
    this.#pump();
  }

  /**
   * Writes the end of a run whose writes failed, again and again (backing off up to
   * {@linkcode UNWRITTEN_RETRY_MAX_MS}) until the ledger takes it or the host closes. Until then
   * the host answers for the run from memory, so that no reader sees it `running`; a host that
   * dies meanwhile leaves it to the next host's recovery.
   */
  #endUnwritten(run: RunContext): void {
    const { run_id: runId, error } = run.status;
    const closed = this.#closed.signal;
    const attempt = async (delay: number): Promise<void> => {
      if (closed.aborted) return;
      try {
        await this.#ledger.interruptRun(
          runId,
          error ?? { code: "ledger_unavailable", message: "" },
        );
        this.#forget(runId);
      } catch {
        await abortableSleep(delay, closed).catch(() => {});
        return attempt(Math.min(delay * 2, UNWRITTEN_RETRY_MAX_MS));
      }
    };
    const ending = attempt(UNWRITTEN_RETRY_MIN_MS);
    this.#endings.add(ending);
    ending.finally(() => this.#endings.delete(ending)).catch(() => {});
  }

  async #workflow(
    run: RunContext,
    places: { projectDir: string; scriptDir: string | undefined },
    params: unknown,
  ): Promise<WorkflowReply> {
    const given = params !== null && typeof params === "object"
      ? params as { ref?: unknown; scriptPath?: unknown }
      : {};
    const ref = typeof given.ref === "string" && given.ref !== ""
      ? given.ref
      : typeof given.scriptPath === "string" && given.scriptPath !== ""
      ? { scriptPath: given.scriptPath }
      : undefined;
    if (ref === undefined) {
      throw new ScriptCallError(
        "TypeError",
        "workflow(): the name or ref must be a non-empty string, or {scriptPath}",
      );
    }
    try {
      const resolved = await resolveWorkflow(ref, {
        projectDir: places.projectDir,
        home: this.#ledger.home,
        ...(this.#options.userHome !== undefined ? { userHome: this.#options.userHome } : {}),
        ...(places.scriptDir !== undefined ? { scriptDir: places.scriptDir } : {}),
      });
      for (const text of resolved.warnings) run.narrate({ kind: "warning", text });
      return { body: resolved.body, filename: resolved.filename };
    } catch (error) {
      if (error instanceof SvcError) throw new ScriptCallError("Error", error.message);
      throw error;
    }
  }
}

/**
 * The request that runs `source` again from its recorded input, resuming from it, with what
 * `changes` names changed. Limits out of a request's range (only a host's own defaults can be)
 * are left to that default again.
 */
function replayRequest(
  source: RunStatus,
  input: RunInput,
  changes: WorkflowResumeRequest,
): Omit<WorkflowRunRequest, "schema_attempts"> & { schema_attempts?: number } {
  const { limits, budget } = source;
  const budgetTokens = changes.budget_tokens ?? budget.tokens.cap ?? undefined;
  const budgetUsd = changes.budget_usd ?? budget.usd.cap ?? undefined;
  return {
    script: input.script,
    filename: source.filename,
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
function queuedRequest(
  status: RunStatus,
  input: RunInput,
): ReturnType<typeof replayRequest> {
  const { resume_from: _self, ...request } = replayRequest(status, input, {});
  return { ...request, ...(status.resumed_from ? { resume_from: status.resumed_from } : {}) };
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

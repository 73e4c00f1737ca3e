import {
  agentFolders,
  AgentTypeRegistry,
  type Dispatcher,
  SchemaRegistry,
  SessionStore,
} from "../dispatch/mod.ts";
import { SvcError, toSvcError } from "../errors/mod.ts";
import { defaultIsolationBackends, type IsolationBackends } from "../isolation/mod.ts";
import { withDefaults } from "../options/mod.ts";
import {
  HEARTBEAT_MS,
  type HostRef,
  type JournalEntry,
  type Ledger,
  newId,
  type RunError,
  type RunState,
  type RunStatus,
  TERMINAL_STATES,
} from "../ledger/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import { describeIssue, type JsonValue, WorkflowRunRequestSchema } from "../schemas/mod.ts";
import { sweepScratch } from "../scratch/mod.ts";
import { handleAgentCall } from "./agent_call.ts";
import { BudgetGate } from "./budget.ts";
import {
  type GuestOutcome,
  runGuest,
  ScriptCallError,
  type WorkflowReply,
} from "./guest_session.ts";
import { ReplaySource } from "./journal.ts";
import { now, RunContext, type RunListener } from "./run_context.ts";
import { checkScript } from "./script_check.ts";
import { boundError, boundMeta } from "./record_bounds.ts";
import { scriptRunError } from "./script_error.ts";
import { RunStop } from "./run_stop.ts";
import { resolveWorkflow } from "./sub_workflow.ts";

/** Options of {@linkcode RunManager.create}. */
export interface RunManagerOptions {
  dispatcher: Dispatcher;
  ledger: Ledger;
  /** Where `agent(..., {session})` conversations live. Default: a store over `ledger`. */
  sessions?: SessionStore;
  /** The project: its `schemas/` and `workflows/` folders come before those of `SVC_HOME`. Default: the current directory. */
  projectDir?: string;
  /** The user's home, whose `.claude/agents/` and `.claude/workflows/` come after the project's. Default: `HOME`. */
  userHome?: string;
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
}

/** Options of {@linkcode RunManager.start}. */
export interface StartOptions {
  /** The owner the run is recorded under; the dashboard takes it from the token. */
  owner?: string;
}

/**
 * Starts workflow runs, keeps their state in the ledger, and tells subscribers what happens.
 * Every run is a guest process driven by {@linkcode runGuest}; every `agent()` call it makes
 * passes the agent limit, resume matching, the run's concurrency cap and budget gate, then
 * goes through the dispatcher and into the journal.
 */
export class RunManager {
  readonly #options:
    & Required<Omit<RunManagerOptions, "nonce" | "projectDir" | "sessions" | "userHome">>
    & {
      sessions: SessionStore;
      nonce?: () => string;
      projectDir: string;
      userHome?: string;
    };
  readonly #runs = new Map<string, RunContext>();
  readonly #host: HostRef;
  readonly #startedAt = now();
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #recovered: readonly string[] = [];

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
        projectDir: platform().cwd(),
        userHome: platform().homeDir(),
      }, options),
      sessions: options.sessions ?? new SessionStore(options.ledger),
    };
    this.#host = { id: newId("host"), pid: platform().pid() };
  }

  /**
   * Creates the manager over an open ledger. Runs left `queued` or `running` by a host that
   * has died are marked `interrupted` first, and the scratch directories of dead hosts are
   * removed.
   */
  static async create(options: RunManagerOptions): Promise<RunManager> {
    const manager = new RunManager(options);
    manager.#recovered = await options.ledger.recoverInterrupted(manager.#host);
    await sweepScratch(manager.#scratchRoot);
    return manager;
  }

  /** Runs this manager found left `running` by a host that died, and marked `interrupted`. */
  get recovered(): readonly string[] {
    return this.#recovered;
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
   * first status (`queued`) at once. Bad input throws an SvcError before any process starts.
   */
  async start(input: unknown, options: StartOptions = {}): Promise<RunStatus> {
    const parsed = WorkflowRunRequestSchema.safeParse(input);
    if (!parsed.success) {
      throw new SvcError("invalid_request", `Cannot start the run: ${describeIssue(parsed.error)}`);
    }
    const request = parsed.data;
    const owner = options.owner ?? "local";
    const filename = request.filename ?? "script.js";
    const checked = checkScript(request.script, { filename });
    const scriptDir = request.script_dir === undefined
      ? undefined
      : await existingDir(request.script_dir);
    const meta = boundMeta(checked.meta);
    const replay = request.resume_from
      ? await this.#replaySource(request.resume_from, owner)
      : undefined;
    const budget = new BudgetGate({ tokens: request.budget_tokens, usd: request.budget_usd });
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
    await this.#startHeartbeat();
    await this.#ledger.createRun(status, {
      script: request.script,
      host: this.#host,
      event: { type: "state", run_id: status.run_id, at: createdAt, state: "queued" },
    });
    const run = new RunContext(status, request, {
      ledger: this.#ledger,
      concurrency: limits.concurrency,
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
    run.done = this.#execute(run, { body: checked.body, warnings: checked.warnings, scriptDir });
    return snapshot;
  }

  async #replaySource(runId: string, owner: string): Promise<ReplaySource> {
    const source = await this.#ledger.getRun(runId);
    if (!source || source.owner !== owner) {
      throw new SvcError("not_found", `Cannot resume from run '${runId}': no such run`);
    }
    const live = this.#runs.get(runId);
    if (!TERMINAL_STATES.has(live?.status.state ?? source.state)) {
      throw new SvcError(
        "conflict",
        `Cannot resume from run '${runId}': it is still ${source.state}`,
      );
    }
    return new ReplaySource(runId, await this.#ledger.getJournal(runId));
  }

  /** The run's status; undefined for an unknown id or a run of another owner. */
  async get(runId: string, options: { owner?: string } = {}): Promise<RunStatus | undefined> {
    const live = this.#runs.get(runId);
    const status = live ? structuredClone(live.status) : await this.#ledger.getRun(runId);
    if (!status || (options.owner !== undefined && status.owner !== options.owner)) {
      return undefined;
    }
    return status;
  }

  /** The run's journal, in call order; throws not_found for an unknown id or another owner's run. */
  async journal(runId: string, options: { owner?: string } = {}): Promise<JournalEntry[]> {
    const live = this.#runs.get(runId);
    if (live) await live.writes;
    if (!(await this.get(runId, options))) {
      throw new SvcError("not_found", `Cannot read the journal of run '${runId}': no such run`);
    }
    return await this.#ledger.getJournal(runId);
  }

  /** Statuses of recent runs, newest first, without narration. */
  list(options: { owner?: string; limit?: number } = {}): Promise<RunStatus[]> {
    return this.#ledger.listRuns(options);
  }

  /** Resolves with the final status once the run has ended (a run of an earlier host: its status now). */
  async wait(runId: string): Promise<RunStatus> {
    const run = this.#runs.get(runId);
    if (run) {
      const status = await run.done;
      if (run.writeError !== undefined) {
        throw new SvcError("internal", `Cannot record run '${runId}' in the ledger`, {
          cause: run.writeError,
        });
      }
      return structuredClone(status);
    }
    const stored = await this.#ledger.getRun(runId);
    if (!stored) throw new SvcError("not_found", `Cannot wait for run '${runId}': no such run`);
    return stored;
  }

  /**
   * Asks a run to stop: its guest is killed and it ends `cancelled`. Returns false when the
   * run had already ended; asking twice is harmless.
   */
  cancel(runId: string, options: { owner?: string } = {}): boolean {
    const run = this.#runs.get(runId);
    if (!run || (options.owner !== undefined && run.status.owner !== options.owner)) {
      throw new SvcError("not_found", `Cannot cancel run '${runId}': no such run on this host`);
    }
    if (TERMINAL_STATES.has(run.status.state)) return false;
    run.controller.abort(new RunStop("cancelled", "the run was cancelled"));
    return true;
  }

  /** Calls `listener` with every later event of a run of this host. Returns the unsubscribe function. */
  subscribe(runId: string, listener: RunListener): () => void {
    const run = this.#runs.get(runId);
    if (!run) {
      throw new SvcError("not_found", `Cannot follow run '${runId}': no such run on this host`);
    }
    return run.subscribe(listener);
  }

  /** Cancels every run that has not ended, waits for all of them, and says goodbye to the ledger. */
  async close(): Promise<void> {
    for (const run of this.#runs.values()) {
      if (!TERMINAL_STATES.has(run.status.state)) {
        run.controller.abort(new RunStop("cancelled", "the host is shutting down"));
      }
    }
    await Promise.all([...this.#runs.values()].map((run) => run.done.catch(() => {})));
    this.#stopHeartbeat();
    await this.#ledger.removeHost(this.#host).catch(() => {});
  }

  async #startHeartbeat(): Promise<void> {
    if (this.#heartbeat !== undefined) return;
    await this.#ledger.heartbeat(this.#host, this.#startedAt);
    this.#heartbeat = setInterval(() => {
      this.#ledger.heartbeat(this.#host, this.#startedAt).catch(() => {});
    }, HEARTBEAT_MS);
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
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
    run.setState("running");
    const projectDir = request.workdir ?? this.#options.projectDir;
    const schemas = new SchemaRegistry([
      joinPath(projectDir, "schemas"),
      joinPath(this.#ledger.home, "schemas"),
    ]);
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
        cpuSeconds: request.timeout + 5,
        frameLimit: this.#options.frameLimit,
        nonce: this.#options.nonce,
        signal: controller.signal,
        handlers: {
          agent: (params, signal) => {
            const reply = handleAgentCall(
              run,
              {
                dispatcher: this.#options.dispatcher,
                sessions: this.#options.sessions,
                schemas,
                agentTypes,
                maxAgents: status.limits.max_agents,
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
      run.setState(state);
    }
    await run.writes;
    run.emit({
      type: "end",
      run_id: status.run_id,
      at: status.ended_at ?? now(),
      status: structuredClone(status),
    });
    if ([...this.#runs.values()].every((r) => r === run || TERMINAL_STATES.has(r.status.state))) {
      this.#stopHeartbeat();
    }
    return status;
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

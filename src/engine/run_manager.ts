import { Semaphore } from "../concurrency/mod.ts";
import type { Dispatcher, DispatchResult } from "../dispatch/mod.ts";
import { SvcError, toSvcError } from "../errors/mod.ts";
import { defaultIsolationBackends, type IsolationBackends } from "../isolation/mod.ts";
import {
  HEARTBEAT_MS,
  type HostRef,
  type JournalEntry,
  type Ledger,
  type LedgerOp,
  type NarrationEntry,
  type RunCondition,
  type RunError,
  type RunEvent,
  type RunState,
  type RunStatus,
  type StoredEvent,
  TERMINAL_STATES,
} from "../ledger/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import {
  type AgentCall,
  type JsonValue,
  parseAgentCall,
  type WorkflowRunRequest,
  WorkflowRunRequestSchema,
} from "../schemas/mod.ts";
import { BudgetGate } from "./budget.ts";
import {
  type AgentReply,
  type GuestOutcome,
  runGuest,
  ScriptCallError,
  type WorkflowReply,
} from "./guest_session.ts";
import { newId } from "./ids.ts";
import { callHash, ReplaySource } from "./journal.ts";
import { checkScript } from "./script_check.ts";
import { scriptRunError } from "./script_error.ts";
import {
  type CompiledSchema,
  SchemaError,
  SchemaRegistry,
  structuredValue,
} from "./structured_output.ts";
import { resolveWorkflow } from "./sub_workflow.ts";

/** Options of {@linkcode RunManager.create}. */
export interface RunManagerOptions {
  dispatcher: Dispatcher;
  ledger: Ledger;
  /** The project: its `schemas/` and `workflows/` folders come before those of `SVC_HOME`. Default: the current directory. */
  projectDir?: string;
  isolation?: IsolationBackends;
  /** Simultaneous `agent()` calls of one run; more queue. Default 8. */
  concurrency?: number;
  /** `agent()` calls one run may make; later ones return null. Default 200. */
  maxAgents?: number;
  /** V8 heap cap of each guest in MiB. Default 512. */
  heapMb?: number;
  /** Largest frame a guest may send, in bytes. Default 4 MiB. */
  frameLimit?: number;
  /** Most narration entries kept per run; later ones are counted, not kept. Default 5000. */
  maxNarration?: number;
  /** Most security events kept per run. Default 200. */
  maxSecurityEvents?: number;
  /** Source of bridge nonces (tests pass a known one to prove it never leaks). */
  nonce?: () => string;
}

/** Options of {@linkcode RunManager.start}. */
export interface StartOptions {
  /** The owner the run is recorded under; the dashboard takes it from the token. */
  owner?: string;
}

type Listener = (event: RunEvent) => void;

interface LiveRun {
  status: RunStatus;
  request: WorkflowRunRequest;
  controller: AbortController;
  listeners: Set<Listener>;
  done: Promise<RunStatus>;
  semaphore: Semaphore;
  budget: BudgetGate;
  replay: ReplaySource | undefined;
  /** Calls pass this chain one at a time, in arrival order, to get their sequence number and replay decision. */
  order: Promise<unknown>;
  /** Calls not yet journaled: a run ends only after they have. */
  inflight: Set<Promise<AgentReply>>;
  /** Ledger writes not yet committed; a single writer drains them in batches. */
  pending: LedgerOp[];
  flushing: boolean;
  /** Settles when every write queued so far is committed. */
  writes: Promise<void>;
  writeError: unknown;
  seq: { narration: number; security: number; event: number; call: number };
  raised: Set<string>;
}

const TEXT_LIMIT = 8 * 1024;
const MAX_CONDITIONS = 50;

function now(): string {
  return new Date().toISOString();
}

/** A copy of the status for the ledger, without the lists it keeps under their own keys. */
function recordOf(status: RunStatus): RunStatus {
  return structuredClone({ ...status, narration: [], security_events: [] });
}

function clip(text: string): string {
  return text.length <= TEXT_LIMIT
    ? text
    : `${text.slice(0, TEXT_LIMIT)}… [${text.length - TEXT_LIMIT} more characters]`;
}

function formatIssue(
  error: { issues: Array<{ path: PropertyKey[]; message: string; code: string; keys?: string[] }> },
): string {
  const issue = error.issues[0];
  if (!issue) return "invalid request";
  if (issue.code === "unrecognized_keys" && issue.keys) {
    return `unknown field ${issue.keys.map((k) => `'${k}'`).join(", ")}`;
  }
  const field = issue.path.map(String).join(".");
  return field
    ? `'${field}' ${issue.message.charAt(0).toLowerCase()}${issue.message.slice(1)}`
    : issue.message;
}

/** The budget figures as plain JSON, for a condition's data. */
function budgetData(budget: BudgetGate): Record<string, JsonValue> {
  return JSON.parse(JSON.stringify(budget.figures()));
}

/** What the ordered step decided for one call. */
type Decision =
  | { kind: "limit"; seq: number; hash: string }
  | { kind: "replay"; seq: number; hash: string; entry: JournalEntry }
  | { kind: "live"; seq: number; hash: string; schema: CompiledSchema | undefined };

/**
 * Starts workflow runs, keeps their state in the ledger, and tells subscribers what happens.
 * Every run is a guest process driven by {@linkcode runGuest}; every `agent()` call it makes
 * passes the agent limit, resume matching, the run's concurrency cap and budget gate, then
 * goes through the dispatcher and into the journal.
 */
export class RunManager {
  readonly #options: Required<Omit<RunManagerOptions, "nonce" | "projectDir">> & {
    nonce?: () => string;
    projectDir: string;
  };
  readonly #runs = new Map<string, LiveRun>();
  readonly #host: HostRef;
  readonly #startedAt = now();
  #heartbeat: ReturnType<typeof setInterval> | undefined;

  private constructor(options: RunManagerOptions) {
    this.#options = {
      isolation: defaultIsolationBackends(),
      concurrency: 8,
      maxAgents: 200,
      heapMb: 512,
      frameLimit: 4 * 1024 * 1024,
      maxNarration: 5000,
      maxSecurityEvents: 200,
      projectDir: platform().cwd(),
      ...options,
    };
    this.#host = { id: newId("host"), pid: platform().pid() };
  }

  /**
   * Creates the manager over an open ledger. Runs left `queued` or `running` by a host that
   * has died are marked `interrupted` first.
   */
  static async create(options: RunManagerOptions): Promise<RunManager> {
    const manager = new RunManager(options);
    await options.ledger.recoverInterrupted(manager.#host);
    return manager;
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
      throw new SvcError("invalid_request", `Cannot start the run: ${formatIssue(parsed.error)}`);
    }
    const request = parsed.data;
    const owner = options.owner ?? "local";
    const filename = request.filename ?? "script.js";
    const checked = checkScript(request.script, { filename });
    const replay = request.resume_from
      ? await this.#replaySource(request.resume_from, owner)
      : undefined;
    const budget = new BudgetGate({ tokens: request.budget_tokens, usd: request.budget_usd });
    const createdAt = now();
    const status: RunStatus = {
      run_id: newId("run"),
      state: "queued",
      owner,
      name: checked.meta.name ?? null,
      meta: checked.meta,
      filename,
      isolation: request.isolation,
      sandbox_default: request.sandbox_default,
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
      security_events: [],
      security_events_dropped: 0,
      budget: budget.figures(),
      calls: { total: 0, queued: 0, running: 0, succeeded: 0, failed: 0, replayed: 0, skipped: 0 },
      journal: {
        calls: 0,
        replayed: 0,
        live: 0,
        failed: 0,
        skipped: 0,
        usage: { input_tokens: 0, output_tokens: 0, cost_usd: 0 },
      },
    };
    await this.#startHeartbeat();
    await this.#ledger.createRun(status, {
      script: request.script,
      host: this.#host,
      event: { type: "state", run_id: status.run_id, at: createdAt, state: "queued" },
    });
    const run: LiveRun = {
      status,
      request,
      controller: new AbortController(),
      listeners: new Set(),
      done: Promise.resolve(status),
      semaphore: new Semaphore(this.#options.concurrency),
      budget,
      replay,
      order: Promise.resolve(),
      inflight: new Set(),
      pending: [],
      flushing: false,
      writes: Promise.resolve(),
      writeError: undefined,
      seq: { narration: 0, security: 0, event: 1, call: 0 },
      raised: new Set(),
    };
    this.#runs.set(status.run_id, run);
    const snapshot = structuredClone(status);
    run.done = this.#execute(run, checked.body);
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
  subscribe(runId: string, listener: Listener): () => void {
    const run = this.#runs.get(runId);
    if (!run) {
      throw new SvcError("not_found", `Cannot follow run '${runId}': no such run on this host`);
    }
    run.listeners.add(listener);
    return () => run.listeners.delete(listener);
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

  /**
   * Queues a ledger write. A burst of writes (a wave of calls finishing) commits as one batch.
   * Resolves once the write is committed (or has failed, which `wait()` reports).
   */
  #persist(run: LiveRun, op: LedgerOp): Promise<void> {
    run.pending.push(op);
    if (run.flushing) return run.writes;
    run.flushing = true;
    run.writes = run.writes.then(async () => {
      // Let the rest of the burst join this batch.
      await new Promise((resolve) => setTimeout(resolve, 0));
      while (run.pending.length > 0) {
        const ops = run.pending.splice(0);
        try {
          await this.#ledger.write(run.status.run_id, ops);
        } catch (error) {
          run.writeError ??= error;
        }
      }
      run.flushing = false;
    });
    return run.writes;
  }

  #emit(run: LiveRun, event: RunEvent): void {
    for (const listener of run.listeners) {
      try {
        listener(event);
      } catch {
        // A broken subscriber must not break the run.
      }
    }
  }

  #saveWithEvent(run: LiveRun, event: StoredEvent): void {
    const snapshot = recordOf(run.status);
    const seq = run.seq.event++;
    this.#persist(run, { kind: "status", status: snapshot, event: { seq, event } });
    this.#emit(run, event);
  }

  #setState(run: LiveRun, state: RunState): void {
    run.status.state = state;
    this.#saveWithEvent(run, { type: "state", run_id: run.status.run_id, at: now(), state });
  }

  #narrate(run: LiveRun, entry: Omit<NarrationEntry, "at">): void {
    const full: NarrationEntry = { at: now(), ...entry, text: clip(entry.text) };
    if (run.status.narration.length < this.#options.maxNarration) {
      run.status.narration.push(full);
      const seq = run.seq.narration++;
      this.#persist(run, { kind: "narration", seq, entry: full });
    } else run.status.narration_dropped++;
    this.#emit(run, { type: "narration", run_id: run.status.run_id, at: full.at, entry: full });
  }

  #raise(run: LiveRun, condition: Omit<RunCondition, "at">, options: { once: boolean }): void {
    if (options.once && run.raised.has(condition.type)) return;
    run.raised.add(condition.type);
    if (run.status.conditions.length >= MAX_CONDITIONS) return;
    const full: RunCondition = { at: now(), ...condition };
    run.status.conditions.push(full);
    this.#saveWithEvent(run, {
      type: "condition",
      run_id: run.status.run_id,
      at: full.at,
      condition: full,
    });
  }

  #callsChanged(run: LiveRun): void {
    this.#emit(run, {
      type: "calls",
      run_id: run.status.run_id,
      at: now(),
      calls: { ...run.status.calls },
    });
  }

  async #execute(run: LiveRun, body: string): Promise<RunStatus> {
    // Start on a later task, so that whoever awaited start() can subscribe before anything happens.
    await new Promise((resolve) => setTimeout(resolve, 0));
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
    this.#setState(run, "running");
    const projectDir = request.workdir ?? this.#options.projectDir;
    const schemas = new SchemaRegistry([
      joinPath(projectDir, "schemas"),
      joinPath(this.#ledger.home, "schemas"),
    ]);
    let outcome: GuestOutcome;
    try {
      outcome = await runGuest({
        backend: this.#options.isolation[request.isolation],
        scratchRoot: joinPath(this.#ledger.home, "tmp"),
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
            const reply = this.#agent(run, schemas, params, signal);
            run.inflight.add(reply);
            reply.finally(() => run.inflight.delete(reply)).catch(() => {});
            return reply;
          },
          workflow: (params) => this.#workflow(projectDir, params),
          phase: (title) => this.#narrate(run, { kind: "phase", text: title }),
          log: (message) => this.#narrate(run, { kind: "log", text: message }),
          output: (text, stream) => this.#narrate(run, { kind: "output", text, stream }),
          security: (kind, detail) => {
            const event = { at: now(), kind, detail };
            if (status.security_events.length < this.#options.maxSecurityEvents) {
              status.security_events.push(event);
              const seq = run.seq.security++;
              this.#persist(run, { kind: "security", seq, event });
            } else status.security_events_dropped++;
            this.#emit(run, { type: "security", run_id: status.run_id, at: event.at, event });
          },
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

  #finishFromOutcome(run: LiveRun, outcome: GuestOutcome): Promise<RunStatus> {
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
          error: { code: stop.state, message: stop.message },
        });
      }
    }
  }

  async #finish(
    run: LiveRun,
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
      if (end.error !== undefined) status.error = end.error;
      status.calls.queued = 0;
      status.calls.running = 0;
      status.budget = run.budget.figures();
      this.#setState(run, state);
    }
    await run.writes;
    this.#emit(run, {
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

  async #workflow(projectDir: string, params: unknown): Promise<WorkflowReply> {
    const ref = params !== null && typeof params === "object"
      ? (params as { ref?: unknown }).ref
      : undefined;
    if (typeof ref !== "string" || ref === "") {
      throw new ScriptCallError(
        "TypeError",
        "workflow(): the name or ref must be a non-empty string",
      );
    }
    try {
      return await resolveWorkflow(ref, { projectDir, home: this.#ledger.home });
    } catch (error) {
      if (error instanceof SvcError) throw new ScriptCallError("Error", error.message);
      throw error;
    }
  }

  /** Takes the call's place in line: schema, sequence number, agent limit and replay, in arrival order. */
  #decide(run: LiveRun, schemas: SchemaRegistry, call: AgentCall): Promise<Decision> {
    const step = run.order.then(async (): Promise<Decision> => {
      const { options } = call;
      let schema: CompiledSchema | undefined;
      try {
        if (options.schema !== undefined) schema = schemas.compile(options.schema);
        else if (options.schema_id !== undefined) schema = await schemas.resolve(options.schema_id);
      } catch (error) {
        if (error instanceof SchemaError) throw new ScriptCallError("TypeError", error.message);
        throw error;
      }
      const seq = ++run.seq.call;
      run.status.calls.total++;
      const hash = await callHash(call.prompt, options);
      if (seq > this.#options.maxAgents) return { kind: "limit", seq, hash };
      const entry = run.replay?.match(seq, hash);
      return entry ? { kind: "replay", seq, hash, entry } : { kind: "live", seq, hash, schema };
    });
    run.order = step.catch(() => {});
    return step;
  }

  /** Journals a finished call; resolves once the entry is committed. */
  #journal(run: LiveRun, entry: JournalEntry): Promise<void> {
    const { journal } = run.status;
    journal.calls++;
    journal[entry.outcome]++;
    journal.usage.input_tokens += entry.usage.input_tokens;
    journal.usage.output_tokens += entry.usage.output_tokens;
    journal.usage.cost_usd = journal.usage.cost_usd === null || entry.cost_usd === null
      ? null
      : journal.usage.cost_usd + entry.cost_usd;
    run.status.budget = run.budget.figures();
    const snapshot = recordOf(run.status);
    const committed = this.#persist(run, { kind: "journal", status: snapshot, entry });
    this.#emit(run, {
      type: "call",
      run_id: run.status.run_id,
      at: entry.ended_at,
      seq: entry.seq,
      outcome: entry.outcome,
      label: entry.label,
    });
    return committed;
  }

  async #agent(
    run: LiveRun,
    schemas: SchemaRegistry,
    params: unknown,
    signal: AbortSignal,
  ): Promise<AgentReply> {
    const parsed = parseAgentCall(params);
    if (!parsed.ok) throw new ScriptCallError("TypeError", parsed.message);
    const call = parsed.call;
    const decision = await this.#decide(run, schemas, call);
    const { calls } = run.status;
    const startedAt = now();
    const t0 = performance.now();
    const base = {
      seq: decision.seq,
      hash: decision.hash,
      label: call.options.label ?? null,
      started_at: startedAt,
    };
    const ended = () => ({ ended_at: now(), duration_ms: Math.round(performance.now() - t0) });
    const skip = (reason: string): AgentReply => {
      calls.skipped++;
      this.#journal(run, {
        ...base,
        ...ended(),
        outcome: "skipped",
        provider: null,
        model: null,
        usage: { input_tokens: 0, output_tokens: 0 },
        cost_usd: 0,
        attempts: 0,
        reason,
      });
      this.#callsChanged(run);
      return { value: null, spent: run.budget.spent() };
    };

    if (decision.kind === "limit") {
      const max = this.#options.maxAgents;
      this.#raise(run, {
        type: "AgentLimitExceeded",
        message:
          `the run reached its limit of ${max} agent() calls; call #${decision.seq} and later return null`,
        data: { limit: max, first_refused_call: decision.seq },
      }, { once: true });
      return skip(`over the limit of ${max} agent() calls per run`);
    }
    if (decision.kind === "replay") {
      const { entry } = decision;
      calls.replayed++;
      await this.#journal(run, {
        ...base,
        ...ended(),
        outcome: "replayed",
        result: entry.result,
        provider: entry.provider,
        model: entry.model,
        usage: { input_tokens: 0, output_tokens: 0 },
        cost_usd: 0,
        attempts: 0,
        replayed_from: entry.replayed_from ?? run.replay?.runId,
      });
      this.#callsChanged(run);
      // Written ahead of the reply: whatever the script has seen is in the journal.
      return { value: entry.result ?? null, spent: run.budget.spent() };
    }

    calls.queued++;
    this.#callsChanged(run);
    let release: (() => void) | undefined;
    try {
      release = await run.semaphore.acquire(signal);
    } catch {
      calls.queued--;
      calls.failed++;
      this.#journal(run, {
        ...base,
        ...ended(),
        outcome: "failed",
        provider: null,
        model: null,
        usage: { input_tokens: 0, output_tokens: 0 },
        cost_usd: 0,
        attempts: 0,
        reason: "the run stopped before the call started",
      });
      return { value: null, spent: run.budget.spent() };
    }
    calls.queued--;
    try {
      const admission = run.budget.admit(run.budget.estimateOf(call.options));
      if (!admission.ok) {
        this.#raise(run, {
          type: "BudgetExceeded",
          message: `${admission.reason}; call #${decision.seq} and later calls return null`,
          data: { ...budgetData(run.budget), first_refused_call: decision.seq },
        }, { once: true });
        return skip(admission.reason);
      }
      calls.running++;
      this.#callsChanged(run);
      const used = { input_tokens: 0, output_tokens: 0, cost: 0 as number | null };
      let last: DispatchResult | undefined;
      let attempts = 0;
      let failure: string | undefined;
      let value: JsonValue | undefined;
      try {
        const options = decision.schema
          ? { ...call.options, schema: decision.schema.schema }
          : call.options;
        const maxAttempts = decision.schema ? run.request.schema_attempts : 1;
        while (attempts < maxAttempts && value === undefined) {
          attempts++;
          last = await this.#options.dispatcher.dispatch(
            { prompt: call.prompt, options, signal },
            { fakeOnly: run.request.fake_dispatch },
          );
          used.input_tokens += last.usage.input_tokens;
          used.output_tokens += last.usage.output_tokens;
          used.cost = used.cost === null || last.cost_usd === null
            ? null
            : used.cost + last.cost_usd;
          if (!decision.schema) value = last.output;
          else {
            const candidate = structuredValue(last.output);
            const errors = decision.schema.check(candidate);
            if (errors === null) value = candidate;
            else failure = errors.join("; ");
          }
        }
        if (value === undefined) {
          this.#raise(run, {
            type: "SchemaValidationFailed",
            message: `call #${decision.seq}${
              call.options.label ? ` (${call.options.label})` : ""
            } returned no valid result in ${attempts} attempts: ${failure}`,
            data: { call: decision.seq, attempts, errors: clip(failure ?? "") },
          }, { once: false });
          failure = `no result valid against the schema in ${attempts} attempts`;
        }
      } catch (error) {
        failure = signal.aborted
          ? "the run stopped"
          : error instanceof SvcError
          ? error.message
          : "the provider failed";
      } finally {
        run.budget.settle(admission.reservation, {
          tokens: used.input_tokens + used.output_tokens,
          usd: used.cost,
        });
        calls.running--;
      }
      const outcome = value === undefined ? "failed" : "live";
      if (outcome === "live") calls.succeeded++;
      else {
        calls.failed++;
        if (!signal.aborted) {
          const label = call.options.label ? ` (${call.options.label})` : "";
          this.#narrate(run, {
            kind: "call",
            text: `agent call #${decision.seq}${label} failed: ${failure}`,
          });
        }
      }
      await this.#journal(run, {
        ...base,
        ...ended(),
        outcome,
        ...(value !== undefined ? { result: value } : {}),
        provider: last?.provider ?? null,
        model: last?.model ?? null,
        usage: { input_tokens: used.input_tokens, output_tokens: used.output_tokens },
        cost_usd: used.cost,
        attempts,
        ...(failure !== undefined && value === undefined ? { reason: failure } : {}),
      });
      this.#callsChanged(run);
      return { value: value ?? null, spent: run.budget.spent() };
    } finally {
      release();
    }
  }
}

/** Why a run was stopped from outside: its timeout, or a cancel. */
class RunStop extends Error {
  readonly state: "timeout" | "cancelled";
  constructor(state: "timeout" | "cancelled", message: string) {
    super(message);
    this.state = state;
  }
}

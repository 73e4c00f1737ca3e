import type { Dispatcher } from "../dispatch/mod.ts";
import { SvcError, toSvcError } from "../errors/mod.ts";
import { defaultIsolationBackends, type IsolationBackends } from "../isolation/mod.ts";
import { joinPath } from "../platform/mod.ts";
import {
  type JsonValue,
  parseAgentCall,
  type WorkflowRunRequest,
  WorkflowRunRequestSchema,
} from "../schemas/mod.ts";
import { type AgentReply, type GuestOutcome, runGuest, ScriptCallError } from "./guest_session.ts";
import { newId } from "./ids.ts";
import { checkScript } from "./script_check.ts";
import { scriptRunError } from "./script_error.ts";
import { Semaphore } from "./semaphore.ts";
import {
  type NarrationEntry,
  type RunError,
  type RunEvent,
  type RunState,
  type RunStatus,
  TERMINAL_STATES,
} from "./run_state.ts";

/** Options of {@linkcode RunManager}. */
export interface RunManagerOptions {
  dispatcher: Dispatcher;
  /** `SVC_HOME`: guests get their scratch space under `<home>/tmp`. */
  home: string;
  isolation?: IsolationBackends;
  /** Simultaneous `agent()` calls of one run; more queue. Default 8. */
  concurrency?: number;
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
  controller: AbortController;
  listeners: Set<Listener>;
  done: Promise<RunStatus>;
}

function now(): string {
  return new Date().toISOString();
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

/**
 * Starts workflow runs, keeps their state, and tells subscribers what happens. Every run is
 * a guest process driven by {@linkcode runGuest}; every `agent()` call it makes goes through
 * the dispatcher under the run's concurrency cap.
 */
export class RunManager {
  readonly #options: Required<Omit<RunManagerOptions, "nonce">> & { nonce?: () => string };
  readonly #runs = new Map<string, LiveRun>();

  constructor(options: RunManagerOptions) {
    this.#options = {
      isolation: defaultIsolationBackends(),
      concurrency: 8,
      heapMb: 512,
      frameLimit: 4 * 1024 * 1024,
      maxNarration: 5000,
      maxSecurityEvents: 200,
      ...options,
    };
  }

  /**
   * Validates the request and the script, then starts the run and returns its first status
   * (`queued`) at once. Bad input throws an SvcError before any process starts.
   */
  start(input: unknown, options: StartOptions = {}): RunStatus {
    const parsed = WorkflowRunRequestSchema.safeParse(input);
    if (!parsed.success) {
      throw new SvcError("invalid_request", `Cannot start the run: ${formatIssue(parsed.error)}`);
    }
    const request = parsed.data;
    const filename = request.filename ?? "script.js";
    const checked = checkScript(request.script, { filename });
    const status: RunStatus = {
      run_id: newId("run"),
      state: "queued",
      owner: options.owner ?? "local",
      name: checked.meta.name ?? null,
      meta: checked.meta,
      filename,
      isolation: request.isolation,
      sandbox_default: request.sandbox_default,
      workdir: request.workdir ?? null,
      fake_dispatch: request.fake_dispatch,
      timeout: request.timeout,
      created_at: now(),
      started_at: null,
      ended_at: null,
      narration: [],
      narration_dropped: 0,
      conditions: [],
      security_events: [],
      security_events_dropped: 0,
      budget: { total: null, unit: "tokens", spent: 0, remaining: null },
      calls: { total: 0, queued: 0, running: 0, succeeded: 0, failed: 0 },
      journal: {
        calls: 0,
        replayed: 0,
        live: 0,
        usage: { input_tokens: 0, output_tokens: 0, cost_usd: 0 },
      },
    };
    const run: LiveRun = {
      status,
      controller: new AbortController(),
      listeners: new Set(),
      done: Promise.resolve(status),
    };
    this.#runs.set(status.run_id, run);
    const snapshot = structuredClone(status);
    run.done = this.#execute(run, request, checked.body);
    return snapshot;
  }

  /** A snapshot of the run's status; undefined for an unknown id or a run of another owner. */
  get(runId: string, options: { owner?: string } = {}): RunStatus | undefined {
    const run = this.#runs.get(runId);
    if (!run || (options.owner !== undefined && run.status.owner !== options.owner)) {
      return undefined;
    }
    return structuredClone(run.status);
  }

  /** Resolves with the final status once the run has ended. */
  async wait(runId: string): Promise<RunStatus> {
    const run = this.#runs.get(runId);
    if (!run) throw new SvcError("not_found", `Cannot wait for run '${runId}': no such run`);
    return structuredClone(await run.done);
  }

  /**
   * Asks a run to stop: its guest is killed and it ends `cancelled`. Returns false when the
   * run had already ended; asking twice is harmless.
   */
  cancel(runId: string, options: { owner?: string } = {}): boolean {
    const run = this.#runs.get(runId);
    if (!run || (options.owner !== undefined && run.status.owner !== options.owner)) {
      throw new SvcError("not_found", `Cannot cancel run '${runId}': no such run`);
    }
    if (TERMINAL_STATES.has(run.status.state)) return false;
    run.controller.abort(new RunStop("cancelled", "the run was cancelled"));
    return true;
  }

  /** Calls `listener` with every later event of the run. Returns the unsubscribe function. */
  subscribe(runId: string, listener: Listener): () => void {
    const run = this.#runs.get(runId);
    if (!run) throw new SvcError("not_found", `Cannot follow run '${runId}': no such run`);
    run.listeners.add(listener);
    return () => run.listeners.delete(listener);
  }

  /** Cancels every run that has not ended and waits for all of them. */
  async close(): Promise<void> {
    for (const run of this.#runs.values()) {
      if (!TERMINAL_STATES.has(run.status.state)) {
        run.controller.abort(new RunStop("cancelled", "the host is shutting down"));
      }
    }
    await Promise.all([...this.#runs.values()].map((run) => run.done));
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

  #setState(run: LiveRun, state: RunState): void {
    run.status.state = state;
    this.#emit(run, { type: "state", run_id: run.status.run_id, at: now(), state });
  }

  #narrate(run: LiveRun, entry: Omit<NarrationEntry, "at">): void {
    const full: NarrationEntry = { at: now(), ...entry };
    if (run.status.narration.length < this.#options.maxNarration) run.status.narration.push(full);
    else run.status.narration_dropped++;
    this.#emit(run, { type: "narration", run_id: run.status.run_id, at: full.at, entry: full });
  }

  #callsChanged(run: LiveRun): void {
    this.#emit(run, {
      type: "calls",
      run_id: run.status.run_id,
      at: now(),
      calls: { ...run.status.calls },
    });
  }

  async #execute(run: LiveRun, request: WorkflowRunRequest, body: string): Promise<RunStatus> {
    // Start on a later task, so that whoever called start() can subscribe before anything happens.
    await Promise.resolve();
    const { status, controller } = run;
    if (controller.signal.aborted) {
      this.#finishFromOutcome(
        run,
        { kind: "aborted", reason: controller.signal.reason },
        status.filename,
      );
      return status;
    }
    const semaphore = new Semaphore(this.#options.concurrency);
    const timer = setTimeout(
      () =>
        controller.abort(
          new RunStop("timeout", `the run exceeded its timeout of ${request.timeout} s`),
        ),
      request.timeout * 1000,
    );
    status.started_at = now();
    this.#setState(run, "running");
    let outcome: GuestOutcome;
    try {
      outcome = await runGuest({
        backend: this.#options.isolation[request.isolation],
        scratchRoot: joinPath(this.#options.home, "tmp"),
        body,
        filename: status.filename,
        args: { given: request.args !== undefined, value: request.args as JsonValue },
        budget: { total: null, unit: "tokens" },
        heapMb: this.#options.heapMb,
        // A little past the wall-clock timeout, so that the host's own timeout normally wins.
        cpuSeconds: request.timeout + 5,
        frameLimit: this.#options.frameLimit,
        nonce: this.#options.nonce,
        signal: controller.signal,
        handlers: {
          agent: (params, signal) => this.#agent(run, request, semaphore, params, signal),
          phase: (title) => this.#narrate(run, { kind: "phase", text: title }),
          log: (message) => this.#narrate(run, { kind: "log", text: message }),
          output: (text, stream) => this.#narrate(run, { kind: "output", text, stream }),
          security: (kind, detail) => {
            const event = { at: now(), kind, detail };
            if (status.security_events.length < this.#options.maxSecurityEvents) {
              status.security_events.push(event);
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
      this.#finish(run, "failed", { error: { code, message } });
      return status;
    } finally {
      clearTimeout(timer);
    }
    this.#finishFromOutcome(run, outcome, status.filename);
    return status;
  }

  #finishFromOutcome(run: LiveRun, outcome: GuestOutcome, filename: string): void {
    switch (outcome.kind) {
      case "returned":
        return this.#finish(run, "succeeded", { result: outcome.value });
      case "threw":
        return this.#finish(run, "failed", { error: scriptRunError(outcome.error, filename) });
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

  #finish(run: LiveRun, state: RunState, end: { result?: JsonValue; error?: RunError }): void {
    if (TERMINAL_STATES.has(run.status.state)) return;
    run.status.ended_at = now();
    if (end.result !== undefined) run.status.result = end.result;
    if (end.error !== undefined) run.status.error = end.error;
    run.status.calls.queued = 0;
    run.status.calls.running = 0;
    this.#setState(run, state);
    this.#emit(run, {
      type: "end",
      run_id: run.status.run_id,
      at: run.status.ended_at,
      status: structuredClone(run.status),
    });
  }

  async #agent(
    run: LiveRun,
    request: WorkflowRunRequest,
    semaphore: Semaphore,
    params: unknown,
    signal: AbortSignal,
  ): Promise<AgentReply> {
    const parsed = parseAgentCall(params);
    if (!parsed.ok) throw new ScriptCallError("TypeError", parsed.message);
    const { calls, journal, budget } = run.status;
    const seq = ++calls.total;
    calls.queued++;
    this.#callsChanged(run);
    let release: (() => void) | undefined;
    try {
      release = await semaphore.acquire(signal);
      calls.queued--;
      calls.running++;
      this.#callsChanged(run);
      const result = await this.#options.dispatcher.dispatch(
        { prompt: parsed.call.prompt, options: parsed.call.options, signal },
        { fakeOnly: request.fake_dispatch },
      );
      journal.calls++;
      journal.live++;
      journal.usage.input_tokens += result.usage.input_tokens;
      journal.usage.output_tokens += result.usage.output_tokens;
      journal.usage.cost_usd = journal.usage.cost_usd === null || result.cost_usd === null
        ? null
        : journal.usage.cost_usd + result.cost_usd;
      budget.spent = journal.usage.input_tokens + journal.usage.output_tokens;
      calls.succeeded++;
      return { value: result.output, spent: budget.spent };
    } catch (error) {
      if (release === undefined) calls.queued--;
      calls.failed++;
      if (!signal.aborted) {
        const reason = error instanceof SvcError ? error.message : "the provider failed";
        const label = parsed.call.options.label ? ` (${parsed.call.options.label})` : "";
        this.#narrate(run, { kind: "call", text: `agent call #${seq}${label} failed: ${reason}` });
      }
      return { value: null, spent: budget.spent };
    } finally {
      if (release) {
        calls.running--;
        release();
      }
      this.#callsChanged(run);
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

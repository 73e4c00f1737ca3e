import type { CallEventsResult, CallProgressEvent } from "../schemas/mod.ts";
import { callEventsPage, followCallEvents } from "./call_events.ts";
import { SvcError } from "../errors/mod.ts";
import { StopReason as RunStop } from "../dispatch/mod.ts";
import {
  type IsolationReport,
  type PrestartedBackend,
  prestartedBackend,
} from "../isolation/mod.ts";
import {
  type ActiveRunCounts,
  type Caller,
  type FeedItem,
  followEvents,
  HostLease,
  type HostRef,
  isId,
  type JournalEntry,
  mayAccess,
  ownerScope,
  type QueueItem,
  type RunEvent,
  type RunState,
  type RunStatus,
  shownId,
  type StartSurface,
  TERMINAL_STATES,
  type WorkTrigger,
} from "../ledger/mod.ts";
import { joinPath } from "../platform/mod.ts";
import { DEFAULT_RUN_TIMEOUT_S, type JsonValue } from "../schemas/mod.ts";
import { sweepScratch } from "../scratch/mod.ts";
import { FinishedRuns } from "./finished_runs.ts";
import { RunContext } from "./run_context.ts";
import {
  type AdmissionReads,
  RunAdmission,
  type RunAdmissionLimits,
  type RunAdmissionSnapshot,
} from "./admission.ts";
import { CancelPoll, followToEnd, ownerQuery, requireVisible, stopLive } from "../lifecycle/mod.ts";
import {
  type ExecuteContext,
  executeRun,
  finishRun,
  type PrepareContext,
  type PreparedRun,
  type PrepareOptions,
  prepareRun,
  primeGuest,
  queuedRequest,
  recordRun,
  refusedRun,
  type ResolvedRunOptions,
  resolveRunOptions,
  resumeRequest,
  type RunManagerLedger,
  type RunManagerOptions,
  startedBy,
} from "./run/mod.ts";

export type { RunManagerLedger, RunManagerOptions } from "./run/mod.ts";

/** Options of {@linkcode RunManager.events}. */
export interface RunEventsOptions {
  /** Start after this position (the last `seq` seen). Default: from the first event. */
  after?: number;
  /** Stops following. */
  signal?: AbortSignal;
  /** With false, ends after the events recorded so far. Default true. */
  follow?: boolean;
}

/**
 * Starts workflow runs, keeps their state in the ledger, and tells subscribers what happens.
 * Every run is a guest process driven by `runGuest`; every `agent()` call it makes
 * passes the agent limit, resume matching, the run's concurrency cap and budget gate, then
 * goes through the dispatcher and into the journal.
 */
export class RunManager {
  readonly #options: ResolvedRunOptions;
  readonly #runs = new Map<string, RunContext>();
  /** Ended runs' statuses as read from the ledger: they change no more. */
  readonly #finished = new FinishedRuns();
  /** What each live run holds of the host lease (its heartbeat). */
  readonly #holds = new Map<string, () => void>();
  readonly #host: HostLease;
  /** Whether this manager made its host lease, and so closes it. */
  readonly #ownsHost: boolean;
  /** Looks for cancels asked for by other processes while this host has runs. */
  readonly #cancelPoll: CancelPoll;
  #recovered: string[] = [];
  /** Guests' teardowns still under way: close() waits for them. */
  readonly #teardowns = new Set<Promise<void>>();
  /** Runs whose end is still being written after the ledger refused their writes. */
  readonly #endings = new Set<Promise<void>>();
  /** Aborted when the manager closes: the endings stop retrying. */
  readonly #closed = new AbortController();
  /** The `unsafe-local` backend, starting guests ahead of need. */
  readonly #prestarted: PrestartedBackend;
  /** The `microvm` backend, starting a VM ahead of need where its backend says that pays off. */
  readonly #prestartedVm: PrestartedBackend;
  /** Admission control: whether a new run runs now, queues, or is refused. */
  readonly #admission: RunAdmission;
  /** Set when close() begins: queued runs are no longer started. */
  #closing = false;
  /** The next look at queued runs whose owners' live slots other hosts hold. */
  #look: ReturnType<typeof setTimeout> | undefined;
  /** What preparing a request reads: the manager's settings and its view of runs. */
  readonly #preparing: PrepareContext;
  /** What executing and ending a run needs of this host. */
  readonly #executing: ExecuteContext;

  private constructor(options: RunManagerOptions) {
    this.#options = resolveRunOptions(options);
    this.#ownsHost = options.host === undefined;
    this.#host = options.host ?? new HostLease(options.ledger);
    const { isolation } = this.#options;
    this.#prestarted = prestartedBackend(isolation["unsafe-local"], {
      refill: this.#options.prestartGuest,
    });
    this.#prestartedVm = prestartedBackend(isolation.microvm, {
      refill: this.#options.prestartGuest,
    });
    this.#options.isolation = {
      ...isolation,
      "unsafe-local": this.#prestarted,
      microvm: this.#prestartedVm,
    };
    this.#admission = new RunAdmission(options.admission);
    this.#cancelPoll = new CancelPoll({
      live: this.#runs,
      asked: (ids) => this.#ledger.runCancelsRequested(ids),
      // Asked through the ledger by another process: who asked is not recorded with the ask.
      reason: () => new RunStop("cancelled", "cancelled on request"),
      pollMs: this.#options.cancelPollMs,
    });
    const { dispatcher, workspace, maxAgents, concurrency } = this.#options;
    this.#preparing = {
      ledger: this.#ledger,
      get: (runId, caller) => this.get(runId, caller),
      dispatcher,
      workspace,
      maxAgents,
      concurrency,
      ceiling: {
        maxAgents: this.#admission.limits.maxRunAgents,
        concurrency: this.#admission.limits.maxRunConcurrency,
      },
      projectDir: this.#options.projectDir,
      home: this.#ledger.home,
      ...(this.#options.userHome !== undefined ? { userHome: this.#options.userHome } : {}),
    };
    this.#executing = {
      options: this.#options,
      ledger: this.#ledger,
      scratchRoot: this.#scratchRoot,
      teardowns: this.#teardowns,
      endings: this.#endings,
      closed: this.#closed.signal,
      forget: (runId) => this.#forget(runId),
    };
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
    if (manager.#options.prestartGuest) {
      manager.#primeGuest("unsafe-local", DEFAULT_RUN_TIMEOUT_S);
      manager.#primeGuest("microvm", DEFAULT_RUN_TIMEOUT_S);
    }
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

  /** Takes reloaded admission caps (a configuration reload): later runs are admitted by them. */
  configureAdmission(limits: Partial<RunAdmissionLimits>): void {
    this.#admission.configure(limits);
  }

  /** What the isolation tiers say about themselves, for `/api/status`. */
  async isolationReport(): Promise<{ microvm: IsolationReport | null }> {
    return { microvm: await this.#prestartedVm.describe?.() ?? null };
  }

  /** Runs this manager found left `running` by a host that died, and marked `interrupted`. */
  get recovered(): readonly string[] {
    return this.#recovered;
  }

  /**
   * Starts a guest of `tier` ahead of a run of `timeout` seconds: always for `unsafe-local`; for
   * `microvm` where its backend boots a VM per run (`qemu`).
   */
  #primeGuest(tier: "unsafe-local" | "microvm", timeout: number): void {
    const backend = tier === "microvm" ? this.#prestartedVm : this.#prestarted;
    primeGuest(backend, {
      scratchRoot: this.#scratchRoot,
      heapMb: this.#options.heapMb,
      timeout,
    });
  }

  /** Where guests (and calls) make their scratch directories. */
  get #scratchRoot(): string {
    return joinPath(this.#ledger.home, "tmp");
  }

  get #ledger(): RunManagerLedger {
    return this.#options.ledger;
  }

  /**
   * Validates the request and the script, records the run and starts it, and returns its
   * first status (`queued`) at once. Bad input throws an SvcError before anything of it reaches
   * a guest. The run's guest starts booting as soon as the request and the script are checked,
   * while the host reads what else the run needs (a resumed run's journal) and records it.
   * `options.via` names the surface that asked, for the run's `started_by`.
   */
  async start(
    input: unknown,
    caller: Caller,
    options: { via?: StartSurface } = {},
  ): Promise<RunStatus> {
    const prepared = await this.#prepare(this.#admission.boundTimeout(input, caller), caller, {
      checked: (request) => {
        if (request.isolation === "unsafe-local" || request.isolation === "microvm") {
          this.#primeGuest(request.isolation, request.timeout);
        }
      },
    });
    prepared.status.started_by = startedBy(options.via ?? "host", prepared.status);
    const release = await this.#host.hold();
    const runId = prepared.status.run_id;
    let placement;
    try {
      // Admission control: at the live caps the run is recorded queued, and this process starts
      // it when a slot frees; at the queue's caps it is refused (rate_limited). A queued run is
      // recorded in the admission's turn, since the next decision reads the queue it joins, and
      // becomes startable only once recorded (RunAdmission.recorded: a slot handed to it before
      // would find nothing to claim and lose it). A run that starts now took its live slot in
      // its turn and joins no queue, so its record (files and a commit) waits for no other
      // run's: a burst of N starts is not N records in a row.
      placement = await this.#admission.serial(async () => {
        const placed = await this.#admission.place(caller, runId, this.#reads);
        if (placed === "queue") await this.#recordQueued(prepared);
        return placed;
      });
      // The record takes the owner's live slot in the ledger, every host's counted: one that
      // finds them taken meanwhile (by another host) queues the run after all.
      const ownerCap = caller.remote === true ? this.#admission.limits.ownerLiveRuns : undefined;
      if (placement === "run" && !(await this.#record(prepared, this.#host.ref, { ownerCap }))) {
        placement = "queue" as const;
        await this.#admission.serial(async () => {
          await this.#admission.requeue(caller, runId, this.#reads);
          await this.#recordQueued(prepared);
        });
      }
    } catch (error) {
      this.#admission.release(runId);
      release();
      this.#pump();
      throw error;
    }
    if (placement === "run") return this.#launch(prepared, release);
    release();
    // A slot may have freed while the record was written: it goes to the queue's next run now.
    this.#pump();
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
    options: { trigger?: WorkTrigger; via?: StartSurface } = {},
  ): Promise<RunStatus> {
    const prepared = await this.#prepare(this.#admission.boundTimeout(input, caller), caller, {});
    if (options.trigger) prepared.status.trigger = options.trigger;
    prepared.status.started_by = startedBy(options.via ?? "host", prepared.status);
    await this.#admission.serial(async () => {
      this.#admission.checkQueue(caller, await this.#queuedRuns());
      await this.#record(prepared, null);
    });
    return await this.#withPosition(structuredClone(prepared.status));
  }

  /** Records a run placed in the queue, in the admission's turn; then a freed slot may go to it. */
  async #recordQueued(prepared: PreparedRun): Promise<void> {
    await this.#record(prepared, null);
    this.#admission.recorded(prepared.status.run_id);
  }

  /** What admission reads from the ledger: the queue, and an owner's live runs on every host. */
  get #reads(): AdmissionReads {
    return {
      queued: () => this.#queuedRuns(),
      ownerLive: (owner) => this.#ledger.countOwnerLive(owner),
    };
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
    await this.#admission.serial(() => this.#admission.check(caller, this.#reads));
  }

  /**
   * How many of the caller's runs (everyone's for an administrator) are queued and running,
   * every host's: counted from the queue and the active runs' index, never from the runs'
   * documents, so that a status read costs little however many runs are live.
   */
  activeCounts(caller: Caller): Promise<ActiveRunCounts> {
    return this.#ledger.countActiveRuns(ownerScope(caller));
  }

  /** How full the caps are, host-wide and for the caller's owner. */
  async admission(caller: Caller): Promise<RunAdmissionSnapshot> {
    const [queued, ownerLive] = await Promise.all([
      this.#queuedRuns(),
      this.#ledger.countOwnerLive(caller.owner),
    ]);
    return this.#admission.snapshot(caller.owner, queued, ownerLive);
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
    for (const { runId, owner } of this.#admission.startable()) {
      if (!this.#admission.tryClaim(runId, owner)) continue;
      this.#claimHeld(runId, { owner, force: false }).catch(() => this.#admission.release(runId));
    }
  }

  /**
   * Looks again, after a while, at the queued runs whose owners' live slots other hosts hold:
   * a slot another host frees tells this one nothing, so it is found by looking.
   */
  #lookLater(): void {
    if (this.#closing || this.#look !== undefined) return;
    this.#look = setTimeout(() => {
      this.#look = undefined;
      this.#admission.unblock();
      this.#pump();
    }, this.#options.cancelPollMs);
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
      return await this.#claimHeld(runId, { owner, force: options.force });
    } catch (error) {
      this.#admission.release(runId);
      throw error;
    }
  }

  /**
   * Claims a queued run of `owner` whose live slot here is taken, with the owner's live slot
   * in the ledger (unless `force`), and starts it; undefined when not claimed. A run whose
   * owner's slots other hosts hold goes on waiting, and is looked at again later.
   */
  async #claimHeld(
    runId: string,
    options: { owner: string; force: boolean },
  ): Promise<RunStatus | undefined> {
    const release = await this.#host.hold();
    let claimed = false;
    try {
      const ownerCap = options.force ? {} : { ownerCap: this.#admission.limits.ownerLiveRuns };
      const outcome = await this.#ledger.claimRun(runId, this.#host.ref, ownerCap);
      claimed = outcome === "claimed";
      if (!claimed) {
        release();
        if (outcome === "owner_full") {
          this.#admission.blocked(runId, options.owner);
          this.#lookLater();
          // The host slot it held may start another owner's run now.
          this.#pump();
        } else this.#admission.release(runId);
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
      prepared = await this.#prepare(request, caller, {
        queued: status,
        ...(input.notes !== undefined ? { notes: input.notes } : {}),
      });
    } catch (error) {
      prepared = refusedRun(status, request, error);
    }
    return this.#launch(prepared, release);
  }

  /** Checks a request and builds the run's first status (`queued`), or uses `queued`'s. */
  #prepare(input: unknown, caller: Caller, options: PrepareOptions): Promise<PreparedRun> {
    return prepareRun(input, caller, this.#preparing, options);
  }

  /**
   * Records a prepared run: running on `host`, or queued for a worker when `host` is null.
   * False when `ownerCap` is given and the owner's live runs on every host are at it.
   */
  #record(
    prepared: PreparedRun,
    host: HostRef | null,
    options: { ownerCap?: number | undefined } = {},
  ): Promise<boolean> {
    const { ownerCap } = options;
    return recordRun(this.#ledger, prepared, host, ownerCap === undefined ? {} : { ownerCap });
  }

  /** Runs a recorded run in this process, holding `release` (its part of the host lease). */
  #launch(prepared: PreparedRun, release: () => void): RunStatus {
    const { status, budget, replay } = prepared;
    // A scratch workdir is recorded by role; the run works at its place on this host.
    const workdir = this.#options.workspace.placeOf(prepared.request.workdir);
    const request = workdir === undefined ? prepared.request : { ...prepared.request, workdir };
    this.#holds.set(status.run_id, release);
    this.#cancelPoll.start();
    const run = new RunContext(status, request, {
      ledger: this.#ledger,
      concurrency: status.limits.concurrency,
      budget,
      replay,
      maxNarration: this.#options.maxNarration,
      maxNarrationBytes: this.#options.maxNarrationBytes,
      maxSecurityEvents: this.#options.maxSecurityEvents,
      maxProgressBytes: this.#options.maxProgressBytes,
      maxJournalBytes: this.#options.maxJournalBytes,
      maxBlobBytes: this.#options.maxBlobBytes,
      maxRefusedCalls: this.#options.maxRefusedCalls,
      ...(prepared.workdirRoot !== undefined ? { workdirRoot: prepared.workdirRoot } : {}),
    });
    this.#runs.set(status.run_id, run);
    const snapshot = structuredClone(status);
    run.done = prepared.refused
      ? finishRun(run, "failed", { error: prepared.refused }, this.#executing)
      : executeRun(run, {
        body: prepared.body,
        warnings: prepared.warnings,
        scriptDir: prepared.scriptDir,
      }, this.#executing);
    return snapshot;
  }

  /**
   * Starts a new run that replays a finished one: the source's script, filename, args,
   * isolation, sandbox levels, workdir, timeout, fake dispatch, budgets, limits and schema
   * attempts, with `resume_from` the source. `options` (checked by
   * `WorkflowResumeRequestSchema`) may change `fake_dispatch`, `timeout` and the budgets. Another
   * owner's run is `not_found`; a run still queued or running is a `conflict`.
   */
  async resume(
    runId: string,
    caller: Caller,
    options: unknown = {},
    asked: { via?: StartSurface } = {},
  ): Promise<RunStatus> {
    const request = await resumeRequest(runId, caller, options, this.#preparing);
    // start() refuses a source still running, as for any resume_from.
    return await this.start(request, caller, asked);
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

  /**
   * The run's status, wherever it runs; undefined for an unknown id and for a run the caller
   * may not see alike.
   */
  async get(runId: string, caller: Caller): Promise<RunStatus | undefined> {
    if (!isId("run", runId)) return undefined;
    const live = this.#runs.get(runId);
    const status = live ? structuredClone(live.status) : await this.#stored(runId);
    if (!status || !mayAccess(caller, status.owner)) return undefined;
    return await this.#withPosition(status);
  }

  /**
   * {@linkcode get} as JSON text, what an API answers: an ended run's is the kept text itself,
   * with neither a copy nor a serialisation per read.
   */
  async getJson(runId: string, caller: Caller): Promise<string | undefined> {
    if (!isId("run", runId)) return undefined;
    const kept = this.#runs.has(runId) ? undefined : this.#finished.text(runId);
    if (kept) return mayAccess(caller, kept.owner) ? kept.text : undefined;
    const status = await this.get(runId, caller);
    return status && JSON.stringify(status);
  }

  /** The run's status as the ledger holds it; an ended run's from the cache once read. */
  async #stored(runId: string): Promise<RunStatus | undefined> {
    const kept = this.#finished.get(runId);
    if (kept) return kept;
    const status = await this.#ledger.getRun(runId);
    if (status) this.#finished.offer(status);
    return status;
  }

  async #visible(runId: string, caller: Caller, action: string): Promise<RunStatus> {
    return requireVisible(await this.get(runId, caller), { kind: "run", id: runId, action });
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
    return this.#ledger.listRuns(ownerQuery(caller, options));
  }

  /**
   * Call `seq`'s recorded live output after feed position `after` (a page of at most `limit`
   * batches), and whether the call has ended; not_found for a run the caller may not see or a
   * call the run has not made.
   */
  async callEvents(
    runId: string,
    seq: number,
    caller: Caller,
    options: { after?: number; limit?: number } = {},
  ): Promise<CallEventsResult> {
    await this.visibleCall(runId, seq, caller);
    const feed = this.events(runId, caller, { after: options.after, follow: false });
    return await callEventsPage(feed, runId, seq, options.limit);
  }

  /**
   * Call `seq`'s live output from feed position `after`, followed until the call ends (its
   * `call` event) or the run does, or `signal`.
   */
  async *followCall(
    runId: string,
    seq: number,
    caller: Caller,
    options: { after?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<CallProgressEvent> {
    await this.visibleCall(runId, seq, caller);
    yield* followCallEvents(this.events(runId, caller, options), seq);
  }

  /**
   * Checks that the caller may see the run and that call `seq` can be among its calls: an
   * ended run's count is final; a live one's may lag in the ledger behind another host.
   */
  async visibleCall(runId: string, seq: number, caller: Caller): Promise<void> {
    const status = await this.#visible(runId, caller, "read the calls of");
    const beyond = TERMINAL_STATES.has(status.state) && seq > status.calls.total;
    if (!Number.isSafeInteger(seq) || seq < 1 || beyond) {
      throw new SvcError(
        "not_found",
        `Cannot read call ${seq} of run '${shownId(runId)}': the run has no such call`,
      );
    }
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
    await followToEnd(this.events(runId, caller, options), {
      what: `run '${runId}'`,
      signal: options.signal,
    });
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
      run.controller.abort(new RunStop("cancelled", `cancelled by ${caller.owner}`));
      return structuredClone(run.status);
    }
    await this.#ledger.requestRunCancel(runId);
    if (status.state === "queued") {
      // Queued and unclaimed: claim it here and end it at once, since no worker may be about.
      await this.#work(runId, { force: true }).catch(() => undefined);
      const claimed = this.#runs.get(runId);
      if (claimed) {
        claimed.controller.abort(
          new RunStop("cancelled", `cancelled by ${caller.owner} before it started`),
        );
        return structuredClone(await claimed.done);
      }
    }
    return (await this.get(runId, caller)) ?? status;
  }

  /** Cancels every run that has not ended, waits for all of them, and says goodbye to the ledger. */
  async close(): Promise<void> {
    this.#closing = true;
    clearTimeout(this.#look);
    this.#look = undefined;
    await stopLive(this.#runs.values(), new RunStop("cancelled", "the host is shutting down"));
    this.#closed.abort();
    await Promise.all(this.#endings);
    this.#cancelPoll.stop();
    await this.#prestarted[Symbol.asyncDispose]();
    await this.#prestartedVm[Symbol.asyncDispose]();
    await Promise.all(this.#teardowns);
    if (this.#ownsHost) await this.#host.close();
  }

  /** Drops an ended run that the ledger holds: a long-lived host must not keep every run. */
  #forget(runId: string): void {
    const owner = this.#runs.get(runId)?.status.owner;
    this.#holds.get(runId)?.();
    this.#holds.delete(runId);
    this.#runs.delete(runId);
    // Its guest is gone: its live slot (here, and its owner's in the ledger) goes to the next
    // queued run.
    this.#admission.release(runId);
    if (owner !== undefined) this.#admission.unblock(owner);
    this.#pump();
  }
}

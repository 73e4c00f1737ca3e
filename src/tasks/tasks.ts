import { OwnerGauge } from "../concurrency/mod.ts";
import {
  CancelPoll,
  followToEnd,
  ownerQuery,
  requireVisible,
  stopLive,
  writeUntilTaken,
} from "../lifecycle/mod.ts";
import { SvcError } from "../errors/mod.ts";
import {
  type ApprovalLedger,
  type ApprovalRecord,
  type Caller,
  type FeedItem,
  type FeedLedger,
  followEvents,
  HostLease,
  type HostLedger,
  isId,
  isTerminal,
  type LedgerCore,
  mayAccess,
  type QueueLedger,
  type TaskApprovalNote,
  type TaskEvent,
  type TaskLedger,
  type TaskState,
  type TaskStatus,
  type WorkTrigger,
} from "../ledger/mod.ts";
import { withDefaults } from "../options/mod.ts";
import { WorkspacePolicy } from "../workspace/mod.ts";
import {
  type CallProgress,
  describeIssue,
  DispatchRequestSchema,
  type DispatchTaskRequest,
  type JsonValue,
} from "../schemas/mod.ts";
import {
  DEFAULT_PROGRESS_BYTES,
  type Dispatcher,
  type DispatchOutcome,
  ProgressRecorder,
  ProviderError,
  StopReason,
  structuredStep,
} from "../dispatch/mod.ts";
import { denialText, requestApproval, waitForDecision } from "../approvals/mod.ts";
import type { SessionStore } from "./sessions.ts";
import {
  dispatchTaskOnce,
  prepareTaskCall,
  settleTask,
  stepFailure,
  taskContext,
} from "./task_call.ts";
import { newTaskStatus } from "./task_status.ts";

/** The ledger domains a task manager uses. */
export type TaskManagerLedger =
  & LedgerCore
  & TaskLedger
  & FeedLedger
  & HostLedger
  & QueueLedger
  & ApprovalLedger;

/** Options of {@linkcode TaskManager}. */
export interface TaskManagerOptions {
  dispatcher: Dispatcher;
  /** Where tasks, their feeds and the queue are kept, hosts recovered and approvals asked. */
  ledger: TaskManagerLedger;
  sessions: SessionStore;
  /** How often a task checks the ledger for a cancel asked for by another process, in ms. Default 250. */
  cancelPollMs?: number;
  /** This process's identity in the ledger, shared with its run manager. Default: its own. */
  host?: HostLease;
  /**
   * Which directories remote callers may name as `workdir`. Default: no roots, so a remote
   * caller's task works in a fresh scratch directory and cannot name one; the command line's
   * choice is free either way.
   */
  workspace?: WorkspacePolicy;
  /**
   * Live (queued or running) tasks one remote caller's owner may have; beyond it, a dispatch
   * is refused with `rate_limited` (docs/SECURITY.md, "Capacity"). Default 8.
   */
  ownerLiveTasks?: number;
  /** The `Retry-After` of that refusal, in seconds. Default 30. */
  retryAfterS?: number;
  /**
   * Bytes of live output (progress events, redacted and bounded) a task's call records in its
   * feed; 0 records none. @default DEFAULT_PROGRESS_BYTES (the configuration's
   * `progress.call_bytes`)
   */
  progressBytes?: number;
}

/** Longest prompt of a task: it is stored with the task, in one KV value. */
const PROMPT_LIMIT = 32 * 1024;

interface LiveTask {
  status: TaskStatus;
  controller: AbortController;
  done: Promise<TaskStatus>;
  eventSeq: number;
  /** The task's progress writes, one after another: all are in before its end is saved. */
  progressWrites: Promise<void>;
  /** Settles once the task is claimed for this process (true) or found taken (false). */
  claimed: Promise<boolean>;
  onClaim: (won: boolean) => void;
}

function now(): string {
  return new Date().toISOString();
}

/**
 * Asynchronous dispatches. `start()` returns a `task_id` at once and runs the call in this
 * process; `enqueue()` only records it, for a worker process to `work()` on. Status, result,
 * usage and state events are in the ledger; `cancel()` is idempotent and reaches a task in any
 * process (its worker polls the ledger), killing the agent's whole process group.
 */
export class TaskManager {
  #options: Required<Omit<TaskManagerOptions, "host">>;
  readonly #live = new Map<string, LiveTask>();
  /** Tasks remote callers started in this process and that have not ended, by owner. */
  readonly #owners = new OwnerGauge();
  /** Remote callers' enqueues one at a time, so that racing ones never pass the cap together. */
  #enqueueTurn: Promise<unknown> = Promise.resolve();
  /** Aborted when the manager closes: ends that the ledger refused stop being retried. */
  readonly #closed = new AbortController();
  readonly #host: HostLease;
  readonly #ownsHost: boolean;
  readonly #cancelPoll: CancelPoll;

  /**
   * Takes reloaded caps (a configuration reload): later dispatches are admitted by them; tasks
   * already live stay.
   */
  configureAdmission(caps: { ownerLiveTasks: number; retryAfterS: number }): void {
    this.#options = { ...this.#options, ...caps };
  }

  /** A manager over the dispatcher and ledger of `options`; it runs nothing until asked. */
  constructor(options: TaskManagerOptions) {
    this.#options = withDefaults({
      cancelPollMs: 250,
      ownerLiveTasks: 8,
      retryAfterS: 30,
      progressBytes: DEFAULT_PROGRESS_BYTES,
      workspace: new WorkspacePolicy({
        forbidden: [options.ledger.home],
        home: options.ledger.home,
      }),
    }, options);
    this.#ownsHost = options.host === undefined;
    this.#host = options.host ?? new HostLease(options.ledger);
    this.#cancelPoll = new CancelPoll({
      live: this.#live,
      asked: (ids) => this.#cancelsAsked(ids),
      reason: () => new StopReason("cancelled", "the task was cancelled"),
      pollMs: this.#options.cancelPollMs,
    });
  }

  /** Which of the running tasks `ids` another process asked to cancel. */
  async #cancelsAsked(ids: string[]): Promise<string[]> {
    const running = ids.filter((id) => this.#live.get(id)?.status.state === "running");
    const stored = await Promise.all(running.map((id) => this.#options.ledger.getTask(id)));
    return stored.flatMap((task) => task?.cancel_requested ? [task.task_id] : []);
  }

  /**
   * Marks `interrupted` the running tasks whose process died (never this one's). Returns
   * their ids. A long-lived host calls it now and then, not only at start-up.
   */
  recover(): Promise<string[]> {
    return this.#options.ledger.recoverInterruptedTasks(this.#host.ref);
  }

  #parse(input: unknown): DispatchTaskRequest {
    const parsed = DispatchRequestSchema.safeParse(input);
    if (!parsed.success) {
      throw new SvcError("invalid_request", `Cannot dispatch: ${describeIssue(parsed.error)}`);
    }
    return parsed.data;
  }

  /**
   * Records a task of the caller in the queue without running it: a worker (the daemon's, or
   * a process started for it) claims it with `work()`; only one ever runs it.
   */
  enqueue(
    input: unknown,
    caller: Caller,
    options: { trigger?: WorkTrigger } = {},
  ): Promise<TaskStatus> {
    if (!caller.remote) return this.#create(input, caller, { queue: true, ...options });
    // The ledger counts the owner's live tasks, queued ones included, every host's.
    const next = this.#enqueueTurn.then(() =>
      this.#create(input, caller, { queue: true, capped: true, ...options })
    );
    this.#enqueueTurn = next.catch(() => {});
    return next;
  }

  /**
   * Throws the `rate_limited` refusal a dispatch of `caller` would get now, taking nothing (a
   * surface that must refuse before it answers); {@linkcode start} admits the task again.
   */
  async checkAdmission(caller: Caller): Promise<void> {
    if (!caller.remote) return;
    const held = await this.#held(caller.owner);
    if (held >= this.#options.ownerLiveTasks) throw this.#refusal(caller.owner, held);
  }

  /**
   * How many live tasks the owner has on every host sharing the ledger, and the cap of a
   * remote caller.
   */
  async liveTasks(owner: string): Promise<{ used: number; cap: number }> {
    return { used: await this.#held(owner), cap: this.#options.ownerLiveTasks };
  }

  /** The owner's live tasks: the ledger's count, or this process's while its records are on the way. */
  async #held(owner: string): Promise<number> {
    const counted = await this.#options.ledger.countOwnerTasks(owner);
    return Math.max(counted, this.#owners.count(owner));
  }

  /** The refusal of a dispatch beyond a remote owner's cap of live tasks. */
  #refusal(owner: string, held: number): SvcError {
    const after = this.#options.retryAfterS;
    return new SvcError(
      "rate_limited",
      `Cannot dispatch: owner '${owner}' has ${held} live tasks, the most allowed (admission.owner_live_tasks); retry in ${after} s`,
      { retryAfterS: after },
    );
  }

  async #create(
    input: unknown,
    caller: Caller,
    options: { queue: boolean; trigger?: WorkTrigger; capped?: boolean },
  ): Promise<TaskStatus> {
    const parsed = this.#parse(input);
    if (parsed.prompt.length > PROMPT_LIMIT) {
      throw new SvcError(
        "invalid_request",
        `Cannot dispatch: 'prompt' is over ${PROMPT_LIMIT} characters`,
      );
    }
    // A remote caller's workdir is checked and made real before anything runs in it (a queued
    // task keeps the checked path, so its worker need not check it again).
    const workdir = await this.#options.workspace.workdirFor(caller, parsed.workdir, {
      what: "workdir",
      scratch: true,
    });
    const request = workdir === undefined ? parsed : { ...parsed, workdir };
    const { prompt, timeout, fake_dispatch, schema_attempts, ...agentOptions } = request;
    const task = newTaskStatus({
      owner: caller.owner,
      prompt,
      options: JSON.parse(JSON.stringify(agentOptions)) as Record<string, JsonValue>,
      label: agentOptions.label ?? null,
      timeout,
      fake_dispatch,
      schema_attempts,
      ...(options.trigger ? { trigger: options.trigger } : {}),
    });
    // The host's record is written before the task's slot names it, so that no other host
    // takes the slot for a dead host's.
    const release = await this.#host.hold();
    let recorded: boolean;
    try {
      recorded = await this.#options.ledger.createTask(task, {
        queue: options.queue,
        host: this.#host.ref,
        ...(options.capped ? { ownerCap: this.#options.ownerLiveTasks } : {}),
      });
    } finally {
      release();
    }
    if (!recorded) throw this.#refusal(caller.owner, await this.#held(caller.owner));
    return task;
  }

  /** Records a task of the caller and runs it in this process; returns its first status (`queued`) at once. */
  async start(input: unknown, caller: Caller): Promise<TaskStatus> {
    // Taken before anything is awaited, so that racing dispatches never pass the cap together.
    const hold = caller.remote
      ? this.#owners.tryHold(caller.owner, this.#options.ownerLiveTasks)
      : this.#owners.hold(caller.owner);
    if (!hold) throw this.#refusal(caller.owner, this.#owners.count(caller.owner));
    let task: TaskStatus;
    try {
      task = await this.#create(input, caller, { queue: false, capped: caller.remote === true });
    } catch (error) {
      hold();
      throw error;
    }
    const started = structuredClone(task);
    this.#begin(task).done.finally(hold).catch(() => {});
    return started;
  }

  /** Runs a queued task in this process (a worker's job). Refuses one that is not queued. */
  async work(taskId: string, caller: Caller): Promise<TaskStatus> {
    const task = await this.#visible(taskId, caller, "work on");
    if (task.state !== "queued") {
      throw new SvcError("conflict", `Cannot work on task '${taskId}': it is ${task.state}`);
    }
    return await this.#begin(task).done;
  }

  /**
   * Claims a queued task (atomically: one claimant wins) and runs it in this process. Resolves
   * once the claim is decided: with the promise of the task's end, or undefined when it was
   * not queued or another worker took it. A daemon's queue worker calls it.
   */
  async claim(taskId: string): Promise<{ done: Promise<TaskStatus> } | undefined> {
    if (!isId("task", taskId) || this.#live.has(taskId)) return undefined;
    const task = await this.#options.ledger.getTask(taskId);
    if (!task || task.state !== "queued") return undefined;
    const live = this.#begin(task);
    return (await live.claimed) ? { done: live.done } : undefined;
  }

  #begin(task: TaskStatus): LiveTask {
    let onClaim: (won: boolean) => void = () => {};
    const claimed = new Promise<boolean>((resolve) => onClaim = resolve);
    const live: LiveTask = {
      status: task,
      controller: new AbortController(),
      done: Promise.resolve(task),
      eventSeq: 1,
      progressWrites: Promise.resolve(),
      claimed,
      onClaim,
    };
    this.#live.set(task.task_id, live);
    live.done = this.#run(live);
    // A claim still undecided when the run ends (it threw first) was lost.
    live.done.finally(() => live.onClaim(false)).catch(() => {});
    return live;
  }

  async #save(
    live: LiveTask,
    options: { expect?: TaskState; approval?: TaskApprovalNote } = {},
  ): Promise<boolean> {
    const seq = live.eventSeq++;
    return await this.#options.ledger.saveTask(live.status, {
      eventSeq: seq,
      expect: options.expect,
      ...(options.approval ? { approval: options.approval } : {}),
    });
  }

  /** Saves the task with an approval event, keeping a cancel another process asked for meanwhile. */
  async #saveApproval(live: LiveTask, note: TaskApprovalNote): Promise<void> {
    const stored = await this.#options.ledger.getTask(live.status.task_id);
    if (stored?.cancel_requested) live.status.cancel_requested = true;
    await this.#save(live, { approval: note });
  }

  /**
   * A dispatch that asked for `full` under `sandbox.full: "ask"` waits here for a person, with
   * its status saying so (`waiting_for_approval`) and its feed getting an event when it starts
   * waiting and when the approval is decided. A denial fails the task (`forbidden`); a stop
   * (cancel, timeout) cancels the approval and ends the task as any stop does.
   */
  async #awaitApproval(
    live: LiveTask,
    options: DispatchTaskRequest,
    signal: AbortSignal,
  ): Promise<void> {
    const { status } = live;
    const asked = await requestApproval(this.#options.ledger, {
      owner: status.owner,
      kind: "dispatch",
      task_id: status.task_id,
      prompt: status.prompt,
      ...(status.label !== null ? { label: status.label } : {}),
      ...(options.provider !== undefined ? { provider: options.provider } : {}),
    });
    status.waiting_for_approval = asked.approval_id;
    const note = (approval: ApprovalRecord): TaskApprovalNote => ({
      approval_id: approval.approval_id,
      state: approval.state,
      at: approval.decided_at ?? approval.asked_at,
      ...(approval.decided_by !== undefined ? { decided_by: approval.decided_by } : {}),
      ...(approval.reason !== undefined ? { reason: approval.reason } : {}),
    });
    await this.#saveApproval(live, note(asked));
    const decided = await waitForDecision(this.#options.ledger, asked.approval_id, {
      signal,
      pollMs: this.#options.cancelPollMs,
    });
    delete status.waiting_for_approval;
    await this.#saveApproval(live, note(decided));
    signal.throwIfAborted();
    if (decided.state !== "approved") {
      throw new SvcError("forbidden", `Cannot dispatch: ${denialText(decided)}`);
    }
  }

  /**
   * Claims a queued task for this process: saves it running if it is still queued. A cancel
   * asked meanwhile (`cancel_requested`) changes the record but not its state, so the claim is
   * tried again with the request kept; the run then ends cancelled. False when another host
   * claimed it or it ended while queued.
   */
  async #claim(live: LiveTask): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      if (await this.#save(live, { expect: "queued" })) return true;
      // The failed write took no event number.
      live.eventSeq--;
      const stored = await this.#options.ledger.getTask(live.status.task_id);
      if (!stored || stored.state !== "queued") return false;
      if (stored.cancel_requested) live.status.cancel_requested = true;
    }
    return false;
  }

  async #run(live: LiveTask): Promise<TaskStatus> {
    const { status, controller } = live;
    await new Promise((resolve) => setTimeout(resolve, 0));
    let release: () => void;
    try {
      release = await this.#host.hold();
    } catch (error) {
      this.#live.delete(status.task_id);
      live.onClaim(false);
      throw error;
    }
    status.state = "running";
    status.started_at = now();
    status.host_id = this.#host.ref.id;
    if (!(await this.#claim(live))) {
      // Someone else claimed it, or it was cancelled while queued.
      this.#live.delete(status.task_id);
      release();
      live.onClaim(false);
      return (await this.#options.ledger.getTask(status.task_id)) ?? status;
    }
    live.onClaim(true);
    const timer = setTimeout(
      () =>
        controller.abort(
          new StopReason("timeout", `the task exceeded its timeout of ${status.timeout} s`),
        ),
      status.timeout * 1000,
    );
    this.#cancelPoll.start();
    try {
      const outcome = await this.#dispatch(live, controller.signal);
      settleTask(status, outcome);
      status.state = "succeeded";
      status.result = outcome.output;
    } catch (error) {
      const reason = controller.signal.aborted ? controller.signal.reason : error;
      if (reason instanceof StopReason) {
        status.state = reason.state;
        status.error = { code: reason.code, message: reason.message };
      } else {
        if (error instanceof ProviderError) {
          status.provider = error.provider;
          status.route = error.route.reason;
        }
        status.state = "failed";
        status.error = error instanceof SvcError
          ? { code: error.code, message: error.message }
          : { code: "internal", message: "the provider failed" };
      }
    } finally {
      clearTimeout(timer);
    }
    status.ended_at = now();
    status.host_id = null;
    await this.#saveEnd(live).finally(release);
    // The ledger has it now; a long-lived host must not keep every task it ever ran.
    this.#live.delete(status.task_id);
    return status;
  }

  /**
   * Saves a task's end, until the ledger takes it ({@linkcode writeUntilTaken}): until then the
   * task is answered from memory, never `running` for a reader.
   */
  async #saveEnd(live: LiveTask): Promise<void> {
    const seq = live.eventSeq;
    await writeUntilTaken(async () => {
      // A failed commit applied nothing: the next attempt takes the same event number.
      live.eventSeq = seq;
      await this.#save(live);
    }, { signal: this.#closed.signal });
  }

  /**
   * The task's call. A schema call (`schema` or `schema_id`) is validated, and asked again up
   * to `schema_attempts` times; every attempt's usage counts.
   */
  async #dispatch(live: LiveTask, signal: AbortSignal): Promise<DispatchOutcome> {
    const { status } = live;
    const { dispatcher, sessions, workspace } = this.#options;
    const { options, system, schema, cwdRoot } = await prepareTaskCall(status, {
      workspace,
      home: this.#options.ledger.home,
    });
    // Asked once, before the first attempt: schema retries of an approved call do not ask again.
    const fullApproved = dispatcher.admit(options, taskContext(status, options))
      .needsApproval === true;
    if (fullApproved) await this.#awaitApproval(live, options, signal);
    const bytes = this.#options.progressBytes;
    const progress = new ProgressRecorder((items) => this.#saveProgress(live, items), {
      budgetBytes: bytes,
    });
    try {
      const step = await structuredStep(schema, {
        attempts: status.schema_attempts,
        options,
        once: (options) =>
          dispatchTaskOnce({ dispatcher, sessions }, status, options, {
            signal,
            system,
            fullApproved,
            ...(cwdRoot !== undefined ? { cwdRoot } : {}),
            ...(bytes > 0 ? { onProgress: progress.listener } : {}),
          }),
      });
      if (step.ok) return step.outcome;
      throw stepFailure(status, step);
    } finally {
      progress.close();
      await live.progressWrites;
    }
  }

  /**
   * Queues one progress event behind the task's earlier ones. Live output is for watching: a
   * write that fails is dropped (its event number reused), and the task goes on.
   */
  #saveProgress(live: LiveTask, items: CallProgress[]): void {
    live.progressWrites = live.progressWrites.then(async () => {
      const eventSeq = live.eventSeq++;
      try {
        await this.#options.ledger.appendTaskProgress(live.status.task_id, {
          eventSeq,
          at: now(),
          items,
        });
      } catch {
        live.eventSeq = eventSeq;
      }
    });
  }

  /** A task's status; undefined alike for an unknown id and a task the caller may not see. */
  async get(taskId: string, caller: Caller): Promise<TaskStatus | undefined> {
    if (!isId("task", taskId)) return undefined;
    const live = this.#live.get(taskId);
    const task = live ? structuredClone(live.status) : await this.#options.ledger.getTask(taskId);
    if (!task || !mayAccess(caller, task.owner)) return undefined;
    return task;
  }

  async #visible(taskId: string, caller: Caller, action: string): Promise<TaskStatus> {
    return requireVisible(await this.get(taskId, caller), { kind: "task", id: taskId, action });
  }

  /**
   * The task's event feed (its state changes): replays from `after`, then follows it live,
   * wherever it runs, until its terminal state or `signal`.
   */
  async *events(
    taskId: string,
    caller: Caller,
    options: { after?: number; signal?: AbortSignal; follow?: boolean } = {},
  ): AsyncGenerator<FeedItem<TaskEvent>> {
    await this.#visible(taskId, caller, "follow");
    const feed = followEvents(this.#options.ledger, { kind: "task", id: taskId }, {
      ...options,
      onIdle: async () => {
        await this.recover();
      },
    });
    for await (const item of feed) yield item as FeedItem<TaskEvent>;
  }

  /**
   * The caller's tasks (everyone's for an administrator), newest first; with `before` (a task
   * id), only older ones. Anything but a task id as `before` is refused with `invalid_request`.
   */
  list(caller: Caller, options: { limit?: number; before?: string } = {}): Promise<TaskStatus[]> {
    return this.#options.ledger.listTasks(ownerQuery(caller, options));
  }

  /** Resolves with the task's final status, wherever it runs. */
  async wait(
    taskId: string,
    caller: Caller,
    options: { signal?: AbortSignal } = {},
  ): Promise<TaskStatus> {
    // A queued task can start here while its end is being followed: then its feed may end
    // before its status in memory does (a cancel of the queued task), so look again.
    for (;;) {
      const live = this.#live.get(taskId);
      if (live && mayAccess(caller, live.status.owner)) {
        const status = structuredClone(await live.done);
        // A run that lost its claim ends with the ledger's status: another host may run it.
        if (isTerminal(status.state)) return status;
      }
      const task = await this.#visible(taskId, caller, "wait for");
      if (isTerminal(task.state)) return task;
      await followToEnd(this.events(taskId, caller, options), {
        what: `task '${taskId}'`,
        signal: options.signal,
      });
    }
  }

  /**
   * Cancels a task: idempotent, whatever its state. A running task stops (its agent's process
   * group is killed) and ends `cancelled`; a queued one never starts; an ended one is left as it is.
   */
  async cancel(taskId: string, caller: Caller): Promise<TaskStatus> {
    const task = await this.#visible(taskId, caller, "cancel");
    if (isTerminal(task.state)) return task;
    await this.#options.ledger.requestCancel(taskId);
    const live = this.#live.get(taskId);
    if (live) {
      live.controller.abort(new StopReason("cancelled", "the task was cancelled"));
      return structuredClone(await live.done);
    }
    if (task.state === "queued") {
      const stored = (await this.#options.ledger.getTask(taskId))!;
      const cancelled: TaskStatus = {
        ...stored,
        state: "cancelled",
        ended_at: now(),
        error: { code: "cancelled", message: "the task was cancelled before it started" },
      };
      if (await this.#options.ledger.saveTask(cancelled, { eventSeq: 1, expect: "queued" })) {
        return cancelled;
      }
    }
    return (await this.#options.ledger.getTask(taskId))!;
  }

  /** Cancels the tasks running in this process and waits for them. */
  async close(): Promise<void> {
    this.#closed.abort();
    await stopLive(this.#live.values(), new StopReason("cancelled", "the host is shutting down"));
    this.#cancelPoll.stop();
    if (this.#ownsHost) await this.#host.close();
  }
}

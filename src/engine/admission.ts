/**
 * Admission control of workflow runs (docs/SECURITY.md, "Capacity"): a cap on the guests live
 * in this host process, a bounded queue behind it drained fairly (owners take turns), per-owner
 * caps for remote callers, and the longest timeout a remote caller may ask for. The run
 * manager asks it before recording a run and tells it when a run ends. An owner's live runs
 * are counted by the ledger, every host's together: this process's own count is what it knows
 * without a read, and the ledger's record of a run takes the owner's slot, or refuses to.
 * @module
 */
import { type GaugeRelease, OwnerGauge } from "../concurrency/mod.ts";
import { SvcError } from "../errors/mod.ts";
import type { Caller, QueueItem } from "../ledger/mod.ts";
import {
  DEFAULT_RUN_TIMEOUT_S,
  MAX_AGENTS_LIMIT,
  RUN_CONCURRENCY_CEILING,
} from "../schemas/mod.ts";

/** The caps of {@linkcode RunAdmission}. */
export interface RunAdmissionLimits {
  /** Runs executing in this host process at once, every caller's. */
  hostLiveGuests: number;
  /** Runs waiting in the ledger's queue, every owner's together. */
  hostQueuedRuns: number;
  /**
   * Live runs of one owner on every host sharing the ledger: remote callers' starts, and every
   * queued run's.
   */
  ownerLiveRuns: number;
  /** Queued runs of one remote owner. */
  ownerQueuedRuns: number;
  /** The longest timeout a remote caller may ask for, in seconds. */
  maxRemoteTimeoutS: number;
  /** The `Retry-After` of a refusal, in seconds. */
  retryAfterS: number;
  /** The most `agent()` calls a script's meta or a run's options may raise a run to. */
  maxRunAgents: number;
  /** The most simultaneous calls a script's meta or a run's options may raise a run to. */
  maxRunConcurrency: number;
}

/**
 * The defaults, sized for a 2-core, 24 GiB machine from the scale bench (docs/BENCHMARKS.md,
 * "Scale of one host"): 32 guests of up to 512 MiB of heap take 16 GiB at most (about 1.3 GiB
 * as measured while they wait on calls), leaving 8 GiB for the host, the harnesses they drive
 * and the system; one owner gets half of them.
 */
export const DEFAULT_RUN_ADMISSION: RunAdmissionLimits = {
  hostLiveGuests: 32,
  hostQueuedRuns: 200,
  ownerLiveRuns: 16,
  ownerQueuedRuns: 20,
  maxRemoteTimeoutS: 6 * 3600,
  retryAfterS: 30,
  maxRunAgents: MAX_AGENTS_LIMIT,
  maxRunConcurrency: RUN_CONCURRENCY_CEILING,
};

/** What a decision reads from the ledger, when it must. */
export interface AdmissionReads {
  /** The runs in the ledger's queue, every owner's, oldest first. */
  queued: () => Promise<readonly QueueItem[]>;
  /** The owner's live runs on every host sharing the ledger. */
  ownerLive: (owner: string) => Promise<number>;
}

/** Where a new run goes: it runs now, or waits in the queue. */
export type Placement = "run" | "queue";

/** How full the run caps are, for `/api/status`. */
export interface RunAdmissionSnapshot {
  /** Runs executing in this process, and the cap. */
  host_live: { used: number; cap: number };
  /** Runs in the queue (every owner's), and the cap. */
  host_queued: { used: number; cap: number };
  /** The owner's live runs on every host sharing the ledger, and the cap of a remote caller. */
  owner_live: { used: number; cap: number };
  /** The owner's queued runs, and the cap of a remote caller. */
  owner_queued: { used: number; cap: number };
  /** The longest timeout of a remote caller's run, in seconds. */
  max_remote_timeout_s: number;
}

/**
 * Queued items in the order the queue is drained: owners take turns (round-robin), so that the
 * k-th queued run of every owner comes before the (k+1)-th of any. Owners are in the order of
 * their oldest queued item, rotated to start after `lastServed` (the owner whose run started
 * last), so that an owner served last waits for every other owner's turn.
 */
export function fairOrder<T extends { owner: string }>(
  items: readonly T[],
  lastServed?: string,
): T[] {
  const byOwner = new Map<string, T[]>();
  for (const item of items) {
    const queue = byOwner.get(item.owner);
    if (queue) queue.push(item);
    else byOwner.set(item.owner, [item]);
  }
  const owners = [...byOwner.keys()];
  const after = lastServed === undefined ? -1 : owners.indexOf(lastServed);
  const rotated = [...owners.slice(after + 1), ...owners.slice(0, after + 1)];
  const out: T[] = [];
  for (let round = 0; out.length < items.length; round++) {
    for (const owner of rotated) {
      const item = byOwner.get(owner)![round];
      if (item !== undefined) out.push(item);
    }
  }
  return out;
}

/** Admission of runs into one run manager: see the module. */
export class RunAdmission {
  #limits: RunAdmissionLimits;
  /** Runs executing in this process, by owner. */
  readonly #live = new OwnerGauge();
  readonly #liveHolds = new Map<string, GaugeRelease>();
  /** Runs this process queued for want of a slot: it starts them as slots free (oldest first). */
  readonly #waiting = new Map<string, string>();
  /**
   * Runs placed in the queue whose record is not written yet. They hold their owner's turn like
   * waiting runs, but no freed slot goes to them: the ledger has no queued run to claim yet, and
   * a claim that finds none takes the run for another worker's and forgets it, leaving it queued
   * with no one to start it (`recorded` makes them startable).
   */
  readonly #recording = new Map<string, string>();
  /** The owner whose queued run this process started last: the next turn is another's. */
  #lastServed: string | undefined;
  /**
   * Owners whose queued runs found the owner's live slots taken by other hosts: their runs are
   * not offered again until {@linkcode unblock} (a slot of theirs freed, or the next look).
   */
  readonly #blocked = new Set<string>();
  /** Decisions one at a time: a decision reads the queue and records a run before the next. */
  #turn: Promise<unknown> = Promise.resolve();

  /** Admission with `limits` (the defaults for those not given). */
  constructor(limits: Partial<RunAdmissionLimits> = {}) {
    this.#limits = { ...DEFAULT_RUN_ADMISSION, ...limits };
  }

  /** The caps. */
  get limits(): RunAdmissionLimits {
    return this.#limits;
  }

  /**
   * Takes reloaded caps (the defaults for those not given): later decisions use them; runs
   * already live or queued stay where they are (a raised cap admits queued runs as slots free).
   */
  configure(limits: Partial<RunAdmissionLimits>): void {
    this.#limits = { ...DEFAULT_RUN_ADMISSION, ...limits };
  }

  /**
   * The request of a remote caller with its timeout bounded: one above the maximum is refused
   * (`invalid_argument`), one not given (or the default) gets the default, at most the maximum. Other callers'
   * requests (and anything that is not an object, left to the schema) are returned unchanged.
   */
  boundTimeout(input: unknown, caller: Caller): unknown {
    if (!caller.remote || input === null || typeof input !== "object" || Array.isArray(input)) {
      return input;
    }
    const max = this.limits.maxRemoteTimeoutS;
    const { timeout } = input as { timeout?: unknown };
    // A surface's schema may have filled the default in: it counts as no timeout asked for.
    if (timeout === undefined || timeout === DEFAULT_RUN_TIMEOUT_S) {
      return { ...input, timeout: Math.min(DEFAULT_RUN_TIMEOUT_S, max) };
    }
    if (typeof timeout === "number" && timeout > max) {
      throw new SvcError(
        "invalid_argument",
        `Cannot start the run: a timeout of ${timeout} s is more than the ${max} s the operator allows remote callers (admission.max_remote_timeout_s)`,
      );
    }
    return input;
  }

  /** Runs `decide` after every decision before it has ended (reading the queue, recording). */
  serial<T>(decide: () => Promise<T>): Promise<T> {
    const next = this.#turn.then(decide, decide);
    this.#turn = next.catch(() => {});
    return next;
  }

  /**
   * Where a new run `runId` of `caller` goes, given the queued runs of the ledger: it runs now
   * (a live slot is taken for it) while the host, and for a remote caller its owner, is under
   * the live cap and the owner has none waiting; else it queues (this process starts it when a
   * slot frees) while the queue, and a remote owner's share of it, is under its cap. Beyond
   * that: `rate_limited` with a `Retry-After`.
   */
  async place(
    caller: Caller,
    runId: string,
    reads: AdmissionReads,
  ): Promise<Placement> {
    const placement = await this.#decide(caller, reads);
    if (placement === "run") this.#takeLive(runId, caller.owner);
    else this.#recording.set(runId, caller.owner);
    return placement;
  }

  /**
   * Places in the queue the run `runId` of `caller` that {@linkcode place} let run but whose
   * record found the owner's live slots taken (by other hosts, meanwhile): its live slot here
   * is given back, and it queues while the queue's caps allow, else `rate_limited`.
   */
  async requeue(caller: Caller, runId: string, reads: AdmissionReads): Promise<void> {
    this.release(runId);
    await this.#queueOrRefuse(caller, reads);
    this.#recording.set(runId, caller.owner);
  }

  /**
   * Tells that the run `runId` placed in the queue is recorded there: from now on a freed slot
   * may go to it (the caller then starts what {@linkcode startable} gives).
   */
  recorded(runId: string): void {
    const owner = this.#recording.get(runId);
    if (owner === undefined) return;
    this.#recording.delete(runId);
    this.#waiting.set(runId, owner);
  }

  /**
   * Throws the refusal {@linkcode place} would give a new run of `caller` now, taking nothing:
   * for a surface that must refuse before it answers (an A2A send becomes a JSON-RPC error,
   * not a rejected task). The run itself is admitted again when it starts.
   */
  async check(caller: Caller, reads: AdmissionReads): Promise<void> {
    await this.#decide(caller, reads);
  }

  /**
   * Where a new run of `caller` would go, or the refusal; nothing is taken. The ledger's queue
   * is read only when the run cannot start at once; a local run under the live caps, the common
   * case, costs no read, and a remote caller's one read of its owner's live runs (the record
   * checks them again, atomically).
   */
  async #decide(caller: Caller, reads: AdmissionReads): Promise<Placement> {
    const { owner } = caller;
    const remote = caller.remote === true;
    // This process's own count first: it needs no read, and holds runs not recorded yet.
    const underLive = this.#live.total < this.limits.hostLiveGuests &&
      (!remote || this.#live.count(owner) < this.limits.ownerLiveRuns) &&
      !this.#queuesFor(owner);
    if (underLive && (!remote || await reads.ownerLive(owner) < this.limits.ownerLiveRuns)) {
      return "run";
    }
    await this.#queueOrRefuse(caller, reads);
    return "queue";
  }

  /** Refuses a run of `caller` that must queue when the queue, or the owner's share, is full. */
  async #queueOrRefuse(caller: Caller, reads: AdmissionReads): Promise<void> {
    const { owner } = caller;
    const queued = await reads.queued();
    const mine = queued.filter((item) => item.owner === owner).length;
    if (queued.length >= this.limits.hostQueuedRuns) {
      throw this.#refusal(
        `the host's queue holds ${queued.length} runs, the most allowed (admission.host_queued_runs)`,
      );
    }
    if (caller.remote === true && mine >= this.limits.ownerQueuedRuns) {
      const live = Math.max(this.#live.count(owner), await reads.ownerLive(owner));
      throw this.#refusal(
        `owner '${owner}' has ${live} live runs and ${mine} queued, the most allowed (admission.owner_live_runs, admission.owner_queued_runs)`,
      );
    }
  }

  /**
   * Checks a run for a worker's queue (no live slot is taken): the host's queue, and for a
   * remote caller its owner's share of it, must be under their caps.
   */
  checkQueue(caller: Caller, queued: readonly QueueItem[]): void {
    if (queued.length >= this.limits.hostQueuedRuns) {
      throw this.#refusal(
        `the host's queue holds ${queued.length} runs, the most allowed (admission.host_queued_runs)`,
      );
    }
    const mine = queued.filter((item) => item.owner === caller.owner).length;
    if (caller.remote && mine >= this.limits.ownerQueuedRuns) {
      throw this.#refusal(
        `owner '${caller.owner}' has ${mine} queued runs, the most allowed (admission.owner_queued_runs)`,
      );
    }
  }

  /**
   * Takes a live slot for the queued run `runId` of `owner` about to be claimed: false when
   * the host or the owner is at the live cap (queued runs of every owner take turns).
   */
  tryClaim(runId: string, owner: string, options: { force?: boolean } = {}): boolean {
    if (this.#liveHolds.has(runId)) return false;
    const full = this.#live.total >= this.limits.hostLiveGuests ||
      this.#live.count(owner) >= this.limits.ownerLiveRuns;
    if (full && !options.force) return false;
    this.#takeLive(runId, owner);
    this.#lastServed = owner;
    return true;
  }

  /**
   * Gives back the live slot taken for the queued run `runId` whose claim found its owner's
   * slots taken by other hosts: the run goes on waiting, and its owner's runs are not offered
   * again until {@linkcode unblock}.
   */
  blocked(runId: string, owner: string): void {
    this.#liveHolds.get(runId)?.();
    this.#liveHolds.delete(runId);
    this.#blocked.add(owner);
  }

  /** Offers the queued runs of `owner` (of every owner without it) again. */
  unblock(owner?: string): void {
    if (owner === undefined) this.#blocked.clear();
    else this.#blocked.delete(owner);
  }

  /** Whether queued runs wait for slots that other hosts hold. */
  get blockedOwners(): number {
    return this.#blocked.size;
  }

  /** Frees the live slot of `runId` (it ended, or its claim failed), and forgets its wait. */
  release(runId: string): void {
    this.#liveHolds.get(runId)?.();
    this.#liveHolds.delete(runId);
    this.#waiting.delete(runId);
    this.#recording.delete(runId);
  }

  /** Whether `owner` has runs this process queued (recorded or not): its next run queues too. */
  #queuesFor(owner: string): boolean {
    for (const waiting of [this.#waiting, this.#recording]) {
      for (const queued of waiting.values()) if (queued === owner) return true;
    }
    return false;
  }

  /** The owner of a run this process queued and waits to start; undefined for any other. */
  ownerWaiting(runId: string): string | undefined {
    return this.#waiting.get(runId);
  }

  /**
   * Waits to start the queued run `runId` of `owner` as if this process had queued it; false
   * when it already waits for it or runs it.
   */
  adopt(runId: string, owner: string): boolean {
    if (this.#waiting.has(runId) || this.#recording.has(runId) || this.#liveHolds.has(runId)) {
      return false;
    }
    this.#waiting.set(runId, owner);
    return true;
  }

  /** Forgets that this process waits to start `runId` (another worker took it, or it ended). */
  forgetWaiting(runId: string): void {
    this.#waiting.delete(runId);
  }

  /**
   * The runs this process queued that may start now, in the fair order: those of owners under
   * the live cap, as many as the host has free slots.
   */
  startable(): { runId: string; owner: string }[] {
    const free = this.limits.hostLiveGuests - this.#live.total;
    if (free <= 0) return [];
    const waiting = [...this.#waiting].map(([runId, owner]) => ({ runId, owner }));
    return fairOrder(waiting, this.#lastServed)
      .filter((run) =>
        !this.#blocked.has(run.owner) && this.#live.count(run.owner) < this.limits.ownerLiveRuns
      )
      .slice(0, free);
  }

  /** The 1-based place of `runId` in the fair order of `queued`; undefined when not in it. */
  position(runId: string, queued: readonly QueueItem[]): number | undefined {
    const index = fairOrder(queued, this.#lastServed).findIndex((item) => item.id === runId);
    return index < 0 ? undefined : index + 1;
  }

  /** How full the caps are, for `owner`, whose live runs on every host are `ownerLive`. */
  snapshot(owner: string, queued: readonly QueueItem[], ownerLive: number): RunAdmissionSnapshot {
    const { limits } = this;
    return {
      host_live: { used: this.#live.total, cap: limits.hostLiveGuests },
      host_queued: { used: queued.length, cap: limits.hostQueuedRuns },
      owner_live: {
        used: Math.max(this.#live.count(owner), ownerLive),
        cap: limits.ownerLiveRuns,
      },
      owner_queued: {
        used: queued.filter((item) => item.owner === owner).length,
        cap: limits.ownerQueuedRuns,
      },
      max_remote_timeout_s: limits.maxRemoteTimeoutS,
    };
  }

  #takeLive(runId: string, owner: string): void {
    this.#liveHolds.set(runId, this.#live.hold(owner));
  }

  #refusal(state: string): SvcError {
    const after = this.limits.retryAfterS;
    return new SvcError("rate_limited", `Cannot start the run: ${state}; retry in ${after} s`, {
      retryAfterS: after,
    });
  }
}

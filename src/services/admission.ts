/**
 * Admission control as the surfaces see it (docs/SECURITY.md, "Capacity"): the caps on open
 * event streams of remote callers, and how full every cap is, for `/api/status` and the page.
 * Runs and tasks are admitted by their managers, with the caps passed from the configuration.
 * @module
 */
import { OwnerGauge } from "../concurrency/mod.ts";
import type { AdmissionConfig } from "../config/mod.ts";
import type { TaskManager } from "../tasks/mod.ts";
import type { RunAdmissionLimits, RunAdmissionSnapshot, RunManager } from "../engine/mod.ts";
import { SvcError } from "../errors/mod.ts";
import type { Caller } from "../ledger/mod.ts";

/** How full the caps are, host-wide and for one owner. */
export interface AdmissionSnapshot extends RunAdmissionSnapshot {
  /** The owner's live tasks on every host sharing the ledger, and the cap of a remote caller. */
  owner_tasks: { used: number; cap: number };
  /** The owner's open event streams in this process, and the cap of a remote caller. */
  owner_streams: { used: number; cap: number };
}

/** Options of {@linkcode Admission}. */
export interface AdmissionOptions {
  /** The caps (the configuration's `admission`). */
  config: AdmissionConfig;
  /** The run manager, which admits runs. */
  runs: RunManager;
  /** The task manager, which admits tasks. */
  tasks: TaskManager;
}

/** The caps every surface goes through for what is not a run or a task: event streams. */
export class Admission {
  #config: AdmissionConfig;
  readonly #runs: RunManager;
  readonly #tasks: TaskManager;
  readonly #streams = new OwnerGauge();

  /** Admission over the caps and managers of `options`. */
  constructor(options: AdmissionOptions) {
    this.#config = options.config;
    this.#runs = options.runs;
    this.#tasks = options.tasks;
  }

  /**
   * Takes reloaded caps: later runs, dispatches and event streams are admitted by them; what is
   * open or running stays.
   */
  configure(config: AdmissionConfig): void {
    this.#config = config;
    this.#runs.configureAdmission(runAdmissionOf(config));
    this.#tasks.configureAdmission({
      ownerLiveTasks: config.owner_live_tasks,
      retryAfterS: config.retry_after_s,
    });
  }

  /**
   * Opens an event stream for `caller` (SSE, long poll): the returned release closes it. A
   * remote caller whose owner has `owner_event_streams` open is refused with `rate_limited`.
   */
  openStream(caller: Caller): () => void {
    if (!caller.remote) return this.#streams.hold(caller.owner);
    const cap = this.#config.owner_event_streams;
    const hold = this.#streams.tryHold(caller.owner, cap);
    if (hold) return hold;
    const after = this.#config.retry_after_s;
    throw new SvcError(
      "rate_limited",
      `Cannot open the event stream: owner '${caller.owner}' has ${cap} open, the most allowed (admission.owner_event_streams); retry in ${after} s`,
      { retryAfterS: after },
    );
  }

  /** How full every cap is, host-wide and for the caller's owner. */
  async snapshot(caller: Caller): Promise<AdmissionSnapshot> {
    return {
      ...(await this.#runs.admission(caller)),
      owner_tasks: await this.#tasks.liveTasks(caller.owner),
      owner_streams: {
        used: this.#streams.count(caller.owner),
        cap: this.#config.owner_event_streams,
      },
    };
  }
}

/** The run manager's admission settings from the configuration's `admission`. */
export function runAdmissionOf(config: AdmissionConfig): RunAdmissionLimits {
  return {
    hostLiveGuests: config.host_live_guests,
    hostQueuedRuns: config.host_queued_runs,
    ownerLiveRuns: config.owner_live_runs,
    ownerQueuedRuns: config.owner_queued_runs,
    maxRemoteTimeoutS: config.max_remote_timeout_s,
    retryAfterS: config.retry_after_s,
    maxRunAgents: config.max_run_agents,
    maxRunConcurrency: config.max_run_concurrency,
  };
}

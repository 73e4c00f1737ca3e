import { Semaphore } from "../concurrency/mod.ts";
import type {
  JournalEntry,
  Ledger,
  LedgerOp,
  NarrationEntry,
  RunCondition,
  RunEvent,
  RunState,
  RunStatus,
  SecurityEvent,
  StoredEvent,
} from "../ledger/mod.ts";
import type { WorkflowRunRequest } from "../schemas/mod.ts";
import type { BudgetGate } from "./budget.ts";
import type { AgentReply } from "./guest_session.ts";
import type { ReplaySource } from "./journal.ts";

/** Hears every event of a run. */
export type RunListener = (event: RunEvent) => void;

/** Options of {@linkcode RunContext}. */
export interface RunContextOptions {
  ledger: Ledger;
  concurrency: number;
  budget: BudgetGate;
  replay: ReplaySource | undefined;
  maxNarration: number;
  maxSecurityEvents: number;
}

const TEXT_LIMIT = 8 * 1024;
const MAX_CONDITIONS = 50;

/** The host's clock, as every record stamps it. */
export function now(): string {
  return new Date().toISOString();
}

/** Cuts a text to the size a ledger entry may hold. */
export function clip(text: string): string {
  return text.length <= TEXT_LIMIT
    ? text
    : `${text.slice(0, TEXT_LIMIT)}… [${text.length - TEXT_LIMIT} more characters]`;
}

/** A copy of the status for the ledger, without the lists it keeps under their own keys. */
function recordOf(status: RunStatus): RunStatus {
  return structuredClone({ ...status, narration: [], security_events: [] });
}

/**
 * One live run: its status, what it shares among its calls (concurrency cap, budget, replay
 * source, call order), its subscribers, and its ledger writes. Every change goes through here,
 * so that the status in memory, the events heard and the ledger agree.
 */
export class RunContext {
  readonly status: RunStatus;
  readonly request: WorkflowRunRequest;
  readonly controller = new AbortController();
  readonly semaphore: Semaphore;
  readonly budget: BudgetGate;
  readonly replay: ReplaySource | undefined;
  /** Calls not yet journaled: a run ends only after they have. */
  readonly inflight = new Set<Promise<AgentReply>>();
  /** Settles with the final status once the run has ended and is written. */
  done: Promise<RunStatus>;

  readonly #ledger: Ledger;
  readonly #options: RunContextOptions;
  readonly #listeners = new Set<RunListener>();
  readonly #raised = new Set<string>();
  readonly #seq = { narration: 0, security: 0, event: 1, call: 0 };
  /** Calls pass this chain one at a time, in arrival order. */
  #order: Promise<unknown> = Promise.resolve();
  #pending: LedgerOp[] = [];
  #flushing = false;
  #writes: Promise<void> = Promise.resolve();
  #writeError: unknown;

  constructor(status: RunStatus, request: WorkflowRunRequest, options: RunContextOptions) {
    this.status = status;
    this.request = request;
    this.#ledger = options.ledger;
    this.#options = options;
    this.semaphore = new Semaphore(options.concurrency);
    this.budget = options.budget;
    this.replay = options.replay;
    this.done = Promise.resolve(status);
  }

  get runId(): string {
    return this.status.run_id;
  }

  /** The first ledger write that failed, if any. */
  get writeError(): unknown {
    return this.#writeError;
  }

  /** Settles when every write queued so far is committed. */
  get writes(): Promise<void> {
    return this.#writes;
  }

  subscribe(listener: RunListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(event: RunEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A broken subscriber must not break the run.
      }
    }
  }

  /** Runs `step` after every step queued before it: the calls' place in line, in arrival order. */
  inOrder<T>(step: () => Promise<T>): Promise<T> {
    const result = this.#order.then(step);
    this.#order = result.catch(() => {});
    return result;
  }

  /** The next call sequence number, from 1. */
  nextCallSeq(): number {
    return ++this.#seq.call;
  }

  /**
   * Queues a ledger write. A burst of writes (a wave of calls finishing) commits as one batch.
   * Resolves once the write is committed (or has failed, which `writeError` reports).
   */
  persist(op: LedgerOp): Promise<void> {
    this.#pending.push(op);
    if (this.#flushing) return this.#writes;
    this.#flushing = true;
    this.#writes = this.#writes.then(async () => {
      // Let the rest of the burst join this batch.
      await new Promise((resolve) => setTimeout(resolve, 0));
      while (this.#pending.length > 0) {
        const ops = this.#pending.splice(0);
        try {
          await this.#ledger.write(this.runId, ops);
        } catch (error) {
          this.#writeError ??= error;
        }
      }
      this.#flushing = false;
    });
    return this.#writes;
  }

  #saveWithEvent(event: StoredEvent): void {
    const seq = this.#seq.event++;
    this.persist({ kind: "status", status: recordOf(this.status), event: { seq, event } });
    this.emit(event);
  }

  setState(state: RunState): void {
    this.status.state = state;
    this.#saveWithEvent({ type: "state", run_id: this.runId, at: now(), state });
  }

  narrate(entry: Omit<NarrationEntry, "at">): void {
    const full: NarrationEntry = { at: now(), ...entry, text: clip(entry.text) };
    if (this.status.narration.length < this.#options.maxNarration) {
      this.status.narration.push(full);
      this.persist({ kind: "narration", seq: this.#seq.narration++, entry: full });
    } else this.status.narration_dropped++;
    this.emit({ type: "narration", run_id: this.runId, at: full.at, entry: full });
  }

  security(kind: string, detail: string): void {
    const event: SecurityEvent = { at: now(), kind, detail };
    if (this.status.security_events.length < this.#options.maxSecurityEvents) {
      this.status.security_events.push(event);
      this.persist({ kind: "security", seq: this.#seq.security++, event });
    } else this.status.security_events_dropped++;
    this.emit({ type: "security", run_id: this.runId, at: event.at, event });
  }

  /** Records a condition; with `once`, only the first of its type. */
  raise(condition: Omit<RunCondition, "at">, options: { once: boolean }): void {
    if (options.once && this.#raised.has(condition.type)) return;
    this.#raised.add(condition.type);
    if (this.status.conditions.length >= MAX_CONDITIONS) return;
    const full: RunCondition = { at: now(), ...condition };
    this.status.conditions.push(full);
    this.#saveWithEvent({ type: "condition", run_id: this.runId, at: full.at, condition: full });
  }

  callsChanged(): void {
    this.emit({ type: "calls", run_id: this.runId, at: now(), calls: { ...this.status.calls } });
  }

  /** Journals a finished call with the counters it changes; resolves once it is committed. */
  journal(entry: JournalEntry): Promise<void> {
    const { journal } = this.status;
    journal.calls++;
    journal[entry.outcome]++;
    journal.usage.input_tokens += entry.usage.input_tokens;
    journal.usage.output_tokens += entry.usage.output_tokens;
    journal.usage.cost_usd = journal.usage.cost_usd === null || entry.cost_usd === null
      ? null
      : journal.usage.cost_usd + entry.cost_usd;
    this.status.budget = this.budget.figures();
    const committed = this.persist({ kind: "journal", status: recordOf(this.status), entry });
    this.emit({
      type: "call",
      run_id: this.runId,
      at: entry.ended_at,
      seq: entry.seq,
      outcome: entry.outcome,
      label: entry.label,
    });
    return committed;
  }
}

import { Semaphore } from "../concurrency/mod.ts";
import { StopReason } from "../dispatch/mod.ts";
import { SvcError } from "../errors/mod.ts";
import {
  type ApprovalRecord,
  clipText,
  type FailureCause,
  type GuestSandbox,
  INLINE_LIMIT,
  type JournalEntry,
  type LedgerOp,
  type NarrationEntry,
  type RunCondition,
  type RunEvent,
  type RunLedger,
  type RunState,
  type RunStatus,
  type ScriptErrorRecord,
  type SecurityEvent,
  TERMINAL_STATES,
} from "../ledger/mod.ts";
import type { CallProgress, JsonValue, WorkflowRunRequest } from "../schemas/mod.ts";
import type { BudgetGate } from "./budget.ts";
import type { AgentReply, ItemError } from "./guest_session.ts";
import { GroupCommit } from "./group_commit.ts";
import type { ReplaySource } from "./journal.ts";
import { boundCondition, boundEntry, boundScriptError, RECORD_LIMITS } from "./record_bounds.ts";
import { scriptRunError } from "./script_error.ts";

/** Options of {@linkcode RunContext}. */
export interface RunContextOptions {
  ledger: Pick<RunLedger, "write">;
  concurrency: number;
  budget: BudgetGate;
  replay: ReplaySource | undefined;
  maxNarration: number;
  /** Bytes of narration text one run may record; later entries are counted, not kept. */
  maxNarrationBytes: number;
  maxSecurityEvents: number;
  /** Bytes of live output recorded per call (progress items as JSON). Default 64 KiB. */
  maxProgressBytes?: number;
  /** Bytes of journal entries, results kept inline included, one run may record. */
  maxJournalBytes: number;
  /** Bytes of results one run may keep in blob files (those over the inline limit). */
  maxBlobBytes: number;
  /**
   * Refused `agent()` calls (agent limit, budget, no price) after which the run fails with
   * `agent_limit_exceeded`: a script that keeps calling after refusals must not spin until its
   * timeout.
   */
  maxRefusedCalls: number;
  /**
   * The real path the run's workdir had when it was checked at the start: every call's
   * directory, resolved again right before its process starts, must lie inside it.
   */
  workdirRoot?: string;
}

const TEXT_LIMIT = 8 * 1024;
/**
 * How long an event nobody waits for (a call's start) may wait for the next write to join, in
 * ms: a call that ends sooner shares its journal entry's commit, so a step costs one commit.
 */
export const HELD_EVENT_MS = 20;
/** The least time between two call-count events of a run's feed, in ms. */
export const COUNTS_INTERVAL_MS = 100;
/** How long the counts wait after a change before they enter the feed, in ms. */
const COUNTS_SETTLE_MS = 20;
const encoder = new TextEncoder();

/** The host's clock, as every record stamps it. */
export function now(): string {
  return new Date().toISOString();
}

/** Cuts a text to the size a ledger entry may hold. */
export function clip(text: string): string {
  return clipText(text, TEXT_LIMIT);
}

/** A deep copy of JSON data: a run's small records, without structuredClone's serialization. */
function copyJson<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(copyJson) as T;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    out[key] = copyJson((value as Record<string, unknown>)[key]);
  }
  return out as T;
}

/**
 * A copy of the status for the ledger, without the lists it keeps under their own keys. The
 * script's result is set once, at the end, and never changed: it is shared, not copied (a
 * script's value may nest deeper than a copy should recurse).
 */
function recordOf(status: RunStatus): RunStatus {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(status)) {
    out[key] = key === "narration" || key === "security_events"
      ? []
      : key === "result"
      ? value
      : copyJson(value);
  }
  return out as unknown as RunStatus;
}

/** Options of {@linkcode RunContext.journal}. */
export interface JournalOptions {
  /**
   * Whether the entry goes without its `call` event (a replayed prefix has one event for all).
   * @default false
   */
  quiet?: boolean;
}

/**
 * One live run: its status, what it shares among its calls (concurrency cap, budget, replay
 * source, call order), and its ledger writes, events of its feed included. Every change goes
 * through here, so that the status in memory, the feed and the ledger agree.
 */
export class RunContext {
  readonly status: RunStatus;
  readonly request: WorkflowRunRequest;
  readonly controller = new AbortController();
  readonly semaphore: Semaphore;
  readonly budget: BudgetGate;
  readonly replay: ReplaySource | undefined;
  /** The real path of the run's workdir as checked at its start (see `RunContextOptions`). */
  readonly workdirRoot: string | undefined;
  /** Calls not yet answered: a run ends only after they have (and their entries are written). */
  readonly inflight = new Set<Promise<AgentReply>>();
  /** Settles with the final status once the run has ended and is written. */
  done: Promise<RunStatus>;

  readonly #ledger: Pick<RunLedger, "write">;
  readonly #options: RunContextOptions;
  readonly #raised = new Set<string>();
  /** Kinds of refusal already journaled: later refusals of a kind are only counted. */
  readonly #refusals = new Set<string>();
  /** Bytes this run has recorded so far, against its limits. */
  readonly #recorded = { journal: 0, blobs: 0, conditions: 0, scriptErrors: 0 };
  /** Refused calls so far, against `maxRefusedCalls`. */
  #refused = 0;
  readonly #seq = { narration: 0, security: 0, event: 1, call: 0 };
  #narrationBytes = 0;
  /** The phase the script narrated last (clipped), for the calls that name none. */
  #phase: string | null = null;
  #countsTimer: ReturnType<typeof setTimeout> | undefined;
  #countsAt = -Infinity;
  /** Calls pass this chain one at a time, in arrival order. */
  #order: Promise<unknown> = Promise.resolve();
  readonly #commits: GroupCommit<LedgerOp>;
  /** Events held for the next write (see {@linkcode HELD_EVENT_MS}), in order. */
  #held: LedgerOp[] = [];
  /** When the oldest event still held was held (`performance.now()`). */
  #heldAt = 0;
  #heldTimer: ReturnType<typeof setTimeout> | undefined;
  #writeError: unknown;
  #committed: RunStatus | undefined;
  /** The commit of the latest entry whose value the script got before it was durable. */
  #ahead: Promise<boolean> | undefined;

  constructor(status: RunStatus, request: WorkflowRunRequest, options: RunContextOptions) {
    this.status = status;
    this.request = request;
    this.#ledger = options.ledger;
    this.#options = options;
    this.semaphore = new Semaphore(options.concurrency);
    this.budget = options.budget;
    this.replay = options.replay;
    this.workdirRoot = options.workdirRoot;
    this.done = Promise.resolve(status);
    this.#commits = new GroupCommit(async (ops) => {
      // One copy of the status per commit, taken now: its counters are exactly those of the
      // entries committed so far, this batch's included (a copy per entry cost a clone each).
      let snapshot: RunStatus | undefined;
      for (const op of ops) {
        if (op.kind === "journal") op.status = snapshot ??= recordOf(this.status);
      }
      // After a failed write nothing more is written: a later status would count journal
      // entries that never landed. The run's end is written from the ledger's own record.
      if (this.#writeError !== undefined) throw this.#writeError;
      try {
        await this.#ledger.write(this.runId, this.#numberEvents(ops));
        const last = ops.findLast((op) => op.kind === "status" || op.kind === "journal");
        if (last) this.#committed = last.status;
      } catch (error) {
        this.#writeError = error;
        this.#stopUnwritable(error);
        throw error;
      }
    });
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
    this.#flushHeld();
    if (this.#heldTimer !== undefined) {
      clearTimeout(this.#heldTimer);
      this.#heldTimer = undefined;
    }
    return this.#commits.idle();
  }

  /** Adds an event to the run's feed (numbered when it is written). */
  #emit(event: RunEvent): void {
    this.persist({ kind: "event", event: { seq: -1, event } });
  }

  /**
   * Numbers the events of a batch in order. Of the call counts, only the last of a batch is
   * kept: a reader wants the counts now, not every step, and a wave of a thousand calls must
   * not add thousands of events.
   */
  #numberEvents(ops: LedgerOp[]): LedgerOp[] {
    const lastCounts = ops.findLastIndex((op) =>
      op.kind === "event" && op.event.event.type === "calls"
    );
    const out: LedgerOp[] = [];
    for (const [index, op] of ops.entries()) {
      if (op.kind === "event") {
        if (op.event.event.type === "calls" && index !== lastCounts) continue;
        op.event.seq = this.#seq.event++;
      } else if (op.kind === "status" && op.event) op.event.seq = this.#seq.event++;
      out.push(op);
    }
    return out;
  }

  /** Runs `step` after every step queued before it: the calls' place in line, in arrival order. */
  inOrder<T>(step: () => Promise<T>): Promise<T> {
    const result = this.#order.then(step);
    this.#order = result.catch(() => {});
    return result;
  }

  /** How many calls the run has made so far. */
  get callCount(): number {
    return this.#seq.call;
  }

  /**
   * A call took its place in line: it is counted, and gets the next sequence number (from 1).
   * The counters below change only through these `call…` methods, each of which puts the
   * change into the run's feed (see {@linkcode COUNTS_INTERVAL_MS}).
   */
  callPlaced(): number {
    this.status.calls.total++;
    this.#callsChanged();
    return ++this.#seq.call;
  }

  /** A live call waits for one of the run's concurrency slots. */
  callQueued(): void {
    this.status.calls.queued++;
    this.#callsChanged();
  }

  /** A queued call stopped waiting: it took its slot, or the run stopped first. */
  callDequeued(): void {
    this.status.calls.queued--;
    this.#callsChanged();
  }

  /** The phase the script narrated last (clipped), or null before its first `phase()`. */
  get narratedPhase(): string | null {
    return this.#phase;
  }

  /**
   * A call went to its provider: counted, and put into the run's feed (`call_started`) with
   * its label, its phase (its own, else the one narrated last) and its logical position, texts
   * clipped like the journal's, so that a reader sees what runs now. The event waits up to
   * {@linkcode HELD_EVENT_MS} for the next write, so that a quick call's start and its journal
   * entry share one commit.
   */
  callStarted(
    call: { seq: number; label: string | null; phase?: string; position?: number[] },
  ): void {
    this.status.calls.running++;
    this.#callsChanged();
    const { short } = RECORD_LIMITS;
    this.#emitHeld({
      type: "call_started",
      run_id: this.runId,
      at: now(),
      seq: call.seq,
      label: call.label === null ? null : clipText(call.label, short),
      phase: call.phase !== undefined ? clipText(call.phase, short) : this.#phase,
      position: call.position ?? null,
    });
  }

  /** A call's dispatch is over; {@linkcode callSucceeded} or {@linkcode callFailed} follows. */
  callReturned(): void {
    this.status.calls.running--;
    this.#callsChanged();
  }

  /** A call ended with its provider's value. */
  callSucceeded(): void {
    this.status.calls.succeeded++;
    this.#callsChanged();
  }

  /** A call ended with a value from an earlier run's journal. */
  callReplayed(): void {
    this.status.calls.replayed++;
    this.#callsChanged();
  }

  /**
   * The run is ending: no call is queued or running any more (those in flight settled, or
   * were aborted with the guest). The final state event carries the counts.
   */
  callsDrained(): void {
    this.status.calls.queued = 0;
    this.status.calls.running = 0;
  }

  /**
   * A write failed: the status goes back to what the ledger last committed (calls whose
   * entries were lost are not the run's), nothing in flight. Returns false when nothing was
   * ever committed.
   */
  rollBackToCommitted(): boolean {
    const committed = this.#committed;
    if (!committed) return false;
    this.status.journal = structuredClone(committed.journal);
    this.status.calls = { ...committed.calls, queued: 0, running: 0 };
    this.status.budget = structuredClone(committed.budget);
    return true;
  }

  /** A call ended without a value (the script gets null), counted under its cause. */
  callFailed(cause: FailureCause): void {
    this.status.calls.failed++;
    this.#countFailure(cause);
    this.#callsChanged();
  }

  /**
   * Queues a ledger write. It commits at once when no commit is in flight; writes that arrive
   * during one share the next (a wave of calls finishing costs one commit). Resolves once the
   * commit holding this write is done (or has failed, which `writeError` reports).
   */
  persist(op: LedgerOp): Promise<void> {
    this.#flushHeld();
    const written = this.#commits.add(op);
    // Most writes are not awaited; their failure is the run's (`writeError`), not unhandled.
    written.catch(() => {});
    return written;
  }

  /**
   * The script was answered before `committed` (the commit of the answer's journal entry) is
   * done: from now on, what its guest sends waits for that commit ({@linkcode framesGate}).
   * Commits end in order, so the latest answer's covers every earlier one.
   */
  answerAhead(committed: Promise<void>): void {
    const outcome = committed.then(() => true, () => false);
    this.#ahead = outcome;
    // A failed commit keeps the gate shut: the run stops, its guest's frames are dropped.
    outcome.then((ok) => {
      if (ok && this.#ahead === outcome) this.#ahead = undefined;
    });
  }

  /**
   * Undefined when the guest's next frame may be handled at once; else resolves to true once
   * every answer the script got ahead of its commit is durable, or to false when one never
   * will be (the frame is then dropped: the run stops without a journal to write to).
   */
  framesGate(): Promise<boolean> | undefined {
    return this.#writeError !== undefined ? Promise.resolve(false) : this.#ahead;
  }

  /** Adds an event nobody waits for: it joins the next write, or is written on its own soon. */
  #emitHeld(event: RunEvent): void {
    if (this.#held.length === 0) this.#heldAt = performance.now();
    this.#held.push({ kind: "event", event: { seq: -1, event } });
    // One timer serves many calls: a quick call's events leave with its entry and the timer
    // runs on, instead of a timer set and cleared at every call.
    this.#heldTimer ??= setTimeout(() => this.#heldDue(), HELD_EVENT_MS);
  }

  /** The timer fired: writes what has been held its full time, else waits for the rest of it. */
  #heldDue(): void {
    this.#heldTimer = undefined;
    if (this.#held.length === 0) return;
    const left = this.#heldAt + HELD_EVENT_MS - performance.now();
    if (left >= 1) this.#heldTimer = setTimeout(() => this.#heldDue(), left);
    else this.#flushHeld();
  }

  #flushHeld(): void {
    if (this.#held.length === 0) return;
    for (const op of this.#held.splice(0)) this.#commits.add(op).catch(() => {});
  }

  /**
   * Stops the run once the ledger refused a write (disk full, file locked): it cannot go on
   * without a journal. It ends `interrupted`, resumable once the fault is gone.
   */
  #stopUnwritable(error: unknown): void {
    if (this.controller.signal.aborted) return;
    const message = error instanceof SvcError
      ? error.message
      : "Cannot write the ledger: the write failed";
    this.controller.abort(new StopReason("interrupted", message, "ledger_unavailable"));
  }

  #saveWithEvent(event: RunEvent): void {
    this.persist({ kind: "status", status: recordOf(this.status), event: { seq: -1, event } });
  }

  /** Bytes of live output one call of this run may record. */
  get progressBytes(): number {
    return this.#options.maxProgressBytes ?? 64 * 1024;
  }

  /** Adds a batch of call `seq`'s live output to the run's feed (never its status). */
  progress(seq: number, items: CallProgress[]): void {
    this.#emitHeld({ type: "progress", run_id: this.runId, at: now(), seq, items });
  }

  /** Records what confines the run's guest, as its backend reported when it started. */
  guestStarted(sandbox: GuestSandbox): void {
    this.status.guest_sandbox = { ...sandbox };
    this.persist({ kind: "status", status: recordOf(this.status) });
  }

  setState(state: RunState, at: string = now()): void {
    this.status.state = state;
    this.#saveWithEvent({ type: "state", run_id: this.runId, at, state });
  }

  narrate(entry: Omit<NarrationEntry, "at">): void {
    const full: NarrationEntry = { at: now(), ...entry, text: clip(entry.text) };
    if (full.kind === "phase") this.#phase = clipText(full.text, RECORD_LIMITS.short);
    const bytes = encoder.encode(full.text).length;
    if (
      this.status.narration.length < this.#options.maxNarration &&
      this.#narrationBytes + bytes <= this.#options.maxNarrationBytes
    ) {
      this.#narrationBytes += bytes;
      this.status.narration.push(full);
      this.persist({ kind: "narration", seq: this.#seq.narration++, entry: full });
      this.#emit({ type: "narration", run_id: this.runId, at: full.at, entry: full });
    } else this.status.narration_dropped++;
  }

  security(kind: string, detail: string): void {
    const { short, text } = RECORD_LIMITS;
    const event: SecurityEvent = {
      at: now(),
      kind: clipText(kind, short),
      detail: clipText(detail, text),
    };
    if (this.status.security_events.length < this.#options.maxSecurityEvents) {
      this.status.security_events.push(event);
      this.persist({ kind: "security", seq: this.#seq.security++, event });
      this.#emit({ type: "security", run_id: this.runId, at: event.at, event });
    } else this.status.security_events_dropped++;
  }

  /**
   * Records a condition; with `once`, only the first of its type. The status keeps a bounded
   * number of them, of bounded size, so that it always fits in one ledger value; later ones
   * are counted in `conditions_dropped`.
   */
  raise(condition: Omit<RunCondition, "at">, options: { once: boolean }): void {
    if (options.once && this.#raised.has(condition.type)) return;
    this.#raised.add(condition.type);
    const full = boundCondition({ at: now(), ...condition });
    const size = JSON.stringify(full).length;
    if (
      this.status.conditions.length >= RECORD_LIMITS.conditions ||
      this.#recorded.conditions + size > RECORD_LIMITS.conditionBytes
    ) {
      this.status.conditions_dropped++;
      return;
    }
    this.#recorded.conditions += size;
    this.status.conditions.push(full);
    this.#saveWithEvent({ type: "condition", run_id: this.runId, at: full.at, condition: full });
  }

  /** Puts a call's approval into the run's feed: it waits for a person, or was decided. */
  approvalChanged(approval: ApprovalRecord, call: { seq: number; label: string | null }): void {
    this.#emit({
      type: "approval",
      run_id: this.runId,
      at: approval.decided_at ?? approval.asked_at,
      approval_id: approval.approval_id,
      state: approval.state,
      seq: call.seq,
      label: call.label,
      ...(approval.decided_by !== undefined ? { decided_by: approval.decided_by } : {}),
      ...(approval.reason !== undefined ? { reason: approval.reason } : {}),
    });
  }

  /**
   * Notes that the call counts changed. The feed gets them at most every
   * {@linkcode COUNTS_INTERVAL_MS}, as they are when the event is made: a wave of calls shows
   * whole, and a script looping over refused calls adds a bounded number of events.
   */
  #callsChanged(): void {
    if (this.#countsTimer !== undefined || TERMINAL_STATES.has(this.status.state)) return;
    // A first change waits a moment, so that a wave of calls arriving together shows whole.
    const wait = Math.max(COUNTS_SETTLE_MS, this.#countsAt + COUNTS_INTERVAL_MS - Date.now());
    this.#countsTimer = setTimeout(() => {
      this.#countsTimer = undefined;
      this.#emitCounts();
    }, wait);
  }

  /** Puts the counts still waiting into the feed now: the run is about to end. */
  flushCounts(): void {
    if (this.#countsTimer === undefined) return;
    clearTimeout(this.#countsTimer);
    this.#countsTimer = undefined;
    this.#emitCounts();
  }

  #emitCounts(): void {
    this.#countsAt = Date.now();
    this.#emit({
      type: "calls",
      run_id: this.runId,
      at: now(),
      calls: { ...this.status.calls },
      usage: { ...this.status.journal.usage },
    });
  }

  /**
   * Takes room for a call's result in the run's ledger allowance, or says why there is none.
   * A result that cannot be recorded must not reach the script: what the script has seen is
   * in the journal, so that a resume replays it.
   */
  admitResult(value: JsonValue): string | undefined {
    const json = JSON.stringify(value);
    const bytes = json.length <= INLINE_LIMIT / 4 ? json.length : encoder.encode(json).length;
    const inline = bytes <= INLINE_LIMIT;
    const axis = inline ? "journal" : "blobs";
    const max = inline ? this.#options.maxJournalBytes : this.#options.maxBlobBytes;
    if (this.#recorded[axis] + bytes > max) {
      return inline
        ? `the run's journal reached its limit of ${
          mib(max)
        }: ${this.#recorded.journal} bytes recorded, this result takes ${bytes}`
        : `the run's result files reached their limit of ${
          mib(max)
        }: ${this.#recorded.blobs} bytes recorded, this result takes ${bytes}`;
    }
    this.#recorded[axis] += bytes;
    return undefined;
  }

  /**
   * Counts a replayed result the guest already answered with against the run's allowance,
   * without refusing it: the value is the source run's, which its own limits bounded.
   */
  countResult(value: JsonValue): void {
    // Measured as `admitResult` measures: a short value's length decides where it goes.
    const json = JSON.stringify(value);
    const bytes = json.length <= INLINE_LIMIT / 4 ? json.length : encoder.encode(json).length;
    this.#recorded[bytes <= INLINE_LIMIT ? "journal" : "blobs"] += bytes;
  }

  /** Bytes recorded so far and the limits, for a condition's data. */
  recordedFigures(): Record<string, JsonValue> {
    return {
      journal_bytes: this.#recorded.journal,
      max_journal_bytes: this.#options.maxJournalBytes,
      blob_bytes: this.#recorded.blobs,
      max_blob_bytes: this.#options.maxBlobBytes,
    };
  }

  /**
   * A call was refused (agent limit, budget, unpriced) and skipped: the first of each kind is
   * journaled, later ones only counted (`journal.omitted`), so that a script looping over
   * refused calls grows the ledger by a bounded amount. Nothing a refused call does reaches
   * the ledger until the next write of the status. Past `maxRefusedCalls` refusals the script
   * is taken to be looping and the run stops, failed. Resolves once the entry, if any, is
   * committed.
   */
  callSkipped(
    kind: "agent_limit" | "budget" | "unpriced",
    reason: string,
    entry: () => JournalEntry,
  ): Promise<void> {
    this.status.calls.skipped++;
    this.#callsChanged();
    this.#countFailure(kind);
    if (++this.#refused > this.#options.maxRefusedCalls) this.#stopRefused(reason);
    if (!this.#refusals.has(kind)) {
      this.#refusals.add(kind);
      return this.journal(entry());
    }
    const { journal } = this.status;
    journal.calls++;
    journal.skipped++;
    journal.omitted++;
    return Promise.resolve();
  }

  #stopRefused(reason: string): void {
    if (this.controller.signal.aborted) return;
    const max = this.#options.maxRefusedCalls;
    this.controller.abort(
      new StopReason(
        "failed",
        `AgentLimitExceeded: the script kept calling agent() after its calls were refused: ` +
          `${this.#refused} refused calls, over the limit of ${max} a run (the last: ${
            clipText(reason, RECORD_LIMITS.short)
          })`,
        "agent_limit_exceeded",
      ),
    );
  }

  /** Counts one call that returned null, under its cause. */
  #countFailure(cause: FailureCause): void {
    const { failures } = this.status;
    failures[cause] = (failures[cause] ?? 0) + 1;
  }

  /**
   * Records an item of `parallel()`/`pipeline()` that threw: narrated (each one, within the
   * narration's caps, with a `parallel[i] failed: <message>` line in the script's log) and kept in `script_errors` (a bounded number, of bounded size; later
   * ones are counted in `script_errors_dropped`).
   */
  itemError(report: ItemError): void {
    const mapped = scriptRunError(report.error);
    const record = boundScriptError({
      at: now(),
      fn: report.fn,
      index: report.index,
      stage: report.stage,
      label: report.label,
      name: report.error.name,
      message: report.error.message,
      ...(mapped.file !== undefined
        ? { file: mapped.file, line: mapped.line, column: mapped.column }
        : {}),
    });
    this.narrate({ kind: "call", text: `${describeItemError(record)}; its result is null` });
    // The line Claude Code's Workflow tool adds to the script's own log for the same event.
    this.narrate({ kind: "log", text: `${record.fn}[${record.index}] failed: ${record.message}` });
    const size = JSON.stringify(record).length;
    if (
      this.status.script_errors.length >= RECORD_LIMITS.scriptErrors ||
      this.#recorded.scriptErrors + size > RECORD_LIMITS.scriptErrorBytes
    ) {
      this.status.script_errors_dropped++;
      return;
    }
    this.#recorded.scriptErrors += size;
    this.status.script_errors.push(record);
    this.persist({ kind: "status", status: recordOf(this.status) });
  }

  /**
   * Puts calls the guest answered from the journal into the run's feed, as one event: their
   * entries were journaled without a `call` event each (see {@linkcode journal}).
   */
  callsReplayed(
    event: Omit<Extract<RunEvent, { type: "calls_replayed" }>, "type" | "run_id">,
  ): void {
    this.#emit({ type: "calls_replayed", run_id: this.runId, ...event });
  }

  /**
   * Journals a finished call with the counters it changes, and puts its `call` event into the
   * feed unless `options.quiet` (a replayed prefix is reported by {@linkcode callsReplayed});
   * resolves once it is committed.
   */
  journal(full: JournalEntry, options: JournalOptions = {}): Promise<void> {
    const entry = boundEntry(full);
    const { result: _result, ...rest } = entry;
    this.#recorded.journal += JSON.stringify(rest).length;
    const { journal } = this.status;
    journal.calls++;
    journal[entry.outcome]++;
    journal.usage.input_tokens += entry.usage.input_tokens;
    journal.usage.output_tokens += entry.usage.output_tokens;
    journal.usage.cost_usd = journal.usage.cost_usd === null || entry.cost_usd === null
      ? null
      : journal.usage.cost_usd + entry.cost_usd;
    this.status.budget = this.budget.figures();
    // The status is copied when the batch holding the entry commits (see the constructor).
    const committed = this.persist({ kind: "journal", status: this.status, entry });
    if (options.quiet) return committed;
    this.#emit({
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

/** How a thrown item reads: `pipeline() item 3, stage 1 (review) threw TypeError: x (review.js:12:7)`. */
export function describeItemError(record: ScriptErrorRecord): string {
  const where = record.stage === null
    ? `${record.fn}() item ${record.index}`
    : `${record.fn}() item ${record.index}, stage ${record.stage}`;
  const label = record.label === null ? "" : ` (${record.label})`;
  const what = record.name === "Thrown"
    ? `threw a value that is not an Error: ${record.message}`
    : `threw ${record.name}: ${record.message}`;
  const at = record.file === undefined ? "" : ` (${record.file}:${record.line}:${record.column})`;
  return `${where}${label} ${what}${at}`;
}

function mib(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/**
 * The pulse of the host for one caller (`GET /api/pulse`, `svc status`, the page's header
 * strip): what runs and tasks are running, queued and waiting for a person, what was spent in
 * the last hour and day against the running runs' budgets, the providers' health and the
 * newest failures. One answer costs a fixed number of bounded ledger reads (the newest
 * {@linkcode PULSE_WINDOW} records of each kind) and is reused for {@linkcode PULSE_TTL_MS}
 * per owner: a status bar that polls every few seconds costs the ledger little.
 * @module
 */
import { type Dispatcher, roundUsd, tallyCalls, withoutHostPaths } from "../dispatch/mod.ts";
import type {
  ApprovalLedger,
  ApprovalRecord,
  Caller,
  CallLedger,
  CallRecord,
  RunLedger,
  RunState,
  RunStatus,
  TaskLedger,
  TaskStatus,
} from "../ledger/mod.ts";
import { ownerScope } from "../ledger/mod.ts";
import { type Pulse, PULSE_FAILURES, PULSE_MESSAGE_CHARS } from "../schemas/mod.ts";

/** How long one owner's pulse is reused, in ms: the figures are at most this old. */
export const PULSE_TTL_MS = 1_000;
/** How many of the newest records of each kind one pulse reads. */
export const PULSE_WINDOW = { runs: 200, tasks: 200, calls: 2_000, approvals: 100 } as const;
/** Most owners whose pulse is kept at once. */
const CACHE_OWNERS = 1_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const FAILED: ReadonlySet<RunState> = new Set(["failed", "timeout", "interrupted"]);

/** The four listings a pulse reads, each once and bounded. */
export type PulseLedger =
  & Pick<RunLedger, "listRuns">
  & Pick<TaskLedger, "listTasks">
  & Pick<CallLedger, "listCalls">
  & Pick<ApprovalLedger, "listApprovals">;

/** What {@linkcode PulseService} reads: the ledger's listings and the providers' status. */
export interface PulseSources {
  /** The ledger: runs, tasks, calls and approvals, each read as one bounded listing. */
  ledger: PulseLedger;
  /** The providers' status (probes answered from their cache). */
  dispatcher: Pick<Dispatcher, "status">;
}

/** Options of {@linkcode PulseService}. */
export interface PulseOptions {
  /** How long an owner's pulse is reused, in ms. @default 1000 */
  ttlMs?: number;
  /** The clock. @default Date.now */
  now?: () => number;
}

type Spend = Pulse["spend"]["hour"];

function clip(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > PULSE_MESSAGE_CHARS ? `${flat.slice(0, PULSE_MESSAGE_CHARS - 1)}…` : flat;
}

function spendOf(calls: readonly CallRecord[]): Spend {
  const t = tallyCalls(calls);
  return {
    cost_usd: roundUsd(t.cost_usd),
    calls: t.calls,
    failed: t.failed,
    replayed: t.replayed,
    refused: t.refused,
    unmetered_calls: t.unmetered_calls,
    tokens: t.input_tokens + t.output_tokens,
  };
}

function countWork(
  items: ReadonlyArray<{ state: RunState; id: string }>,
  waiting: ReadonlySet<string>,
): Pulse["runs"] {
  let running = 0, queued = 0, held = 0;
  for (const item of items) {
    if (item.state === "queued") queued++;
    if (item.state !== "running") continue;
    running++;
    if (waiting.has(item.id)) held++;
  }
  return { running, queued, waiting: held };
}

function budgetsOf(runs: readonly RunStatus[]): Pulse["spend"]["budgets"] {
  let count = 0;
  const usd = { spent: 0, total: 0, any: false };
  const tokens = { spent: 0, total: 0, any: false };
  for (const run of runs) {
    if (run.state !== "running" || !run.budget || run.budget.total === null) continue;
    count++;
    const axis = run.budget.unit === "usd" ? usd : tokens;
    axis.any = true;
    axis.spent += run.budget.spent;
    axis.total += run.budget.total;
  }
  const shown = (a: typeof usd) => a.any ? { spent: a.spent, total: a.total } : null;
  return { runs: count, usd: shown(usd), tokens: shown(tokens) };
}

function failuresOf(runs: readonly RunStatus[], tasks: readonly TaskStatus[]): Pulse["failures"] {
  const out: Pulse["failures"] = [];
  for (const run of runs) {
    if (!FAILED.has(run.state)) continue;
    out.push({
      kind: "run",
      id: run.run_id,
      name: run.name === null ? null : clip(run.name),
      state: run.state,
      at: run.ended_at ?? run.created_at,
      message: clip(run.error?.message ?? run.state),
    });
  }
  for (const task of tasks) {
    if (!FAILED.has(task.state)) continue;
    out.push({
      kind: "task",
      id: task.task_id,
      name: task.label === null ? null : clip(task.label),
      state: task.state,
      at: task.ended_at ?? task.created_at,
      message: clip(task.error?.message ?? task.state),
    });
  }
  return out.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0)).slice(0, PULSE_FAILURES);
}

/**
 * The pulse service: one answer per caller, built from one listing of each kind (runs, tasks,
 * calls, pending approvals) and the providers' cached status, reused for a short while. The
 * caller's owner only; an administrator's pulse is every owner's, as its listings are.
 */
export class PulseService {
  readonly #sources: PulseSources;
  readonly #ttl: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { at: number; pulse: Promise<Pulse> }>();

  /** The pulse over `sources`. */
  constructor(sources: PulseSources, options: PulseOptions = {}) {
    this.#sources = sources;
    this.#ttl = options.ttlMs ?? PULSE_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** The caller's pulse: reused while younger than the TTL, else read afresh. */
  pulse(caller: Caller): Promise<Pulse> {
    const key = `${caller.admin ? "admin" : "owner"}:${caller.owner}`;
    const now = this.#now();
    const cached = this.#cache.get(key);
    if (cached && now - cached.at < this.#ttl) return cached.pulse;
    const pulse = this.#read(caller, now);
    if (this.#cache.size >= CACHE_OWNERS) this.#cache.clear();
    this.#cache.set(key, { at: now, pulse });
    pulse.catch(() => this.#cache.delete(key));
    return pulse;
  }

  async #read(caller: Caller, now: number): Promise<Pulse> {
    const { ledger, dispatcher } = this.#sources;
    const owner = ownerScope(caller);
    const scope = owner !== undefined ? { owner } : {};
    const [runs, tasks, calls, approvals, providers] = await Promise.all([
      ledger.listRuns({ ...scope, limit: PULSE_WINDOW.runs }),
      ledger.listTasks({ ...scope, limit: PULSE_WINDOW.tasks }),
      ledger.listCalls({ ...scope, limit: PULSE_WINDOW.calls }),
      ledger.listApprovals({ ...scope, state: "pending", limit: PULSE_WINDOW.approvals }),
      dispatcher.status({ wait: false }),
    ]);
    const live = livePending(approvals, runs, tasks);
    const dayStart = new Date(now - DAY_MS).toISOString();
    const hourStart = new Date(now - HOUR_MS).toISOString();
    const day = calls.filter((call) => call.at >= dayStart);
    return {
      at: new Date(now).toISOString(),
      owner: caller.owner,
      scope: owner === undefined ? "all" : "owner",
      fresh_ms: this.#ttl,
      runs: countWork(runs.map((r) => ({ state: r.state, id: r.run_id })), live.ids),
      tasks: countWork(tasks.map((t) => ({ state: t.state, id: t.task_id })), live.ids),
      approvals: { pending: live.count, oldest_at: live.oldest },
      spend: {
        hour: spendOf(day.filter((call) => call.at >= hourStart)),
        day: spendOf(day),
        complete: calls.length < PULSE_WINDOW.calls || day.length < calls.length,
        budgets: budgetsOf(runs),
      },
      providers: {
        total: providers.length,
        available: providers.filter((p) => p.available).length,
        list: providers.map((p) => ({
          name: p.name,
          kind: p.kind,
          available: p.available,
          running: p.running,
          concurrency: p.concurrency,
          reason: clip(withoutHostPaths(p.reason)),
        })),
      },
      failures: failuresOf(runs, tasks),
      window: { ...PULSE_WINDOW },
    };
  }
}

/**
 * The pending approvals whose run or task still runs (one whose host died waits for nobody:
 * the approval queue cancels it when it is next listed), and the ids of what they hold.
 */
function livePending(
  approvals: readonly ApprovalRecord[],
  runs: readonly RunStatus[],
  tasks: readonly TaskStatus[],
): { count: number; oldest: string | null; ids: Set<string> } {
  const running = new Set([
    ...runs.filter((r) => r.state === "running").map((r) => r.run_id),
    ...tasks.filter((t) => t.state === "running").map((t) => t.task_id),
  ]);
  const ids = new Set<string>();
  let count = 0;
  let oldest: string | null = null;
  for (const approval of approvals) {
    const id = approval.run_id ?? approval.task_id;
    if (id === undefined || !running.has(id)) continue;
    count++;
    ids.add(id);
    if (oldest === null || approval.asked_at < oldest) oldest = approval.asked_at;
  }
  return { count, oldest, ids };
}

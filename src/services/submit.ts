import { SvcError } from "../errors/mod.ts";
import type { Caller, RunStatus, StartSurface, TaskStatus } from "../ledger/mod.ts";
import { isCardNumber } from "../schemas/mod.ts";
import type { Services } from "./open_services.ts";
import { daemonAlive } from "./daemon_alive.ts";

/**
 * Starts a process of its own that claims the queued run or task `id` and runs it to its end
 * (`svc workflow work`, `svc task work`). A surface whose process may end before its work
 * does (`svc mcp` over stdio) gives one to {@linkcode submitRun} and {@linkcode submitTask}.
 */
export type SpawnWorker = (kind: "run" | "task", id: string) => Promise<void>;

/** Options of {@linkcode submitRun} and {@linkcode submitTask}. */
export interface SubmitOptions {
  /**
   * Without a daemon, queue the work and hand it to a worker process, instead of running it
   * in this process (which would cancel it on closing). Default: run it here.
   */
  spawnWorker?: SpawnWorker;
  /** The surface that asks, recorded as the run's `started_by`. @default "host" */
  via?: StartSurface;
}

/** One kind of queued work, as {@linkcode submitWork} drives it. */
interface WorkQueue<S> {
  kind: "run" | "task";
  enqueue(): Promise<S>;
  start(): Promise<S>;
  idOf(status: S): string;
  /** Claims the queued work in this process; what the worker would have done. */
  workHere(id: string): Promise<unknown>;
}

async function submitWork<S>(
  services: Services,
  queue: WorkQueue<S>,
  options: SubmitOptions,
): Promise<S> {
  if (await daemonAlive(services.ledger)) return await queue.enqueue();
  const { spawnWorker } = options;
  if (!spawnWorker) return await queue.start();
  const queued = await queue.enqueue();
  const id = queue.idOf(queued);
  try {
    await spawnWorker(queue.kind, id);
  } catch {
    // No worker could start: run it here rather than leave it queued with nobody to claim it.
    await queue.workHere(id);
  }
  return queued;
}

/**
 * Starts a run for a surface: queued for the daemon when one is alive (the run then outlives
 * the process that asked for it); else handed to a worker process when `spawnWorker` is given;
 * else run in this process. Returns its first status.
 */
export async function submitRun(
  services: Services,
  input: unknown,
  caller: Caller,
  options: SubmitOptions = {},
): Promise<RunStatus> {
  const via = options.via !== undefined ? { via: options.via } : {};
  const cardId = cardOf(input);
  // A run may name only a card its owner may see: another owner's is not found, as an unknown one.
  if (cardId !== undefined && !(await services.board.get(cardId, caller))) {
    throw new SvcError("not_found", `Cannot start the run for card ${cardId}: no such card`);
  }
  const status = await submitWork(services, {
    kind: "run",
    enqueue: () => services.runs.enqueue(input, caller, via),
    start: () => services.runs.start(input, caller, via),
    idOf: (status) => status.run_id,
    workHere: (id) => services.runs.work(id),
  }, options);
  if (cardId !== undefined) await services.board.linkRun(cardId, status.run_id, caller);
  return status;
}

/** The `card_id` a run request names, when it names a well-formed one (the request is checked later). */
function cardOf(input: unknown): string | undefined {
  if (typeof input !== "object" || input === null || !("card_id" in input)) return undefined;
  const { card_id } = input as { card_id: unknown };
  return isCardNumber(card_id) ? card_id : undefined;
}

/** Starts a dispatch task for a surface, as {@linkcode submitRun} does a run. */
export async function submitTask(
  services: Services,
  input: unknown,
  caller: Caller,
  options: SubmitOptions = {},
): Promise<TaskStatus> {
  return await submitWork(services, {
    kind: "task",
    enqueue: () => services.tasks.enqueue(input, caller),
    start: () => services.tasks.start(input, caller),
    idOf: (status) => status.task_id,
    workHere: (id) => services.tasks.claim(id),
  }, options);
}

import type { Caller, Ledger, RunStatus, TaskStatus } from "../ledger/mod.ts";
import type { Services } from "./open_services.ts";

/** How long one answer to "is a daemon alive?" is reused, in ms. */
const DAEMON_CHECK_MS = 1000;

const checks = new WeakMap<Ledger, { at: number; alive: Promise<boolean> }>();

/** Whether a live daemon shares this ledger: its queue worker will claim queued work. */
export function daemonAlive(ledger: Ledger): Promise<boolean> {
  const now = Date.now();
  const cached = checks.get(ledger);
  if (cached && now - cached.at < DAEMON_CHECK_MS) return cached.alive;
  const alive = ledger.listHosts().then(
    (hosts) => hosts.some((host) => host.alive && host.role === "daemon"),
    () => false,
  );
  checks.set(ledger, { at: now, alive });
  return alive;
}

/**
 * Starts a run for a surface: queued for the daemon when one is alive (the run then outlives
 * the process that asked for it), else run in this process. Returns its first status.
 */
export async function submitRun(
  services: Services,
  input: unknown,
  caller: Caller,
): Promise<RunStatus> {
  return (await daemonAlive(services.ledger))
    ? await services.runs.enqueue(input, caller)
    : await services.runs.start(input, caller);
}

/** Starts a dispatch task for a surface, as {@linkcode submitRun} does a run. */
export async function submitTask(
  services: Services,
  input: unknown,
  caller: Caller,
): Promise<TaskStatus> {
  return (await daemonAlive(services.ledger))
    ? await services.tasks.enqueue(input, caller)
    : await services.tasks.start(input, caller);
}

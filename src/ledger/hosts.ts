import { platform } from "../platform/mod.ts";
import { fitRecord } from "./fit.ts";
import { fromBytes, toBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";
import { type LedgerContext, now, taskActivity } from "./context.ts";
import * as daemon from "./daemon.ts";
import { markInterrupted } from "./runs.ts";
import { taskBytes, taskOf } from "./tasks.ts";
import type { HostInfo, HostLedger, HostRef } from "./interface.ts";
import type { TaskEvent } from "./records.ts";

/**
 * A host whose heartbeat is older than this is taken for dead even if its pid is in use (or
 * when its pid cannot be checked). Hosts beat every 2 s (`HEARTBEAT_MS`).
 */
const STALE_HOST_MS = 10_000;

/**
 * A dead host whose last heartbeat is older than this leaves the ledger the next time the hosts
 * are listed: listings (`/api/status`, `svc health`) keep the recently dead, to show what
 * stopped, not every process that ever ran. Its record says nothing more than its absence does:
 * a host without a record is dead.
 */
export const HOST_FORGET_MS = 10 * 60_000;

interface HostDoc {
  pid: number;
  started_at: string;
  heartbeat_at: string;
  role?: "daemon";
  /** The machine (boot id and host name): a pid is checked only on the machine it is from. */
  machine?: string;
  hostname?: string;
  providers?: string[];
}

/** Who this machine is, read once: a pid means something only on the machine it is from. */
let machine: Promise<{ machine?: string; hostname?: string }> | undefined;
/** This machine's boot id and host name, where they can be read. */
export function thisMachine(): Promise<{ machine?: string; hostname?: string }> {
  machine ??= (async () => {
    const p = platform();
    const read = (path: string) =>
      p.readTextFile(path).then((t) => t.trim().slice(0, 200), () => "");
    const hostname = await read("/proc/sys/kernel/hostname") || await read("/etc/hostname");
    const boot = await read("/proc/sys/kernel/random/boot_id");
    return {
      ...(boot || hostname ? { machine: `${boot}/${hostname}` } : {}),
      ...(hostname ? { hostname } : {}),
    };
  })();
  return machine;
}

/** Says that this host is alive. Hosts refresh it while they have runs. */
async function heartbeat(ctx: LedgerContext, host: HostRef, startedAt: string): Promise<void> {
  const doc: HostDoc = {
    pid: host.pid,
    started_at: startedAt,
    heartbeat_at: now(),
    ...(host.role ? { role: host.role } : {}),
    ...(ctx.machine ? { machine: ctx.machine } : {}),
    ...(ctx.hostname ? { hostname: ctx.hostname } : {}),
    ...(host.providers ? { providers: [...host.providers].slice(0, 64) } : {}),
  };
  await ctx.kv.atomic().set(KEYS.host(host.id), fitRecord(doc).bytes).commit();
}

/**
 * A fresh heartbeat, and a process that exists where that can be checked: on this machine.
 * A pid from another machine sharing the ledger says nothing here; its heartbeat decides.
 */
function alive(ctx: LedgerContext, host: HostDoc): boolean {
  const local = ctx.shared === undefined ||
    (host.machine !== undefined && host.machine === ctx.machine);
  return (!local || platform().processAlive(host.pid) !== false) &&
    Date.now() - Date.parse(host.heartbeat_at) < STALE_HOST_MS;
}

/** Whether a host is alive: its record exists, its process (if it can be checked) does, its heartbeat is fresh. */
async function liveHost(
  ctx: LedgerContext,
  hostId: string,
): Promise<{ alive: boolean; record: boolean }> {
  const entry = await ctx.kv.get(KEYS.host(hostId));
  if (!entry.value) return { alive: false, record: false };
  return { alive: alive(ctx, fromBytes<HostDoc>(entry.value)), record: true };
}

/**
 * Marks `interrupted` every queued or running run whose host is gone (no record, no such
 * process, or a stale heartbeat). Returns their ids. Their journals stay, for resume.
 */
async function recoverInterrupted(ctx: LedgerContext, self: HostRef): Promise<string[]> {
  const recovered: string[] = [];
  for await (const entry of ctx.kv.list(KEYS.active())) {
    const runId = entry.key.at(-1);
    if (typeof runId !== "string" || !entry.value) continue;
    const owner = fromBytes<{ host_id: string; pid: number }>(entry.value);
    if (owner.host_id === self.id) continue;
    const host = await liveHost(ctx, owner.host_id);
    if (host.alive) continue;
    const ok = await markInterrupted(ctx, runId, entry.versionstamp, {
      code: "interrupted",
      message:
        "the host running this run stopped before it ended; its journal is kept: resume it with resume_from",
    });
    if (!ok) continue;
    if (host.record) await ctx.kv.atomic().delete(KEYS.host(owner.host_id)).commit();
    recovered.push(runId);
  }
  return recovered;
}

/**
 * Ends `interrupted` a run of this host that could not write its own end (its ledger writes
 * failed: disk full, file locked). The end is made from the run's record as committed, so
 * that its counters match its journal. False when the run has already ended.
 */
async function interruptRun(
  ctx: LedgerContext,
  runId: string,
  error: { code: string; message: string },
): Promise<boolean> {
  const active = await ctx.kv.get(KEYS.active(runId));
  if (!active.value) return false;
  return await markInterrupted(ctx, runId, active.versionstamp, error);
}

/**
 * Marks `interrupted` every running task whose worker host is gone, as
 * {@linkcode recoverInterrupted} does for runs. Returns their ids.
 */
async function recoverInterruptedTasks(ctx: LedgerContext, self: HostRef): Promise<string[]> {
  const recovered: string[] = [];
  for await (const entry of ctx.kv.list(KEYS.activeTasks())) {
    const taskId = entry.key.at(-1);
    if (typeof taskId !== "string" || !entry.value) continue;
    const { host_id } = fromBytes<{ host_id: string }>(entry.value);
    if (host_id === self.id || (await liveHost(ctx, host_id)).alive) continue;
    const taskEntry = await ctx.kv.get(KEYS.task(taskId));
    if (!taskEntry.value) continue;
    const task = await taskOf(ctx, taskEntry.value);
    task.state = "interrupted";
    task.ended_at = now();
    task.error = {
      code: "interrupted",
      message: "the process running this task stopped before it ended",
    };
    const seq = (await ctx.lastSeq(KEYS.taskEvents(taskId))) + 1;
    const event: TaskEvent = { at: task.ended_at, task_id: taskId, state: "interrupted" };
    const bytes = await taskBytes(ctx, task);
    const ok = await ctx.commit((atomic) =>
      atomic
        .check(KEYS.task(taskId), taskEntry.versionstamp)
        .check(KEYS.activeTasks(taskId), entry.versionstamp)
        .set(KEYS.task(taskId), bytes)
        .set(KEYS.taskEvents(taskId, seq), toBytes(event))
        .delete(KEYS.activeTasks(taskId))
        .delete(KEYS.ownerTasks(task.owner, taskId))
        .set(KEYS.feedTick, toBytes({})), taskActivity(task, event));
    if (!ok) continue;
    ctx.notify({ kind: "task", id: taskId });
    recovered.push(taskId);
  }
  await freeDeadTaskSlots(ctx, self);
  return recovered;
}

/**
 * Frees the owners' task slots that a dead host took for tasks no one will run: a task that
 * has ended or is gone, or one its host recorded to run itself and died before it began (not
 * in the queue, not running). A task waiting in the queue keeps its slot for the worker that
 * takes it up; a running one is recovered with its worker.
 */
async function freeDeadTaskSlots(ctx: LedgerContext, self: HostRef): Promise<void> {
  for await (const entry of ctx.kv.list(KEYS.allOwnerTasks)) {
    const [, owner, taskId] = entry.key;
    if (typeof owner !== "string" || typeof taskId !== "string" || !entry.value) continue;
    const { host_id } = fromBytes<{ host_id: string }>(entry.value);
    if (host_id === self.id || (await liveHost(ctx, host_id)).alive) continue;
    const taskEntry = await ctx.kv.get(KEYS.task(taskId));
    const task = taskEntry.value ? await taskOf(ctx, taskEntry.value) : undefined;
    const waiting = task?.state === "queued" &&
      (await ctx.kv.get(KEYS.queue("task", taskId))).value !== null;
    if (waiting || task?.state === "running") continue;
    await ctx.kv.atomic().check(entry.key, entry.versionstamp).delete(entry.key).commit();
  }
}

/** The hosts sharing the ledger, with their role and whether they are alive. */
async function listHosts(ctx: LedgerContext): Promise<HostInfo[]> {
  const out: HostInfo[] = [];
  for await (const entry of ctx.kv.list(KEYS.hosts)) {
    const id = entry.key.at(-1);
    if (typeof id !== "string" || !entry.value) continue;
    const doc = fromBytes<HostDoc>(entry.value);
    if (Date.now() - Date.parse(doc.heartbeat_at) > HOST_FORGET_MS) {
      // Only if no heartbeat came in between: a host that beats again is listed again.
      await ctx.kv.atomic().check(KEYS.host(id), entry.versionstamp).delete(KEYS.host(id)).commit()
        .catch(() => {});
      continue;
    }
    out.push({
      host_id: id,
      pid: doc.pid,
      role: doc.role ?? "host",
      started_at: doc.started_at,
      heartbeat_at: doc.heartbeat_at,
      alive: alive(ctx, doc),
      ...(doc.hostname ? { hostname: doc.hostname } : {}),
      ...(doc.providers ? { providers: doc.providers } : {}),
    });
  }
  return out;
}

/** The hosts, their crash recovery and their leases, of a ledger's context. */
export function hostLedger(ctx: LedgerContext): HostLedger {
  return {
    heartbeat: (host, startedAt) => heartbeat(ctx, host, startedAt),
    removeHost: async (host) => {
      await ctx.kv.atomic().delete(KEYS.host(host.id)).commit();
    },
    recoverInterrupted: (self) => recoverInterrupted(ctx, self),
    interruptRun: (runId, error) => interruptRun(ctx, runId, error),
    recoverInterruptedTasks: (self) => recoverInterruptedTasks(ctx, self),
    listHosts: () => listHosts(ctx),
    acquireLease: (name, options) => daemon.acquireLease(ctx.kv, name, options),
    readLease: (name) => daemon.readLease(ctx.kv, name),
    releaseLease: (name, holder) => daemon.releaseLease(ctx.kv, name, holder),
  };
}

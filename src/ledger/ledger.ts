import { SvcError } from "../errors/mod.ts";
import { joinPath, type KvKey, type KvStore, platform } from "../platform/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";
import { fitRecord, VALUE_LIMIT } from "./fit.ts";
import { fromBytes, sha256, toBytes } from "./json_bytes.ts";
import { KEYS, MIGRATIONS, SCHEMA_VERSION } from "./keys.ts";
import {
  type CallRecord,
  type JournalEntry,
  type NarrationEntry,
  type RunEvent,
  type RunStatus,
  type SecurityEvent,
  type SessionRecord,
  type TaskEvent,
  type TaskStatus,
  TERMINAL_STATES,
} from "./records.ts";
import type { ChatMessage } from "./chat.ts";

/** Values larger than this (as JSON) go to a file in the run directory; KV values hold 64 KiB. */
export const INLINE_LIMIT = 48 * 1024;
/** Room a document keeps beside its record for a blob reference and its own wrapper. */
const REF_ROOM = 256;
/**
 * A host whose heartbeat is older than this is taken for dead even if its pid is in use (or
 * when its pid cannot be checked). Hosts beat every {@linkcode HEARTBEAT_MS}.
 */
const STALE_HOST_MS = 10_000;
/** How often a host with runs refreshes its heartbeat. */
export const HEARTBEAT_MS = 2_000;

/** A JSON value kept inline, or in a blob file of the run directory. */
type Stored = { value: JsonValue } | { ref: string };

/** The host that runs a run, as recorded for crash recovery. */
export interface HostRef {
  id: string;
  pid: number;
}

interface RunDoc {
  v: 1;
  status: RunStatus;
  result?: Stored;
}

interface JournalDoc {
  v: 1;
  entry: JournalEntry;
  result?: Stored;
}

interface TaskDoc {
  v: 1;
  task: TaskStatus;
  result?: Stored;
}

interface HostDoc {
  pid: number;
  started_at: string;
  heartbeat_at: string;
}

/** A persisted event: state changes and conditions. */
export type StoredEvent = Extract<RunEvent, { type: "state" | "condition" }>;

/**
 * One write of a run. {@linkcode Ledger.write} commits a list of them together, so a run's
 * burst of changes costs one KV commit. `status` is the run as it was at that write.
 */
export type LedgerOp =
  | { kind: "status"; status: RunStatus; event?: { seq: number; event: StoredEvent } }
  | { kind: "journal"; status: RunStatus; entry: JournalEntry }
  | { kind: "narration"; seq: number; entry: NarrationEntry }
  | { kind: "security"; seq: number; event: SecurityEvent };

/** KV limits: 1000 mutations and 800 KiB an atomic commit; stay well inside both. */
const BATCH_MUTATIONS = 400;
const BATCH_BYTES = 512 * 1024;

function now(): string {
  return new Date().toISOString();
}

/** The status as stored: without the lists kept under their own keys, and without the result. */
function bareStatus(status: RunStatus): RunStatus {
  const { result: _result, ...rest } = status;
  return { ...rest, narration: [], security_events: [] };
}

/**
 * The ledger: runs, narration, conditions and journals in one Deno KV file under `SVC_HOME`,
 * plus a directory per run. The only module that touches KV; values are JSON bytes.
 */
export class Ledger {
  /** The data directory. */
  readonly home: string;
  readonly #kv: KvStore;

  private constructor(home: string, kv: KvStore) {
    this.home = home;
    this.#kv = kv;
  }

  /** Opens (creating if needed) the ledger of a data directory and brings its schema up to date. */
  static async open(home: string): Promise<Ledger> {
    const p = platform();
    await p.mkdir(home);
    const kv = await p.openKv(joinPath(home, "svc.kv"));
    const ledger = new Ledger(home, kv);
    try {
      await ledger.#migrate();
    } catch (error) {
      kv.close();
      throw error;
    }
    return ledger;
  }

  async #migrate(): Promise<void> {
    const entry = await this.#kv.get(KEYS.schema);
    const version = entry.value ? fromBytes<{ version: number }>(entry.value).version : 0;
    if (version > SCHEMA_VERSION) {
      throw new SvcError(
        "internal",
        `Cannot open the ledger in ${this.home}: it has schema version ${version}, this svc knows up to ${SCHEMA_VERSION}`,
      );
    }
    // An empty ledger starts at the current version; older ones run the missing steps.
    for (let v = Math.max(version, 1); v < SCHEMA_VERSION; v++) await MIGRATIONS[v - 1]?.(this.#kv);
    if (version !== SCHEMA_VERSION) {
      await this.#kv.atomic().check(KEYS.schema, entry.versionstamp).set(
        KEYS.schema,
        toBytes({ version: SCHEMA_VERSION }),
      ).commit();
    }
  }

  /** Closes the KV file. */
  close(): void {
    this.#kv.close();
  }

  /** The run's directory: script text, result, final status and large values. */
  runDir(runId: string): string {
    return joinPath(this.home, "runs", runId);
  }

  /** A task's directory: large results. */
  taskDir(taskId: string): string {
    return joinPath(this.home, "tasks", taskId);
  }

  /** Keeps `value` inline when it takes at most `room` bytes (and the inline limit), else in a blob. */
  async #store(
    runId: string,
    value: JsonValue,
    options: { dirOf?: (id: string) => string; room?: number } = {},
  ): Promise<Stored> {
    const dirOf = options.dirOf ?? ((id: string) => this.runDir(id));
    const room = Math.min(INLINE_LIMIT, options.room ?? INLINE_LIMIT);
    const json = JSON.stringify(value);
    if (json.length <= room / 4 || new TextEncoder().encode(json).length <= room) {
      return { value };
    }
    const name = `${await sha256(json)}.json`;
    const dir = joinPath(dirOf(runId), "blobs");
    const p = platform();
    await p.mkdir(dir);
    // Written whole, then published: a reader never sees half a blob.
    const temp = joinPath(dir, `.${name}.tmp`);
    await p.writeTextFile(temp, json);
    await p.rename(temp, joinPath(dir, name));
    return { ref: `blobs/${name}` };
  }

  async #load(
    runId: string,
    stored: Stored,
    dirOf: (id: string) => string = (id) => this.runDir(id),
  ): Promise<JsonValue> {
    if ("value" in stored) return stored.value;
    return JSON.parse(
      await platform().readTextFile(joinPath(dirOf(runId), stored.ref)),
    ) as JsonValue;
  }

  async #taskBytes(task: TaskStatus): Promise<Uint8Array> {
    const { result, ...rest } = task;
    const doc: TaskDoc = { v: 1, task: rest };
    if (result !== undefined) {
      doc.result = await this.#store(task.task_id, result, { dirOf: (id) => this.taskDir(id) });
    }
    return toBytes(doc);
  }

  async #taskOf(bytes: Uint8Array): Promise<TaskStatus> {
    const doc = fromBytes<TaskDoc>(bytes);
    const task: TaskStatus = doc.task;
    if (doc.result) {
      task.result = await this.#load(task.task_id, doc.result, (id) => this.taskDir(id));
    }
    return task;
  }

  /** Records a new run and writes its script into the run directory. */
  async createRun(
    status: RunStatus,
    options: { script: string; host: HostRef; event: StoredEvent },
  ): Promise<void> {
    const p = platform();
    await p.mkdir(this.runDir(status.run_id));
    // A fixed name: the caller's filename is for display only and never becomes a path.
    await p.writeTextFile(joinPath(this.runDir(status.run_id), "script.js"), options.script);
    const doc: RunDoc = { v: 1, status: fitRecord(bareStatus(status), VALUE_LIMIT).value };
    const result = await this.#kv.atomic()
      .check(KEYS.run(status.run_id), null)
      .set(KEYS.run(status.run_id), toBytes(doc))
      .set(KEYS.runsByOwner(status.owner, status.run_id), toBytes({}))
      .set(KEYS.active(status.run_id), toBytes({ host_id: options.host.id, pid: options.host.pid }))
      .set(KEYS.events(status.run_id, 0), fitRecord(options.event).bytes)
      .commit();
    if (!result.ok) {
      throw new SvcError("internal", `Cannot record run ${status.run_id}: the id is taken`);
    }
  }

  /**
   * Commits a run's writes in order, as few atomic KV operations as the size limits allow.
   * A journal entry always commits together with the run counters that include it, a state
   * change with its event. A terminal status leaves the active index and gets its files.
   */
  async write(runId: string, ops: LedgerOp[]): Promise<void> {
    type Mutation = { key: KvKey; value: Uint8Array };
    const chunks: Array<{ mutations: Mutation[]; bytes: number; status?: RunStatus }> = [];
    let chunk: (typeof chunks)[number] = { mutations: [], bytes: 0 };
    let finalStatus: RunStatus | undefined;
    const add = (mutation: Mutation, status?: RunStatus) => {
      if (
        chunk.mutations.length >= BATCH_MUTATIONS ||
        chunk.bytes + mutation.value.length > BATCH_BYTES
      ) {
        chunks.push(chunk);
        chunk = { mutations: [], bytes: 0, status: chunk.status };
      }
      chunk.mutations.push(mutation);
      chunk.bytes += mutation.value.length + 64;
      if (status) chunk.status = status;
    };
    for (const op of ops) {
      switch (op.kind) {
        case "narration":
          add({ key: KEYS.narration(runId, op.seq), value: fitRecord(op.entry).bytes });
          break;
        case "security":
          add({ key: KEYS.security(runId, op.seq), value: fitRecord(op.event).bytes });
          break;
        case "journal": {
          const { result, ...rest } = op.entry;
          // The entry is fitted first; its result goes inline only in the room left beside it.
          const entry = fitRecord(rest, VALUE_LIMIT - REF_ROOM);
          const doc: JournalDoc = { v: 1, entry: entry.value };
          if (result !== undefined) {
            doc.result = await this.#store(runId, result, {
              room: VALUE_LIMIT - REF_ROOM - entry.bytes.length,
            });
          }
          add({ key: KEYS.journal(runId, op.entry.seq), value: toBytes(doc) }, op.status);
          const call: CallRecord = {
            at: op.entry.ended_at,
            source: "run",
            id: runId,
            seq: op.entry.seq,
            owner: op.status.owner,
            provider: op.entry.provider,
            model: op.entry.model,
            outcome: op.entry.outcome,
            duration_ms: op.entry.duration_ms,
            usage: op.entry.usage,
            cost_usd: op.entry.cost_usd,
          };
          add({ key: KEYS.call(call.at, runId, call.seq), value: fitRecord(call).bytes });
          break;
        }
        case "status":
          if (op.event) {
            add(
              { key: KEYS.events(runId, op.event.seq), value: fitRecord(op.event.event).bytes },
              op.status,
            );
          } else chunk.status = op.status;
          finalStatus = op.status;
          break;
      }
    }
    chunks.push(chunk);
    const last = ops.findLast((op) => op.kind === "status" || op.kind === "journal");
    const latest = last && "status" in last ? last.status : undefined;
    const terminal = latest !== undefined && TERMINAL_STATES.has(latest.state);
    for (const [index, { mutations, status }] of chunks.entries()) {
      if (mutations.length === 0 && !status) continue;
      const atomic = this.#kv.atomic();
      for (const { key, value } of mutations) atomic.set(key, value);
      if (status) {
        const fitted = fitRecord(bareStatus(status), VALUE_LIMIT - REF_ROOM);
        const doc: RunDoc = { v: 1, status: fitted.value };
        if (index === chunks.length - 1 && terminal && latest.result !== undefined) {
          doc.result = await this.#store(runId, latest.result, {
            room: VALUE_LIMIT - REF_ROOM - fitted.bytes.length,
          });
        }
        atomic.set(KEYS.run(runId), toBytes(doc));
      }
      if (index === chunks.length - 1 && terminal) atomic.delete(KEYS.active(runId));
      await atomic.commit();
    }
    if (terminal && finalStatus) await this.#writeSummary(finalStatus);
  }

  async #writeSummary(status: RunStatus): Promise<void> {
    const dir = this.runDir(status.run_id);
    const p = platform();
    await p.mkdir(dir);
    if (status.result !== undefined) {
      await p.writeTextFile(
        joinPath(dir, "result.json"),
        `${JSON.stringify(status.result, null, 2)}\n`,
      );
    }
    const { narration: _narration, security_events: _security, ...summary } = status;
    await p.writeTextFile(joinPath(dir, "status.json"), `${JSON.stringify(summary, null, 2)}\n`);
  }

  /** Saves the run's status, with the event that changed it in the same atomic write. */
  saveRun(status: RunStatus, event?: { seq: number; event: StoredEvent }): Promise<void> {
    return this.write(status.run_id, [{ kind: "status", status, event }]);
  }

  /** Records a finished call and the run's counters that it changed, together. */
  addJournalEntry(status: RunStatus, entry: JournalEntry): Promise<void> {
    return this.write(status.run_id, [{ kind: "journal", status, entry }]);
  }

  async #list<T>(prefix: KvKey): Promise<T[]> {
    const out: T[] = [];
    for await (const entry of this.#kv.list(prefix)) {
      if (entry.value) out.push(fromBytes<T>(entry.value));
    }
    return out;
  }

  /** The run's full status, or undefined when there is no such run. */
  async getRun(runId: string): Promise<RunStatus | undefined> {
    const entry = await this.#kv.get(KEYS.run(runId));
    if (!entry.value) return undefined;
    const doc = fromBytes<RunDoc>(entry.value);
    const status = doc.status;
    status.narration = await this.#list<NarrationEntry>(KEYS.narration(runId));
    status.security_events = await this.#list<SecurityEvent>(KEYS.security(runId));
    if (doc.result) status.result = await this.#load(runId, doc.result);
    return status;
  }

  /** The run's journal in call order, results included. */
  async getJournal(runId: string): Promise<JournalEntry[]> {
    const docs = await this.#list<JournalDoc>(KEYS.journal(runId));
    return await Promise.all(docs.map(async (doc) => {
      const entry: JournalEntry = doc.entry;
      if (doc.result) entry.result = await this.#load(runId, doc.result);
      return entry;
    }));
  }

  /** The run's stored events (state changes and conditions), in order. */
  async getEvents(runId: string): Promise<StoredEvent[]> {
    return await this.#list<StoredEvent>(KEYS.events(runId));
  }

  /** Statuses of runs (without narration), newest first; only `owner`'s when given. */
  async listRuns(options: { owner?: string; limit?: number } = {}): Promise<RunStatus[]> {
    const limit = options.limit ?? 100;
    const out: RunStatus[] = [];
    if (options.owner !== undefined) {
      for await (
        const entry of this.#kv.list(KEYS.runsByOwner(options.owner), { reverse: true, limit })
      ) {
        const runId = entry.key.at(-1);
        const run = typeof runId === "string" ? await this.#kv.get(KEYS.run(runId)) : undefined;
        if (run?.value) out.push(fromBytes<RunDoc>(run.value).status);
      }
      return out;
    }
    for await (const entry of this.#kv.list(KEYS.allRuns, { reverse: true, limit })) {
      if (entry.value) out.push(fromBytes<RunDoc>(entry.value).status);
    }
    return out;
  }

  /** Says that this host is alive. Hosts refresh it while they have runs. */
  async heartbeat(host: HostRef, startedAt: string): Promise<void> {
    const doc: HostDoc = { pid: host.pid, started_at: startedAt, heartbeat_at: now() };
    await this.#kv.atomic().set(KEYS.host(host.id), toBytes(doc)).commit();
  }

  /** Removes this host's record when it shuts down cleanly. */
  async removeHost(host: HostRef): Promise<void> {
    await this.#kv.atomic().delete(KEYS.host(host.id)).commit();
  }

  /**
   * Marks `interrupted` every queued or running run whose host is gone (no record, no such
   * process, or a stale heartbeat). Returns their ids. Their journals stay, for resume.
   */
  async recoverInterrupted(self: HostRef): Promise<string[]> {
    const recovered: string[] = [];
    for await (const entry of this.#kv.list(KEYS.active())) {
      const runId = entry.key.at(-1);
      if (typeof runId !== "string" || !entry.value) continue;
      const owner = fromBytes<{ host_id: string; pid: number }>(entry.value);
      if (owner.host_id === self.id) continue;
      const host = await this.#liveHost(owner.host_id);
      if (host.alive) continue;
      const runEntry = await this.#kv.get(KEYS.run(runId));
      if (!runEntry.value) continue;
      const doc = fromBytes<RunDoc>(runEntry.value);
      const at = now();
      doc.status.state = "interrupted";
      doc.status.ended_at = at;
      doc.status.calls.queued = 0;
      doc.status.calls.running = 0;
      doc.status.error = {
        code: "interrupted",
        message:
          "the host running this run stopped before it ended; its journal is kept: resume it with resume_from",
      };
      // The added error must not push a document that was full over the value limit.
      const beside = doc.result ? toBytes(doc.result).length : 0;
      doc.status = fitRecord(doc.status, VALUE_LIMIT - REF_ROOM - beside).value;
      const last = await this.#lastEventSeq(runId);
      const event: StoredEvent = { type: "state", run_id: runId, at, state: "interrupted" };
      const result = await this.#kv.atomic()
        .check(KEYS.run(runId), runEntry.versionstamp)
        .check(KEYS.active(runId), entry.versionstamp)
        .set(KEYS.run(runId), toBytes(doc))
        .set(KEYS.events(runId, last + 1), toBytes(event))
        .delete(KEYS.active(runId))
        .commit();
      if (!result.ok) continue;
      if (host.record) await this.#kv.atomic().delete(KEYS.host(owner.host_id)).commit();
      const status = await this.getRun(runId);
      if (status) await this.saveRun(status);
      recovered.push(runId);
    }
    return recovered;
  }

  /** Whether a host is alive: its record exists, its process (if it can be checked) does, its heartbeat is fresh. */
  async #liveHost(hostId: string): Promise<{ alive: boolean; record: boolean }> {
    const entry = await this.#kv.get(KEYS.host(hostId));
    if (!entry.value) return { alive: false, record: false };
    const host = fromBytes<HostDoc>(entry.value);
    const alive = platform().processAlive(host.pid) !== false &&
      Date.now() - Date.parse(host.heartbeat_at) < STALE_HOST_MS;
    return { alive, record: true };
  }

  /**
   * Marks `interrupted` every running task whose worker host is gone, as
   * {@linkcode recoverInterrupted} does for runs. Returns their ids.
   */
  async recoverInterruptedTasks(self: HostRef): Promise<string[]> {
    const recovered: string[] = [];
    for await (const entry of this.#kv.list(KEYS.activeTasks())) {
      const taskId = entry.key.at(-1);
      if (typeof taskId !== "string" || !entry.value) continue;
      const { host_id } = fromBytes<{ host_id: string }>(entry.value);
      if (host_id === self.id || (await this.#liveHost(host_id)).alive) continue;
      const taskEntry = await this.#kv.get(KEYS.task(taskId));
      if (!taskEntry.value) continue;
      const task = await this.#taskOf(taskEntry.value);
      task.state = "interrupted";
      task.ended_at = now();
      task.error = {
        code: "interrupted",
        message: "the process running this task stopped before it ended",
      };
      const seq = (await this.#lastSeq(KEYS.taskEvents(taskId))) + 1;
      const event: TaskEvent = { at: task.ended_at, task_id: taskId, state: "interrupted" };
      const result = await this.#kv.atomic()
        .check(KEYS.task(taskId), taskEntry.versionstamp)
        .check(KEYS.activeTasks(taskId), entry.versionstamp)
        .set(KEYS.task(taskId), await this.#taskBytes(task))
        .set(KEYS.taskEvents(taskId, seq), toBytes(event))
        .delete(KEYS.activeTasks(taskId))
        .commit();
      if (result.ok) recovered.push(taskId);
    }
    return recovered;
  }

  /** Records a new task (queued) with its first event. */
  async createTask(task: TaskStatus): Promise<void> {
    const event: TaskEvent = { at: task.created_at, task_id: task.task_id, state: task.state };
    const result = await this.#kv.atomic()
      .check(KEYS.task(task.task_id), null)
      .set(KEYS.task(task.task_id), await this.#taskBytes(task))
      .set(KEYS.tasksByOwner(task.owner, task.task_id), toBytes({}))
      .set(KEYS.taskEvents(task.task_id, 0), toBytes(event))
      .commit();
    if (!result.ok) {
      throw new SvcError("internal", `Cannot record task ${task.task_id}: the id is taken`);
    }
  }

  /**
   * Saves a task; with `event`, its state change commits with it. With `expect`, the write
   * happens only if the task is still in that state (claiming a queued task, for one).
   * Returns whether it was written. A finished task also enters the call log.
   */
  async saveTask(
    task: TaskStatus,
    options: { eventSeq?: number; expect?: TaskStatus["state"] } = {},
  ): Promise<boolean> {
    const atomic = this.#kv.atomic();
    if (options.expect !== undefined) {
      const current = await this.#kv.get(KEYS.task(task.task_id));
      if (!current.value || (await this.#taskOf(current.value)).state !== options.expect) {
        return false;
      }
      atomic.check(KEYS.task(task.task_id), current.versionstamp);
    }
    atomic.set(KEYS.task(task.task_id), await this.#taskBytes(task));
    if (task.state === "running" && task.host_id !== null) {
      atomic.set(KEYS.activeTasks(task.task_id), toBytes({ host_id: task.host_id }));
    } else if (task.state !== "queued") atomic.delete(KEYS.activeTasks(task.task_id));
    if (options.eventSeq !== undefined) {
      const event: TaskEvent = {
        at: task.ended_at ?? task.started_at ?? task.created_at,
        task_id: task.task_id,
        state: task.state,
      };
      atomic.set(KEYS.taskEvents(task.task_id, options.eventSeq), toBytes(event));
    }
    if (task.ended_at !== null && task.provider !== null) {
      const call: CallRecord = {
        at: task.ended_at,
        source: "task",
        id: task.task_id,
        seq: 1,
        owner: task.owner,
        provider: task.provider,
        model: task.model,
        outcome: task.state === "succeeded"
          ? "live"
          : task.state === "failed"
          ? "failed"
          : task.state === "cancelled"
          ? "cancelled"
          : "timeout",
        duration_ms: task.started_at ? Date.parse(task.ended_at) - Date.parse(task.started_at) : 0,
        usage: task.usage,
        cost_usd: task.cost_usd,
      };
      atomic.set(KEYS.call(call.at, task.task_id, 1), toBytes(call));
    }
    return (await atomic.commit()).ok;
  }

  /** A task's status, or undefined. */
  async getTask(taskId: string): Promise<TaskStatus | undefined> {
    const entry = await this.#kv.get(KEYS.task(taskId));
    return entry.value ? await this.#taskOf(entry.value) : undefined;
  }

  /** A task's state changes, in order. */
  getTaskEvents(taskId: string): Promise<TaskEvent[]> {
    return this.#list<TaskEvent>(KEYS.taskEvents(taskId));
  }

  /** Tasks, newest first; only `owner`'s when given. */
  async listTasks(options: { owner?: string; limit?: number } = {}): Promise<TaskStatus[]> {
    const limit = options.limit ?? 100;
    const out: TaskStatus[] = [];
    if (options.owner === undefined) {
      for await (const entry of this.#kv.list(KEYS.allTasks, { reverse: true, limit })) {
        if (entry.value) out.push(await this.#taskOf(entry.value));
      }
      return out;
    }
    for await (
      const entry of this.#kv.list(KEYS.tasksByOwner(options.owner), { reverse: true, limit })
    ) {
      const id = entry.key.at(-1);
      const task = typeof id === "string" ? await this.getTask(id) : undefined;
      if (task) out.push(task);
    }
    return out;
  }

  /** Marks a task's cancel as asked for; its worker, wherever it runs, sees it. */
  async requestCancel(taskId: string): Promise<TaskStatus | undefined> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const entry = await this.#kv.get(KEYS.task(taskId));
      if (!entry.value) return undefined;
      const task = await this.#taskOf(entry.value);
      if (task.cancel_requested) return task;
      task.cancel_requested = true;
      const result = await this.#kv.atomic()
        .check(KEYS.task(taskId), entry.versionstamp)
        .set(KEYS.task(taskId), await this.#taskBytes(task))
        .commit();
      if (result.ok) return task;
    }
    throw new SvcError("conflict", `Cannot cancel task ${taskId}: it keeps changing`);
  }

  /** Records a new session; a name must be unique per owner. */
  async createSession(session: SessionRecord): Promise<void> {
    const atomic = this.#kv.atomic()
      .check(KEYS.session(session.session_id), null)
      .set(KEYS.session(session.session_id), toBytes(session))
      .set(KEYS.sessionsByOwner(session.owner, session.session_id), toBytes({}));
    if (session.name !== null) {
      atomic.check(KEYS.sessionName(session.owner, session.name), null)
        .set(
          KEYS.sessionName(session.owner, session.name),
          toBytes({ session_id: session.session_id }),
        );
    }
    if (!(await atomic.commit()).ok) {
      throw new SvcError(
        "conflict",
        `Cannot create session '${session.name ?? session.session_id}': it exists already`,
      );
    }
  }

  /** A session by id, or undefined. */
  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    const entry = await this.#kv.get(KEYS.session(sessionId));
    return entry.value ? fromBytes<SessionRecord>(entry.value) : undefined;
  }

  /** An owner's session by name, or undefined. */
  async findSession(owner: string, name: string): Promise<SessionRecord | undefined> {
    const entry = await this.#kv.get(KEYS.sessionName(owner, name));
    if (!entry.value) return undefined;
    return await this.getSession(fromBytes<{ session_id: string }>(entry.value).session_id);
  }

  /** An owner's sessions, newest first. */
  async listSessions(owner: string, limit = 100): Promise<SessionRecord[]> {
    const out: SessionRecord[] = [];
    for await (
      const entry of this.#kv.list(KEYS.sessionsByOwner(owner), { reverse: true, limit })
    ) {
      const id = entry.key.at(-1);
      const session = typeof id === "string" ? await this.getSession(id) : undefined;
      if (session) out.push(session);
    }
    return out;
  }

  /** An API session's messages, oldest first. */
  getSessionMessages(sessionId: string): Promise<ChatMessage[]> {
    return this.#list<ChatMessage>(KEYS.sessionMessages(sessionId));
  }

  /** Saves a session after a turn, with the turn's messages, in one atomic write. */
  async saveSessionTurn(session: SessionRecord, messages: ChatMessage[]): Promise<void> {
    const atomic = this.#kv.atomic().set(KEYS.session(session.session_id), toBytes(session));
    let seq = (await this.#lastSeq(KEYS.sessionMessages(session.session_id))) + 1;
    for (const message of messages) {
      atomic.set(KEYS.sessionMessages(session.session_id, seq++), toBytes(message));
    }
    await atomic.commit();
  }

  /** The call log (runs' calls and tasks), newest first. */
  async listCalls(options: { limit?: number; owner?: string } = {}): Promise<CallRecord[]> {
    const out: CallRecord[] = [];
    const limit = options.limit ?? 1000;
    for await (const entry of this.#kv.list(KEYS.calls, { reverse: true })) {
      if (!entry.value) continue;
      const call = fromBytes<CallRecord>(entry.value);
      if (options.owner !== undefined && call.owner !== options.owner) continue;
      out.push(call);
      if (out.length >= limit) break;
    }
    return out;
  }

  async #lastSeq(prefix: KvKey): Promise<number> {
    for await (const entry of this.#kv.list(prefix, { reverse: true, limit: 1 })) {
      const seq = entry.key.at(-1);
      if (typeof seq === "number") return seq;
    }
    return -1;
  }

  async #lastEventSeq(runId: string): Promise<number> {
    for await (const entry of this.#kv.list(KEYS.events(runId), { reverse: true, limit: 1 })) {
      const seq = entry.key.at(-1);
      if (typeof seq === "number") return seq;
    }
    return -1;
  }
}

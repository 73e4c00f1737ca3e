import { SvcError } from "../errors/mod.ts";
import { joinPath, type KvAtomic, type KvKey, type KvStore, platform } from "../platform/mod.ts";
import { jsonByteLength, type JsonValue, MAX_ARGS_BYTES } from "../schemas/mod.ts";
import { fitRecord, VALUE_LIMIT } from "./fit.ts";
import { fromBytes, sha256, toBytes } from "./json_bytes.ts";
import { type LedgerFiles, localFiles, sharedFiles } from "./files.ts";
import type { SharedKvStore } from "../platform/postgres.ts";
import { KEYS, MIGRATIONS, SCHEMA_VERSION } from "./keys.ts";
import { checkBefore, parseCallCursor } from "./cursor.ts";
import { isId } from "./ids.ts";
import { warnIfHomeShared } from "./private_home.ts";
import type {
  HostInfo,
  HostRef,
  Ledger,
  LedgerOp,
  ListOptions,
  ListRunsOptions,
  TaskApprovalNote,
} from "./interface.ts";
import {
  type ActivityItem,
  type CallRecord,
  type EventStream,
  type FeedItem,
  type JournalEntry,
  type NarrationEntry,
  type RunEvent,
  type RunInput,
  type RunStatus,
  type SecurityEvent,
  type SessionRecord,
  type TaskEvent,
  type TaskStatus,
  TERMINAL_STATES,
} from "./records.ts";
import type { ChatMessage } from "./chat.ts";
import * as collaborations from "./collaborations.ts";
import type { Page, PageOptions } from "./pages.ts";
import * as reviews from "./reviews.ts";
import * as approvals from "./approvals.ts";
import * as daemon from "./daemon.ts";
import type { QueueItem } from "./interface.ts";
import * as a2aTasks from "./a2a_tasks.ts";
import type {
  ApprovalDecided,
  ApprovalDecision,
  ApprovalRecord,
  ListApprovalsOptions,
} from "./approvals.ts";

/** Values larger than this (as JSON) go to a file in the run directory; KV values hold 64 KiB. */
export const INLINE_LIMIT = 48 * 1024;
/** Room a document keeps beside its record for a blob reference and its own wrapper. */
const REF_ROOM = 256;
/**
 * A host whose heartbeat is older than this is taken for dead even if its pid is in use (or
 * when its pid cannot be checked). Hosts beat every 2 s (`HEARTBEAT_MS`).
 */
const STALE_HOST_MS = 10_000;
/** How often a ledger with readers waiting for events looks for other processes' writes, in ms. */
const POLL_MS = 25;
/**
 * The same on a shared ledger, where other hosts' writes wake readers through the database's
 * notifications: the poll only covers a notification lost while a connection was down.
 */
const SHARED_POLL_MS = 1_000;
/** Live run streams whose head one ledger keeps in memory for its own readers. */
const KNOWN_HEADS = 1024;
/** Latest events of each such stream kept in memory, so that its followers read no KV. */
const TAIL_EVENTS = 16;
/** Most bytes of those events per stream: a run logging large lines keeps fewer (64 MiB in all). */
const TAIL_BYTES = 64 * 1024;

/** A live run this process runs: its stream's last seq and its latest events' bytes. */
interface KnownHead {
  head: number;
  /** Consecutive events ending at `head`, oldest first (at most {@linkcode TAIL_EVENTS}). */
  tail: Uint8Array[];
}
/**
 * Most runs `listRuns` examines when a `states` filter drops some: a rare state among many
 * runs returns fewer than `limit` rather than reading the whole ledger in one call.
 */
export const RUN_SCAN_LIMIT = 10_000;
/**
 * Attempts of a commit that appends to an owner's activity stream while other writers append
 * to it too; each failed attempt means another writer's commit went through.
 */
const ACTIVITY_ATTEMPTS = 100;

/** A JSON value kept inline, or in a blob file of the run directory. */
type Stored = { value: JsonValue } | { ref: string };

/**
 * `input.json` of a run directory: what the run was started with besides its script (kept in
 * `script.js` beside it) and its status. Absent for runs recorded before it existed.
 */
interface InputDoc {
  v: 1;
  args?: JsonValue;
  schema_attempts?: number;
  script_dir?: string;
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
  role?: "daemon";
  /** The machine (boot id and host name): a pid is checked only on the machine it is from. */
  machine?: string;
  hostname?: string;
  providers?: string[];
}

/** What a reader waits on: the feed of a run or a task, or an owner's activity stream. */
type WaitTarget = EventStream | { kind: "activity"; id: string };

/** A reader waiting for a stream to pass `after`. */
interface Waiter {
  stream: WaitTarget;
  after: number;
  wake: () => void;
}

/**
 * The latest events of a stream after a write of `written.events` (up to `written.head`): the
 * earlier tail when the new events follow it without a gap, else only the new ones that are
 * consecutive up to the head; at most {@linkcode TAIL_EVENTS} and {@linkcode TAIL_BYTES}.
 */
function tailOf(
  previous: KnownHead | undefined,
  written: { head: number; events: Map<number, Uint8Array> },
): Uint8Array[] {
  const fresh: Uint8Array[] = [];
  let seq = written.head;
  for (let bytes = written.events.get(seq); bytes; bytes = written.events.get(--seq)) {
    fresh.unshift(bytes);
  }
  const joined = previous && previous.head === seq ? [...previous.tail, ...fresh] : fresh;
  const tail = joined.slice(-TAIL_EVENTS);
  let bytes = tail.reduce((sum, event) => sum + event.length, 0);
  while (bytes > TAIL_BYTES && tail.length > 0) bytes -= tail.shift()!.length;
  return tail;
}

/** Lets the event loop end while `port` waits (Deno's and Node's ports both have `unref`). */
function unref(port: MessagePort): void {
  (port as MessagePort & { unref?: () => void }).unref?.();
}

function streamKey(stream: WaitTarget): string {
  return `${stream.kind}:${stream.id}`;
}

/** An activity item before its place in the owner's stream is known. */
type ActivityDraft = Omit<ActivityItem, "seq">;

/** Items to append to one owner's activity stream in a commit. */
interface ActivityAppend {
  owner: string;
  items: ActivityDraft[];
}

/** The list bound of keys under `prefix` older than the id `before`, if any (already checked). */
function below(prefix: KvKey, before: string | undefined): { end?: KvKey } {
  return before === undefined ? {} : { end: [...prefix, before] };
}

/** A task's state change as an append to its owner's activity stream. */
function taskActivity(task: TaskStatus, event: TaskEvent): ActivityAppend {
  return {
    owner: task.owner,
    items: [{ at: event.at, kind: "task", id: task.task_id, state: event.state }],
  };
}

/** A run's activity item for a change to `state`, named after the script's meta name. */
function runActivity(
  status: RunStatus,
  change: { at: string; state: RunStatus["state"] },
): ActivityDraft {
  return {
    at: change.at,
    kind: "run",
    id: status.run_id,
    state: change.state,
    ...(status.name ? { name: status.name } : {}),
  };
}

/** A run's folder of the ledger's files (script, input, large values). */
function runFiles(runId: string): string {
  return `runs/${runId}`;
}

/** A task's folder of the ledger's files (large results). */
function taskFiles(taskId: string): string {
  return `tasks/${taskId}`;
}

function eventsPrefix(stream: EventStream): KvKey {
  return stream.kind === "run" ? KEYS.events(stream.id) : KEYS.taskEvents(stream.id);
}

/**
 * KV limits: 1000 mutations and 800 KiB an atomic commit; stay inside both, with room for the
 * run's own keys and an activity append. A resumed run's 200 replayed calls fit one commit.
 */
const BATCH_MUTATIONS = 900;
const BATCH_BYTES = 512 * 1024;

function now(): string {
  return new Date().toISOString();
}

/** The status as stored: without the lists kept under their own keys, and without the result. */
function bareStatus(status: RunStatus): RunStatus {
  const { result: _result, ...rest } = status;
  return { ...rest, narration: [], security_events: [] };
}

/** Options of {@linkcode openLedger}. */
export interface OpenLedgerOptions {
  /**
   * How often readers waiting for events look for other processes' writes, in ms. Default 25;
   * 1000 on a shared ledger, where other hosts' writes wake readers through the database.
   */
  pollMs?: number;
  /**
   * The database of a ledger several hosts share (`postgres://...`, `SVC_LEDGER_URL`). Without
   * it, the ledger is the Deno KV file under `home`, this machine's alone.
   */
  url?: string;
}

/** Who this machine is, read once: a pid means something only on the machine it is from. */
let machine: Promise<{ machine?: string; hostname?: string }> | undefined;
function thisMachine(): Promise<{ machine?: string; hostname?: string }> {
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

/**
 * Opens (creating if needed) the ledger of a data directory, in a Deno KV file under it, or the
 * shared ledger in the database of `options.url`, and brings its schema up to date.
 */
export async function openLedger(home: string, options: OpenLedgerOptions = {}): Promise<Ledger> {
  const p = platform();
  await p.mkdir(home);
  await warnIfHomeShared(home);
  const where = await thisMachine();
  let ledger: KvLedger;
  if (options.url) {
    // Loaded only for a shared ledger: a host on KV files never loads the database client.
    const { openPostgresKv } = await import("../platform/postgres.ts");
    const store = await openPostgresKv(options.url, {
      namespace: "ledger",
      watch: [KEYS.feedTick],
    });
    ledger = new KvLedger(home, store, {
      pollMs: options.pollMs ?? SHARED_POLL_MS,
      files: sharedFiles(store),
      shared: store,
      ...where,
    });
  } else {
    const kv = await p.openKv(joinPath(home, "svc.kv"));
    ledger = new KvLedger(home, kv, {
      pollMs: options.pollMs ?? POLL_MS,
      files: localFiles(home),
      ...where,
    });
  }
  try {
    await ledger.migrate();
  } catch (error) {
    await ledger.close();
    throw error;
  }
  return ledger;
}

/**
 * The Deno KV ledger: runs, narration, conditions, journals, feeds, tasks and sessions in one
 * KV file under `SVC_HOME`, plus a directory per run. The only module that touches KV; values
 * are JSON bytes. Several processes may open the same file: readers in one see the writes of
 * another, through a key every event-adding write rewrites and waiting readers poll.
 */
class KvLedger implements Ledger {
  readonly home: string;
  readonly #kv: KvStore;
  readonly #pollMs: number;
  readonly #waiters = new Set<Waiter>();
  /**
   * The last event seq and latest events of each live run this process runs, so that its own
   * readers wait without reading the stream's head from KV and read what it just wrote from
   * memory. Only the process running a run writes its events while it runs (a queued run's
   * first event, written by whoever queued it, is not kept), so memory is the whole stream up
   * to that head; past it a reader reads the store. A terminal state forgets the run.
   */
  readonly #heads = new Map<string, KnownHead>();
  #poll: ReturnType<typeof setTimeout> | undefined;
  #polling = false;
  #pollAgain = false;
  #tick: string | null | undefined;
  #closed = false;
  /** Readers to wake once the writer's own continuation is done (see {@linkcode #notify}). */
  #woken: Waiter[] = [];
  readonly #wakeups = new MessageChannel();
  readonly #files: LedgerFiles;
  readonly #shared: SharedKvStore | undefined;
  readonly #machine: string | undefined;
  readonly #hostname: string | undefined;

  constructor(
    home: string,
    kv: KvStore,
    options: {
      pollMs: number;
      files: LedgerFiles;
      shared?: SharedKvStore;
      machine?: string;
      hostname?: string;
    },
  ) {
    this.home = home;
    this.#kv = kv;
    this.#pollMs = options.pollMs;
    this.#files = options.files;
    this.#shared = options.shared;
    this.#machine = options.machine;
    this.#hostname = options.hostname;
    // Another host's write of a feed: look now rather than at the next poll.
    this.#shared?.onChange(() => this.#pollNow());
    this.#wakeups.port1.onmessage = () => {
      const woken = this.#woken;
      this.#woken = [];
      for (const waiter of woken) waiter.wake();
    };
    // A wake-up pending never keeps the process alive.
    unref(this.#wakeups.port1);
  }

  /** Brings the schema up to date; run once by {@linkcode openLedger}. */
  migrate(): Promise<void> {
    return this.#migrate();
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

  /** Whether other hosts share this ledger (a database), or it is this machine's KV file. */
  get shared(): boolean {
    return this.#shared !== undefined;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#wakeups.port1.close();
    this.#wakeups.port2.close();
    for (const waiter of this.#waiters) waiter.wake();
    this.#waiters.clear();
    if (this.#poll !== undefined) clearTimeout(this.#poll);
    await this.#kv.close();
  }

  async readEvents(
    stream: EventStream,
    options: { after?: number; limit?: number } = {},
  ): Promise<FeedItem[]> {
    const out: FeedItem[] = [];
    const after = options.after ?? -1;
    const limit = options.limit ?? Infinity;
    const known = this.#heads.get(streamKey(stream));
    // What this process wrote last of the stream is still in memory: no read of the store.
    if (known && after < known.head && after >= known.head - known.tail.length) {
      const first = known.head - known.tail.length + 1;
      for (let seq = after + 1; seq <= known.head && out.length < limit; seq++) {
        const bytes = known.tail[seq - first];
        if (bytes) out.push({ seq, event: fromBytes<RunEvent | TaskEvent>(bytes) });
      }
      return out;
    }
    const prefix = eventsPrefix(stream);
    for await (const entry of this.#kv.list(prefix, { start: [...prefix, after + 1] })) {
      const seq = entry.key.at(-1);
      if (typeof seq !== "number" || seq <= after || !entry.value) continue;
      out.push({ seq, event: fromBytes<RunEvent | TaskEvent>(entry.value) });
      if (out.length >= limit) break;
    }
    return out;
  }

  async #headOf(stream: WaitTarget): Promise<number> {
    if (stream.kind !== "activity") return await this.#lastSeq(eventsPrefix(stream));
    const head = await this.#kv.get(KEYS.activityHead(stream.id));
    return head.value ? fromBytes<{ seq: number }>(head.value).seq : -1;
  }

  waitForEvents(
    stream: EventStream,
    options: { after: number; signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void> {
    return this.#wait(stream, options);
  }

  async readActivity(
    owner: string,
    options: { after?: number; limit?: number } = {},
  ): Promise<ActivityItem[]> {
    const out: ActivityItem[] = [];
    const after = options.after ?? -1;
    const limit = options.limit ?? Infinity;
    const prefix = KEYS.activity(owner);
    for await (const entry of this.#kv.list(prefix, { start: [...prefix, after + 1] })) {
      const seq = entry.key.at(-1);
      if (typeof seq !== "number" || seq <= after || !entry.value) continue;
      out.push({ ...fromBytes<ActivityItem>(entry.value), seq });
      if (out.length >= limit) break;
    }
    return out;
  }

  activityHead(owner: string): Promise<number> {
    return this.#headOf({ kind: "activity", id: owner });
  }

  waitForActivity(
    owner: string,
    options: { after: number; signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void> {
    return this.#wait({ kind: "activity", id: owner }, options);
  }

  #wait(
    stream: WaitTarget,
    options: { after: number; signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void> {
    if (this.#closed || options.signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiter: Waiter = {
        stream,
        after: options.after,
        wake: () => {
          this.#waiters.delete(waiter);
          if (timer !== undefined) clearTimeout(timer);
          options.signal?.removeEventListener("abort", waiter.wake);
          resolve();
        },
      };
      this.#waiters.add(waiter);
      options.signal?.addEventListener("abort", waiter.wake, { once: true });
      if (options.timeoutMs !== undefined) timer = setTimeout(waiter.wake, options.timeoutMs);
      // The write may have landed between the reader's last read and now.
      const known = this.#heads.get(streamKey(stream));
      if (known !== undefined) {
        if (known.head > waiter.after) waiter.wake();
      } else {
        this.#headOf(stream).then(
          (head) => head > waiter.after && waiter.wake(),
          () => waiter.wake(),
        );
      }
      this.#schedulePoll();
    });
  }

  /**
   * Wakes this process's readers of a stream just written. With `written` (the events this
   * process just wrote of a run it runs, up to the stream's head) its readers wait and read
   * from memory from now on; without it, they read the store as a reader in another process
   * does.
   */
  #notify(stream: WaitTarget, written?: { head: number; events: Map<number, Uint8Array> }): void {
    const key = streamKey(stream);
    const previous = this.#heads.get(key);
    this.#heads.delete(key);
    if (written !== undefined) {
      // Oldest first: a host with more live streams than this forgets only a shortcut.
      const oldest = this.#heads.keys().next();
      if (this.#heads.size >= KNOWN_HEADS && !oldest.done) this.#heads.delete(oldest.value);
      this.#heads.set(key, { head: written.head, tail: tailOf(previous, written) });
    }
    // In the next turn of the event loop, not a timer later: the writer's continuation (a run's
    // reply to its script waits for this write) goes first, and readers lose microseconds.
    const pending = this.#woken.length > 0;
    for (const waiter of this.#waiters) {
      if (streamKey(waiter.stream) === key) this.#woken.push(waiter);
    }
    if (!pending && this.#woken.length > 0 && !this.#closed) this.#wakeups.port2.postMessage(null);
  }

  /**
   * Runs the poll at once (another host wrote a feed), or once more right after the one that
   * is running, which may have read before that write.
   */
  #pollNow(): void {
    if (this.#waiters.size === 0 || this.#closed) return;
    if (this.#polling) {
      this.#pollAgain = true;
      return;
    }
    if (this.#poll !== undefined) clearTimeout(this.#poll);
    this.#poll = undefined;
    this.#runPoll();
  }

  #runPoll(): void {
    this.#polling = true;
    this.#pollOnce().finally(() => {
      this.#polling = false;
      if (this.#pollAgain) {
        this.#pollAgain = false;
        this.#pollNow();
      } else this.#schedulePoll();
    });
  }

  #schedulePoll(): void {
    if (this.#poll !== undefined || this.#polling || this.#waiters.size === 0 || this.#closed) {
      return;
    }
    this.#poll = setTimeout(() => {
      this.#poll = undefined;
      this.#runPoll();
    }, this.#pollMs);
  }

  async #pollOnce(): Promise<void> {
    try {
      // One read while nothing changes; the heads only when some process wrote events.
      const tick = (await this.#kv.get(KEYS.feedTick)).versionstamp;
      if (tick !== this.#tick) {
        this.#tick = tick;
        const streams = new Map<string, WaitTarget>();
        for (const waiter of this.#waiters) streams.set(streamKey(waiter.stream), waiter.stream);
        for (const [key, stream] of streams) {
          const head = await this.#headOf(stream);
          // Written by another process after all: this one reads the stream from the store.
          if (head > (this.#heads.get(key)?.head ?? head)) this.#heads.delete(key);
          for (const waiter of this.#waiters) {
            if (streamKey(waiter.stream) === key && head > waiter.after) waiter.wake();
          }
        }
      }
    } catch {
      // A closed store: the waiters were woken by close().
    }
  }

  /**
   * Commits what `build` adds to an atomic operation, with `activity`'s items appended to the
   * owner's stream. The stream's head key is checked, so that two writers (two processes on one
   * ledger) never take the same seq; when another writer appended first, the commit is built
   * again with the next seqs. Retrying is safe: a failed atomic commit applied nothing, and
   * `build` adds the same sets and the same checks each time. Returns false when a check of
   * `build` failed (the write lost to another).
   */
  async #commit(build: (atomic: KvAtomic) => void, activity?: ActivityAppend): Promise<boolean> {
    if (activity === undefined || activity.items.length === 0) {
      const atomic = this.#kv.atomic();
      build(atomic);
      return (await atomic.commit()).ok;
    }
    const { owner, items } = activity;
    const headKey = KEYS.activityHead(owner);
    for (let attempt = 1;; attempt++) {
      const head = await this.#kv.get(headKey);
      const last = head.value ? fromBytes<{ seq: number }>(head.value).seq : -1;
      const atomic = this.#kv.atomic();
      build(atomic);
      atomic.check(headKey, head.versionstamp);
      for (const [index, item] of items.entries()) {
        const seq = last + 1 + index;
        atomic.set(KEYS.activity(owner, seq), fitRecord({ seq, ...item }).bytes);
      }
      atomic.set(headKey, toBytes({ seq: last + items.length }));
      atomic.set(KEYS.feedTick, toBytes({}));
      if ((await atomic.commit()).ok) {
        this.#notify({ kind: "activity", id: owner });
        return true;
      }
      // Unchanged head: one of build's own checks failed, which no retry changes.
      if ((await this.#kv.get(headKey)).versionstamp === head.versionstamp) return false;
      if (attempt >= ACTIVITY_ATTEMPTS) {
        throw new SvcError(
          "conflict",
          `Cannot record a state change: the activity stream of owner ${
            JSON.stringify(owner.slice(0, 40))
          } kept changing`,
        );
      }
      // Many writers at once: spread them out a little.
      if (attempt > 2) await new Promise((resolve) => setTimeout(resolve, Math.random() * attempt));
    }
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
    const dirOf = options.dirOf ?? runFiles;
    const room = Math.min(INLINE_LIMIT, options.room ?? INLINE_LIMIT);
    const json = JSON.stringify(value);
    if (json.length <= room / 4 || new TextEncoder().encode(json).length <= room) {
      return { value };
    }
    const name = `${sha256(json)}.json`;
    // Written whole: a reader never sees half a blob.
    await this.#files.write(`${dirOf(runId)}/blobs/${name}`, json);
    return { ref: `blobs/${name}` };
  }

  async #load(
    runId: string,
    stored: Stored,
    dirOf: (id: string) => string = runFiles,
  ): Promise<JsonValue> {
    if ("value" in stored) return stored.value;
    const path = `${dirOf(runId)}/${stored.ref}`;
    const text = await this.#files.read(path);
    if (text === undefined) {
      throw new SvcError(
        "internal",
        `Cannot read a stored value of ${runId}: ${this.#files.where(path)} is missing`,
      );
    }
    return JSON.parse(text) as JsonValue;
  }

  async #taskBytes(task: TaskStatus): Promise<Uint8Array> {
    const { result, ...rest } = task;
    const doc: TaskDoc = { v: 1, task: rest };
    if (result !== undefined) {
      doc.result = await this.#store(task.task_id, result, { dirOf: taskFiles });
    }
    return toBytes(doc);
  }

  async #taskOf(bytes: Uint8Array): Promise<TaskStatus> {
    const doc = fromBytes<TaskDoc>(bytes);
    const task: TaskStatus = doc.task;
    if (doc.result) {
      task.result = await this.#load(task.task_id, doc.result, taskFiles);
    }
    return task;
  }

  /**
   * Records a new run and writes its input into the run directory: the script as `script.js`,
   * the rest as `input.json`. Both are written before the run's record, so that a reader who
   * finds the run finds its input.
   */
  async createRun(
    status: RunStatus,
    options: { input: RunInput; host: HostRef | null; event: RunEvent },
  ): Promise<void> {
    const { script, ...rest } = options.input;
    const { host } = options;
    if (rest.args !== undefined && jsonByteLength(rest.args) > MAX_ARGS_BYTES) {
      throw new SvcError(
        "invalid_request",
        `Cannot record run ${status.run_id}: its args are larger than ${MAX_ARGS_BYTES} bytes as JSON`,
      );
    }
    const dir = runFiles(status.run_id);
    // Fixed names: the caller's filename is for display only and never becomes a path.
    await this.#files.write(`${dir}/script.js`, script);
    const input: InputDoc = { v: 1, ...rest };
    await this.#files.write(`${dir}/input.json`, JSON.stringify(input));
    const record: RunDoc = { v: 1, status: fitRecord(bareStatus(status), VALUE_LIMIT).value };
    const doc = toBytes(record);
    const event = fitRecord(options.event).bytes;
    const ok = await this.#commit((atomic) =>
      atomic
        .check(KEYS.run(status.run_id), null)
        .set(KEYS.run(status.run_id), doc)
        .set(KEYS.runsByOwner(status.owner, status.run_id), toBytes({}))
        .set(
          host ? KEYS.active(status.run_id) : KEYS.queue("run", status.run_id),
          host
            ? toBytes({ host_id: host.id, pid: host.pid })
            : toBytes({ owner: status.owner, at: status.created_at }),
        )
        .set(KEYS.events(status.run_id, 0), event)
        .set(KEYS.feedTick, toBytes({})), {
      owner: status.owner,
      items: [runActivity(status, { at: options.event.at, state: status.state })],
    });
    if (!ok) {
      throw new SvcError("internal", `Cannot record run ${status.run_id}: the id is taken`);
    }
    // Only the process that runs it writes a live run's events: a queued run is left to others.
    this.#notify(
      { kind: "run", id: status.run_id },
      host ? { head: 0, events: new Map([[0, event]]) } : undefined,
    );
  }

  /**
   * Commits a run's writes in order, as few atomic KV operations as the size limits allow.
   * A journal entry always commits together with the run counters that include it, a state
   * change with its event. A terminal status leaves the active index and gets its files.
   */
  async write(runId: string, ops: LedgerOp[]): Promise<void> {
    type Mutation = { key: KvKey; value: Uint8Array };
    type Chunk = {
      mutations: Mutation[];
      bytes: number;
      status?: RunStatus;
      /** The state changes of the chunk, for the owner's activity stream. */
      activity?: ActivityAppend;
    };
    const chunks: Chunk[] = [];
    let chunk: Chunk = { mutations: [], bytes: 0 };
    let finalStatus: RunStatus | undefined;
    let events = false;
    let head = -1;
    const written = new Map<number, Uint8Array>();
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
        case "event": {
          const bytes = fitRecord(op.event.event).bytes;
          add({ key: KEYS.events(runId, op.event.seq), value: bytes });
          events = true;
          head = Math.max(head, op.event.seq);
          written.set(op.event.seq, bytes);
          break;
        }
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
            const event = op.event.event;
            const bytes = fitRecord(event).bytes;
            add({ key: KEYS.events(runId, op.event.seq), value: bytes }, op.status);
            events = true;
            head = Math.max(head, op.event.seq);
            written.set(op.event.seq, bytes);
            if (event.type === "state") {
              // In the chunk that holds the state's event: the two commit together.
              chunk.activity ??= { owner: op.status.owner, items: [] };
              chunk.activity.items.push(runActivity(op.status, event));
            }
          } else chunk.status = op.status;
          finalStatus = op.status;
          break;
      }
    }
    chunks.push(chunk);
    const last = ops.findLast((op) => op.kind === "status" || op.kind === "journal");
    const latest = last && "status" in last ? last.status : undefined;
    const terminal = latest !== undefined && TERMINAL_STATES.has(latest.state);
    for (const [index, { mutations, status, activity }] of chunks.entries()) {
      if (mutations.length === 0 && !status) continue;
      const ends = index === chunks.length - 1 && terminal;
      let doc: Uint8Array | undefined;
      if (status) {
        const fitted = fitRecord(bareStatus(status), VALUE_LIMIT - REF_ROOM);
        const record: RunDoc = { v: 1, status: fitted.value };
        if (ends && latest.result !== undefined) {
          record.result = await this.#store(runId, latest.result, {
            room: VALUE_LIMIT - REF_ROOM - fitted.bytes.length,
          });
        }
        doc = toBytes(record);
      }
      // Only sets and deletes of this run's own keys: the same again if the activity append retries.
      await this.#commit((atomic) => {
        for (const { key, value } of mutations) atomic.set(key, value);
        if (doc) atomic.set(KEYS.run(runId), doc);
        if (ends) atomic.delete(KEYS.active(runId)).delete(KEYS.runCancel(runId));
        if (events) atomic.set(KEYS.feedTick, toBytes({}));
      }, activity);
    }
    if (terminal && finalStatus) await this.#writeSummary(finalStatus);
    if (events) {
      this.#notify({ kind: "run", id: runId }, terminal ? undefined : { head, events: written });
    }
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

  /**
   * What the run was started with: `script.js` and `input.json` of its directory. A run
   * recorded before `input.json` existed reads with its script alone.
   */
  async getRunInput(runId: string): Promise<RunInput | undefined> {
    // Only the id of a recorded run ever becomes a path.
    if (!isId("run", runId) || !(await this.#kv.get(KEYS.run(runId))).value) return undefined;
    const dir = runFiles(runId);
    const read = async (name: string) => {
      const path = `${dir}/${name}`;
      try {
        return await this.#files.read(path);
      } catch (error) {
        // An unreachable database says so; a file that cannot be read is named.
        if (error instanceof SvcError) throw error;
        throw new SvcError(
          "internal",
          `Cannot read the input of run ${runId}: ${this.#files.where(path)} cannot be read`,
          { cause: error },
        );
      }
    };
    const script = await read("script.js");
    if (script === undefined) {
      throw new SvcError(
        "internal",
        `Cannot read the input of run ${runId}: ${
          this.#files.where(`${dir}/script.js`)
        } is missing`,
      );
    }
    const text = await read("input.json");
    if (text === undefined) return { script };
    const { v: _v, ...rest } = JSON.parse(text) as InputDoc;
    return { script, ...rest };
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

  /**
   * Statuses of runs, newest first, older than `before` when given. With `states`, at most
   * {@linkcode RUN_SCAN_LIMIT} runs are examined.
   */
  async listRuns(options: ListRunsOptions = {}): Promise<RunStatus[]> {
    const limit = options.limit ?? 100;
    const before = options.before === undefined
      ? undefined
      : checkBefore("run", options.before, "runs");
    const states = options.states === undefined ? undefined : new Set(options.states);
    const out: RunStatus[] = [];
    let scanned = 0;
    const take = (status: RunStatus) => {
      if (!states || states.has(status.state)) out.push(status);
      return out.length >= limit || (states !== undefined && ++scanned >= RUN_SCAN_LIMIT);
    };
    if (options.owner !== undefined) {
      const prefix = KEYS.runsByOwner(options.owner);
      for await (
        const entry of this.#kv.list(prefix, { reverse: true, ...below(prefix, before) })
      ) {
        const runId = entry.key.at(-1);
        const run = typeof runId === "string" ? await this.#kv.get(KEYS.run(runId)) : undefined;
        if (run?.value && take(fromBytes<RunDoc>(run.value).status)) break;
      }
      return out;
    }
    const prefix = KEYS.allRuns;
    for await (const entry of this.#kv.list(prefix, { reverse: true, ...below(prefix, before) })) {
      if (entry.value && take(fromBytes<RunDoc>(entry.value).status)) break;
    }
    return out;
  }

  async requestRunCancel(runId: string): Promise<boolean> {
    const active = await this.#kv.get(KEYS.active(runId));
    if (!active.value) return false;
    const result = await this.#kv.atomic()
      .check(KEYS.active(runId), active.versionstamp)
      .set(KEYS.runCancel(runId), toBytes({ at: now() }))
      .commit();
    return result.ok;
  }

  async runCancelsRequested(runIds: readonly string[]): Promise<string[]> {
    const out: string[] = [];
    for (const runId of runIds) {
      if ((await this.#kv.get(KEYS.runCancel(runId))).value) out.push(runId);
    }
    return out;
  }

  /** Says that this host is alive. Hosts refresh it while they have runs. */
  async heartbeat(host: HostRef, startedAt: string): Promise<void> {
    const doc: HostDoc = {
      pid: host.pid,
      started_at: startedAt,
      heartbeat_at: now(),
      ...(host.role ? { role: host.role } : {}),
      ...(this.#machine ? { machine: this.#machine } : {}),
      ...(this.#hostname ? { hostname: this.#hostname } : {}),
      ...(host.providers ? { providers: [...host.providers].slice(0, 64) } : {}),
    };
    await this.#kv.atomic().set(KEYS.host(host.id), fitRecord(doc).bytes).commit();
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
      const ok = await this.#markInterrupted(runId, entry.versionstamp, {
        code: "interrupted",
        message:
          "the host running this run stopped before it ended; its journal is kept: resume it with resume_from",
      });
      if (!ok) continue;
      if (host.record) await this.#kv.atomic().delete(KEYS.host(owner.host_id)).commit();
      recovered.push(runId);
    }
    return recovered;
  }

  /**
   * Ends `interrupted` a run of this host that could not write its own end (its ledger writes
   * failed: disk full, file locked). The end is made from the run's record as committed, so
   * that its counters match its journal. False when the run has already ended.
   */
  async interruptRun(runId: string, error: { code: string; message: string }): Promise<boolean> {
    const active = await this.#kv.get(KEYS.active(runId));
    if (!active.value) return false;
    return await this.#markInterrupted(runId, active.versionstamp, error);
  }

  /** Marks a run `interrupted` with `error`, if its active marker is still the one seen. */
  async #markInterrupted(
    runId: string,
    activeStamp: string | null,
    error: { code: string; message: string },
  ): Promise<boolean> {
    const runEntry = await this.#kv.get(KEYS.run(runId));
    if (!runEntry.value) return false;
    const doc = fromBytes<RunDoc>(runEntry.value);
    const at = now();
    doc.status.state = "interrupted";
    doc.status.ended_at = at;
    doc.status.calls.queued = 0;
    doc.status.calls.running = 0;
    doc.status.error = error;
    // The added error must not push a document that was full over the value limit.
    const beside = doc.result ? toBytes(doc.result).length : 0;
    doc.status = fitRecord(doc.status, VALUE_LIMIT - REF_ROOM - beside).value;
    const last = await this.#lastSeq(KEYS.events(runId));
    const event: RunEvent = { type: "state", run_id: runId, at, state: "interrupted" };
    const ok = await this.#commit((atomic) =>
      atomic
        .check(KEYS.run(runId), runEntry.versionstamp)
        .check(KEYS.active(runId), activeStamp)
        .set(KEYS.run(runId), toBytes(doc))
        .set(KEYS.events(runId, last + 1), toBytes(event))
        .delete(KEYS.active(runId))
        .delete(KEYS.runCancel(runId))
        .set(KEYS.feedTick, toBytes({})), {
      owner: doc.status.owner,
      items: [runActivity(doc.status, event)],
    });
    if (!ok) return false;
    this.#notify({ kind: "run", id: runId });
    const status = await this.getRun(runId);
    if (status) await this.write(runId, [{ kind: "status", status }]);
    return true;
  }

  /** Whether a host is alive: its record exists, its process (if it can be checked) does, its heartbeat is fresh. */
  async #liveHost(hostId: string): Promise<{ alive: boolean; record: boolean }> {
    const entry = await this.#kv.get(KEYS.host(hostId));
    if (!entry.value) return { alive: false, record: false };
    return { alive: this.#alive(fromBytes<HostDoc>(entry.value)), record: true };
  }

  /**
   * A fresh heartbeat, and a process that exists where that can be checked: on this machine.
   * A pid from another machine sharing the ledger says nothing here; its heartbeat decides.
   */
  #alive(host: HostDoc): boolean {
    const local = this.#shared === undefined ||
      (host.machine !== undefined && host.machine === this.#machine);
    return (!local || platform().processAlive(host.pid) !== false) &&
      Date.now() - Date.parse(host.heartbeat_at) < STALE_HOST_MS;
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
      const bytes = await this.#taskBytes(task);
      const ok = await this.#commit((atomic) =>
        atomic
          .check(KEYS.task(taskId), taskEntry.versionstamp)
          .check(KEYS.activeTasks(taskId), entry.versionstamp)
          .set(KEYS.task(taskId), bytes)
          .set(KEYS.taskEvents(taskId, seq), toBytes(event))
          .delete(KEYS.activeTasks(taskId))
          .set(KEYS.feedTick, toBytes({})), taskActivity(task, event));
      if (!ok) continue;
      this.#notify({ kind: "task", id: taskId });
      recovered.push(taskId);
    }
    return recovered;
  }

  /** Records a new task (queued) with its first event. */
  async createTask(task: TaskStatus, options: { queue?: boolean } = {}): Promise<void> {
    const event: TaskEvent = { at: task.created_at, task_id: task.task_id, state: task.state };
    const bytes = await this.#taskBytes(task);
    const ok = await this.#commit((atomic) => {
      if (options.queue) {
        // The provider it names, if any: only a host that has it claims the task.
        const provider = task.fake_dispatch ? undefined : task.options.provider;
        atomic.set(
          KEYS.queue("task", task.task_id),
          toBytes({
            owner: task.owner,
            at: task.created_at,
            ...(typeof provider === "string" && provider !== "auto" ? { provider } : {}),
          }),
        );
      }
      return atomic
        .check(KEYS.task(task.task_id), null)
        .set(KEYS.task(task.task_id), bytes)
        .set(KEYS.tasksByOwner(task.owner, task.task_id), toBytes({}))
        .set(KEYS.taskEvents(task.task_id, 0), toBytes(event))
        .set(KEYS.feedTick, toBytes({}));
    }, taskActivity(task, event));
    if (!ok) {
      throw new SvcError("internal", `Cannot record task ${task.task_id}: the id is taken`);
    }
    this.#notify({ kind: "task", id: task.task_id });
  }

  /**
   * Saves a task; with `event`, its state change commits with it. With `expect`, the write
   * happens only if the task is still in that state (claiming a queued task, for one).
   * Returns whether it was written. A finished task also enters the call log.
   */
  async saveTask(
    task: TaskStatus,
    options: { eventSeq?: number; expect?: TaskStatus["state"]; approval?: TaskApprovalNote } = {},
  ): Promise<boolean> {
    let expected: string | null | undefined;
    if (options.expect !== undefined) {
      const current = await this.#kv.get(KEYS.task(task.task_id));
      if (!current.value || (await this.#taskOf(current.value)).state !== options.expect) {
        return false;
      }
      expected = current.versionstamp;
    }
    const mutations: Array<[KvKey, Uint8Array | null]> = [
      [KEYS.task(task.task_id), await this.#taskBytes(task)],
    ];
    if (task.state === "running" && task.host_id !== null) {
      mutations.push([KEYS.activeTasks(task.task_id), toBytes({ host_id: task.host_id })]);
    } else if (task.state !== "queued") mutations.push([KEYS.activeTasks(task.task_id), null]);
    // Claimed or ended: no longer waiting for a worker.
    if (task.state !== "queued") mutations.push([KEYS.queue("task", task.task_id), null]);
    let activity: ActivityAppend | undefined;
    if (options.eventSeq !== undefined) {
      const { approval } = options;
      const event: TaskEvent = {
        at: approval?.at ?? task.ended_at ?? task.started_at ?? task.created_at,
        task_id: task.task_id,
        state: task.state,
        ...(approval
          ? { approval: { approval_id: approval.approval_id, state: approval.state } }
          : {}),
      };
      mutations.push([KEYS.taskEvents(task.task_id, options.eventSeq), toBytes(event)]);
      mutations.push([KEYS.feedTick, toBytes({})]);
      // An approval note is no state change: the owner's activity stream is for those.
      activity = approval ? undefined : taskActivity(task, event);
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
      mutations.push([KEYS.call(call.at, task.task_id, 1), toBytes(call)]);
    }
    const ok = await this.#commit((atomic) => {
      if (expected !== undefined) atomic.check(KEYS.task(task.task_id), expected);
      for (const [key, value] of mutations) {
        if (value === null) atomic.delete(key);
        else atomic.set(key, value);
      }
    }, activity);
    if (ok && options.eventSeq !== undefined) this.#notify({ kind: "task", id: task.task_id });
    return ok;
  }

  /** A task's status, or undefined. */
  async getTask(taskId: string): Promise<TaskStatus | undefined> {
    const entry = await this.#kv.get(KEYS.task(taskId));
    return entry.value ? await this.#taskOf(entry.value) : undefined;
  }

  /** Tasks, newest first (older than `before` when given); only `owner`'s when given. */
  async listTasks(options: ListOptions = {}): Promise<TaskStatus[]> {
    const limit = options.limit ?? 100;
    const before = options.before === undefined
      ? undefined
      : checkBefore("task", options.before, "tasks");
    const out: TaskStatus[] = [];
    if (options.owner === undefined) {
      const prefix = KEYS.allTasks;
      for await (
        const entry of this.#kv.list(prefix, { reverse: true, limit, ...below(prefix, before) })
      ) {
        if (entry.value) out.push(await this.#taskOf(entry.value));
      }
      return out;
    }
    const prefix = KEYS.tasksByOwner(options.owner);
    for await (
      const entry of this.#kv.list(prefix, { reverse: true, limit, ...below(prefix, before) })
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

  /** Sessions, newest first (older than `before` when given); only `owner`'s when given. */
  async listSessions(options: ListOptions = {}): Promise<SessionRecord[]> {
    const limit = options.limit ?? 100;
    const before = options.before === undefined
      ? undefined
      : checkBefore("ses", options.before, "sessions");
    const out: SessionRecord[] = [];
    if (options.owner === undefined) {
      const prefix = KEYS.allSessions;
      for await (
        const entry of this.#kv.list(prefix, { reverse: true, limit, ...below(prefix, before) })
      ) {
        if (entry.value) out.push(fromBytes<SessionRecord>(entry.value));
      }
      return out;
    }
    const prefix = KEYS.sessionsByOwner(options.owner);
    for await (
      const entry of this.#kv.list(prefix, { reverse: true, limit, ...below(prefix, before) })
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

  /** The call log (runs' calls and tasks), newest first; older than the `before` cursor when given. */
  async listCalls(options: ListOptions = {}): Promise<CallRecord[]> {
    const out: CallRecord[] = [];
    const limit = options.limit ?? 1000;
    const end = options.before === undefined
      ? {}
      : { end: [...KEYS.calls, ...parseCallCursor(options.before)] };
    for await (const entry of this.#kv.list(KEYS.calls, { reverse: true, ...end })) {
      if (!entry.value) continue;
      const call = fromBytes<CallRecord>(entry.value);
      if (options.owner !== undefined && call.owner !== options.owner) continue;
      out.push(call);
      if (out.length >= limit) break;
    }
    return out;
  }

  // Reviews and collaborations (issue 12): kept in their own files, over the same store.
  saveReview(record: reviews.ReviewRecord): Promise<void> {
    return reviews.saveReview(this.#kv, record);
  }

  getReview(runId: string): Promise<reviews.ReviewRecord | undefined> {
    return reviews.getReview(this.#kv, runId);
  }

  listReviews(options: PageOptions): Promise<Page<reviews.ReviewRecord>> {
    return reviews.listReviews(this.#kv, options);
  }

  saveCollaboration(
    record: collaborations.CollaborationRecord,
    options: { create: boolean },
  ): Promise<boolean> {
    return collaborations.saveCollaboration(this.#kv, record, options);
  }

  getCollaboration(id: string): Promise<collaborations.CollaborationRecord | undefined> {
    return collaborations.getCollaboration(this.#kv, id);
  }

  listCollaborations(options: PageOptions): Promise<Page<collaborations.CollaborationRecord>> {
    return collaborations.listCollaborations(this.#kv, options);
  }

  // Approvals: kept in src/ledger/approvals.ts, over this ledger's store.
  createApproval(record: ApprovalRecord): Promise<void> {
    return approvals.createApproval(this.#kv, record);
  }

  getApproval(approvalId: string): Promise<ApprovalRecord | undefined> {
    return approvals.getApproval(this.#kv, approvalId);
  }

  approvalOfTask(taskId: string): Promise<ApprovalRecord | undefined> {
    return approvals.approvalOfTask(this.#kv, taskId);
  }

  listApprovals(options?: ListApprovalsOptions): Promise<ApprovalRecord[]> {
    return approvals.listApprovals(this.#kv, options);
  }

  decideApproval(
    approvalId: string,
    decision: { state: ApprovalDecision; by: string; reason?: string; at?: string },
  ): Promise<ApprovalDecided | undefined> {
    return approvals.decideApproval(this.#kv, approvalId, decision);
  }

  // The queue, hosts and the daemon's records (issue 14).
  async listQueue(
    options: { limit?: number; kind?: "run" | "task" } = {},
  ): Promise<QueueItem[]> {
    const limit = options.limit ?? 100;
    const out: QueueItem[] = [];
    for (const kind of options.kind ? [options.kind] : ["run", "task"] as const) {
      for await (const entry of this.#kv.list(KEYS.queue(kind), { limit })) {
        const id = entry.key.at(-1);
        if (typeof id !== "string" || !entry.value) continue;
        const doc = fromBytes<{ owner: string; at: string; provider?: string }>(entry.value);
        out.push({
          kind,
          id,
          owner: doc.owner,
          queued_at: doc.at,
          ...(doc.provider ? { provider: doc.provider } : {}),
        });
      }
    }
    // Oldest first across both kinds: ids sort by creation time after their prefix.
    out.sort((a, b) => a.id.slice(a.kind.length).localeCompare(b.id.slice(b.kind.length)));
    return out.slice(0, limit);
  }

  async claimRun(runId: string, host: HostRef): Promise<boolean> {
    const queued = await this.#kv.get(KEYS.queue("run", runId));
    if (!queued.value) return false;
    return (await this.#kv.atomic()
      .check(KEYS.queue("run", runId), queued.versionstamp)
      .check(KEYS.active(runId), null)
      .delete(KEYS.queue("run", runId))
      .set(KEYS.active(runId), toBytes({ host_id: host.id, pid: host.pid }))
      .commit()).ok;
  }

  async listHosts(): Promise<HostInfo[]> {
    const out: HostInfo[] = [];
    for await (const entry of this.#kv.list(KEYS.hosts)) {
      const id = entry.key.at(-1);
      if (typeof id !== "string" || !entry.value) continue;
      const doc = fromBytes<HostDoc>(entry.value);
      out.push({
        host_id: id,
        pid: doc.pid,
        role: doc.role ?? "host",
        started_at: doc.started_at,
        heartbeat_at: doc.heartbeat_at,
        alive: this.#alive(doc),
        ...(doc.hostname ? { hostname: doc.hostname } : {}),
        ...(doc.providers ? { providers: doc.providers } : {}),
      });
    }
    return out;
  }

  acquireLease(
    name: string,
    options: { holder: string; ttlMs: number },
  ): Promise<daemon.LeaseState> {
    return daemon.acquireLease(this.#kv, name, options);
  }

  readLease(name: string): Promise<daemon.LeaseState> {
    return daemon.readLease(this.#kv, name);
  }

  releaseLease(name: string, holder: string): Promise<void> {
    return daemon.releaseLease(this.#kv, name, holder);
  }

  saveAutomation(
    record: daemon.AutomationRecord,
    quota?: daemon.AutomationQuota,
  ): Promise<daemon.AutomationRefusal | undefined> {
    return daemon.saveAutomation(this.#kv, record, quota);
  }

  listAutomations(): Promise<daemon.AutomationRecord[]> {
    return daemon.listAutomations(this.#kv);
  }

  deleteAutomation(automationId: string): Promise<boolean> {
    return daemon.deleteAutomation(this.#kv, automationId);
  }

  lastSlot(automationId: string): Promise<daemon.FiredSlot | undefined> {
    return daemon.lastSlot(this.#kv, automationId);
  }

  claimSlot(automationId: string, slot: string): Promise<boolean> {
    return daemon.claimSlot(this.#kv, automationId, slot);
  }

  saveSlot(automationId: string, fired: daemon.FiredSlot): Promise<void> {
    return daemon.saveSlot(this.#kv, automationId, fired);
  }

  claimDelivery(
    delivery: daemon.WebhookDelivery,
    options: { windowMs: number },
  ): Promise<daemon.WebhookDelivery | undefined> {
    return daemon.claimDelivery(this.#kv, delivery, options);
  }

  async saveDelivery(
    delivery: daemon.WebhookDelivery,
    options: { duplicate?: boolean } = {},
  ): Promise<void> {
    const item: ActivityDraft = {
      at: new Date().toISOString(),
      kind: "webhook",
      id: delivery.hook,
      state: options.duplicate
        ? "duplicate"
        : delivery.outcome === "failed"
        ? "failed"
        : "accepted",
      delivery_id: delivery.delivery_id,
      ...(delivery.run_id ? { run_id: delivery.run_id } : {}),
      ...(delivery.task_id ? { task_id: delivery.task_id } : {}),
    };
    await this.#commit((atomic) => {
      if (!options.duplicate) atomic.set(daemon.deliveryKey(delivery), fitRecord(delivery).bytes);
    }, { owner: delivery.owner, items: [item] });
  }

  // A2A tasks (issue 14): kept in src/ledger/a2a_tasks.ts, over this ledger's store.
  saveA2aTask(record: a2aTasks.A2aTaskRecord): Promise<boolean> {
    return a2aTasks.saveA2aTask(this.#kv, record);
  }

  getA2aTask(owner: string, taskId: string): Promise<a2aTasks.A2aTaskRecord | undefined> {
    return a2aTasks.getA2aTask(this.#kv, owner, taskId);
  }

  listA2aTasks(
    owner: string,
    options: a2aTasks.A2aTaskListOptions,
  ): Promise<a2aTasks.A2aTaskPage> {
    return a2aTasks.listA2aTasks(this.#kv, owner, options);
  }

  async #lastSeq(prefix: KvKey): Promise<number> {
    for await (const entry of this.#kv.list(prefix, { reverse: true, limit: 1 })) {
      const seq = entry.key.at(-1);
      if (typeof seq === "number") return seq;
    }
    return -1;
  }
}

import { SvcError } from "../errors/mod.ts";
import type { KvAtomic, KvCommitOptions, KvKey, KvStore } from "../platform/mod.ts";
import type { SharedKvStore } from "../platform/postgres.ts";
import type { JsonValue } from "../schemas/mod.ts";
import { fitRecord } from "./fit.ts";
import { fromBytes, sha256, toBytes } from "./json_bytes.ts";
import type { LedgerFiles } from "./files.ts";
import { KnownHeads, type WrittenEvents } from "./heads.ts";
import { KEYS } from "./keys.ts";
import { Notifier } from "./notifier.ts";
import { limitOf, planNotes } from "./notifications.ts";
import type { ActivityItem, EventStream, RunStatus, TaskEvent, TaskStatus } from "./records.ts";

/** Values larger than this (as JSON) go to a file in the run directory; KV values hold 64 KiB. */
export const INLINE_LIMIT = 48 * 1024;
/** Room a document keeps beside its record for a blob reference and its own wrapper. */
export const REF_ROOM = 256;
/**
 * Attempts of a commit that appends to an owner's activity stream while other writers append
 * to it too; each failed attempt means another writer's commit went through.
 */
const ACTIVITY_ATTEMPTS = 100;

/** A JSON value kept inline, or in a blob file of the run directory. */
export type Stored = { value: JsonValue } | { ref: string };

/** What a reader waits on: the feed of a run or a task, or an owner's activity stream. */
export type WaitTarget = EventStream | { kind: "activity"; id: string };

/** An activity item before its place in the owner's stream is known. */
export type ActivityDraft = Omit<ActivityItem, "seq">;

/** Items to append to one owner's activity stream in a commit. */
export interface ActivityAppend {
  /** The stream's owner. */
  owner: string;
  /** The items, in order. */
  items: ActivityDraft[];
}

/** The key of a stream, for waiters and the known heads. */
export function streamKey(stream: WaitTarget): string {
  return `${stream.kind}:${stream.id}`;
}

/** The prefix of a run's or a task's feed. */
export function eventsPrefix(stream: EventStream): KvKey {
  return stream.kind === "run" ? KEYS.events(stream.id) : KEYS.taskEvents(stream.id);
}

/** The list bound of keys under `prefix` older than the id `before`, if any (already checked). */
export function below(prefix: KvKey, before: string | undefined): { end?: KvKey } {
  return before === undefined ? {} : { end: [...prefix, before] };
}

/** A task's state change as an append to its owner's activity stream. */
export function taskActivity(task: TaskStatus, event: TaskEvent): ActivityAppend {
  const ended = event.state !== "queued" && event.state !== "running";
  const code = ended ? task.error?.code : undefined;
  const limit = code !== undefined ? limitOf([], code) : undefined;
  return {
    owner: task.owner,
    items: [{
      at: event.at,
      kind: "task",
      id: task.task_id,
      state: event.state,
      ...(code !== undefined ? { code } : {}),
      ...(limit !== undefined ? { limit } : {}),
    }],
  };
}

/** A run's activity item for a change to `state`, named after the script's meta name. */
export function runActivity(
  status: RunStatus,
  change: { at: string; state: RunStatus["state"] },
): ActivityDraft {
  const ended = change.state !== "queued" && change.state !== "running";
  const code = ended && change.state !== "succeeded" ? status.error?.code : undefined;
  const limit = ended ? limitOf(status.conditions ?? [], code) : undefined;
  return {
    at: change.at,
    kind: "run",
    id: status.run_id,
    state: change.state,
    ...(status.name ? { name: status.name } : {}),
    ...(code !== undefined ? { code } : {}),
    ...(limit !== undefined ? { limit } : {}),
  };
}

/** A run's folder of the ledger's files (script, input, large values). */
export function runFiles(runId: string): string {
  return `runs/${runId}`;
}

/** A task's folder of the ledger's files (large results). */
export function taskFiles(taskId: string): string {
  return `tasks/${taskId}`;
}

/** The time now, ISO 8601. */
export function now(): string {
  return new Date().toISOString();
}

/** Options of {@linkcode LedgerContext}. */
export interface LedgerContextOptions {
  /** How often readers waiting for events look for other processes' writes, in ms. */
  pollMs: number;
  /** Where the ledger's files (scripts, inputs, large values) are kept. */
  files: LedgerFiles;
  /** The shared store, when the ledger is a database. */
  shared?: SharedKvStore;
  /** This machine (boot id and host name), to tell whose pids can be checked. */
  machine?: string;
  /** This machine's host name. */
  hostname?: string;
}

/**
 * What every domain of the ledger works over: the store, the ledger's files, the known heads
 * of live runs and the notifier of waiting readers, with the commit that appends to an owner's
 * activity stream. The domain modules are functions of it.
 */
export class LedgerContext {
  /** The data directory. */
  readonly home: string;
  /** The store. */
  readonly kv: KvStore;
  /** The ledger's files. */
  readonly files: LedgerFiles;
  /** The shared store, when other hosts share the ledger. */
  readonly shared: SharedKvStore | undefined;
  /** This machine, when it could be read. */
  readonly machine: string | undefined;
  /** This machine's host name, when it could be read. */
  readonly hostname: string | undefined;
  /** The heads and latest events of the live runs this process runs. */
  readonly heads = new KnownHeads();
  /** Wakes readers of feeds and activity streams. */
  readonly notifier: Notifier<WaitTarget>;
  /** The last append of each owner's activity stream in this process, while one is pending. */
  readonly #appending = new Map<string, Promise<void>>();

  constructor(home: string, kv: KvStore, options: LedgerContextOptions) {
    this.home = home;
    this.kv = kv;
    this.files = options.files;
    this.shared = options.shared;
    this.machine = options.machine;
    this.hostname = options.hostname;
    this.notifier = new Notifier<WaitTarget>({
      pollMs: options.pollMs,
      key: streamKey,
      head: (stream) => this.headOf(stream),
      tick: async () => (await kv.get(KEYS.feedTick)).versionstamp,
      defer: true,
      knownHead: (key) => this.heads.get(key)?.head,
      // Written by another process after all: this one reads the stream from the store.
      polled: (key, head) => this.heads.polled(key, head),
      ...(options.shared ? { shared: options.shared } : {}),
    });
  }

  /** The position of a stream's last event or item; -1 when it has none. */
  async headOf(stream: WaitTarget): Promise<number> {
    if (stream.kind !== "activity") return await this.lastSeq(eventsPrefix(stream));
    const head = await this.kv.get(KEYS.activityHead(stream.id));
    return head.value ? fromBytes<{ seq: number }>(head.value).seq : -1;
  }

  /**
   * Wakes this process's readers of a stream just written. With `written` (the events this
   * process just wrote of a run it runs, up to the stream's head) its readers wait and read
   * from memory from now on; without it, they read the store as a reader in another process
   * does.
   */
  notify(stream: WaitTarget, written?: WrittenEvents): void {
    this.heads.wrote(streamKey(stream), written);
    this.notifier.notify(stream);
  }

  /**
   * Commits what `build` adds to an atomic operation, with `activity`'s items appended to the
   * owner's stream. The stream's head key is checked, so that two writers (two processes on one
   * ledger) never take the same seq; when another writer appended first, the commit is built
   * again with the next seqs. Retrying is safe: a failed atomic commit applied nothing, and
   * `build` adds the same sets and the same checks each time. Returns false when a check of
   * `build` failed (the write lost to another). `options` go to a commit without activity (a
   * state change is never lazy).
   */
  commit(
    build: (atomic: KvAtomic) => void,
    activity?: ActivityAppend,
    options?: KvCommitOptions,
  ): Promise<boolean> {
    if (activity === undefined || activity.items.length === 0) {
      const atomic = this.kv.atomic();
      build(atomic);
      return atomic.commit(options).then((result) => result.ok);
    }
    return this.#inTurn(activity.owner, () => this.#append(build, activity));
  }

  /**
   * Runs `append` after this process's earlier appends to `owner`'s stream have settled. They
   * would all check the same head: of N at once only one could commit each round, and the
   * others would read and build again, N² attempts for N runs of one owner changing state
   * together (a burst of starts). In turn each commits at its first attempt; only another
   * process's append makes one retry.
   */
  #inTurn<T>(owner: string, append: () => Promise<T>): Promise<T> {
    const mine = (this.#appending.get(owner) ?? Promise.resolve()).then(append, append);
    const settled = mine.then(() => {}, () => {});
    this.#appending.set(owner, settled);
    settled.then(() => {
      if (this.#appending.get(owner) === settled) this.#appending.delete(owner);
    });
    return mine;
  }

  async #append(build: (atomic: KvAtomic) => void, activity: ActivityAppend): Promise<boolean> {
    const { owner, items } = activity;
    const headKey = KEYS.activityHead(owner);
    for (let attempt = 1;; attempt++) {
      const head = await this.kv.get(headKey);
      const last = head.value ? fromBytes<{ seq: number }>(head.value).seq : -1;
      // The notifications these items make commit with them (src/ledger/notifications.ts).
      const notes = await planNotes(this.kv, owner, last + 1, items);
      const atomic = this.kv.atomic();
      build(atomic);
      notes(atomic);
      atomic.check(headKey, head.versionstamp);
      for (const [index, item] of items.entries()) {
        const seq = last + 1 + index;
        atomic.set(KEYS.activity(owner, seq), fitRecord({ seq, ...item }).bytes);
      }
      atomic.set(headKey, toBytes({ seq: last + items.length }));
      atomic.set(KEYS.feedTick, toBytes({}));
      if ((await atomic.commit()).ok) {
        this.notify({ kind: "activity", id: owner });
        return true;
      }
      // Unchanged head: one of build's own checks failed, which no retry changes.
      if ((await this.kv.get(headKey)).versionstamp === head.versionstamp) return false;
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

  /** Keeps `value` inline when it takes at most `room` bytes (and the inline limit), else in a blob. */
  async store(
    id: string,
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
    await this.files.write(`${dirOf(id)}/blobs/${name}`, json);
    return { ref: `blobs/${name}` };
  }

  /** A value kept by {@linkcode LedgerContext.store}. */
  async load(
    id: string,
    stored: Stored,
    dirOf: (id: string) => string = runFiles,
  ): Promise<JsonValue> {
    if ("value" in stored) return stored.value;
    const path = `${dirOf(id)}/${stored.ref}`;
    const text = await this.files.read(path);
    if (text === undefined) {
      throw new SvcError(
        "internal",
        `Cannot read a stored value of ${id}: ${this.files.where(path)} is missing`,
      );
    }
    return JSON.parse(text) as JsonValue;
  }

  /** The values under `prefix`, in key order. */
  async list<T>(prefix: KvKey): Promise<T[]> {
    const out: T[] = [];
    for await (const entry of this.kv.list(prefix)) {
      if (entry.value) out.push(fromBytes<T>(entry.value));
    }
    return out;
  }

  /** The last number key under `prefix`; -1 when there is none. */
  async lastSeq(prefix: KvKey): Promise<number> {
    for await (const entry of this.kv.list(prefix, { reverse: true, limit: 1 })) {
      const seq = entry.key.at(-1);
      if (typeof seq === "number") return seq;
    }
    return -1;
  }
}

import { SvcError } from "../errors/mod.ts";
import { joinPath, type KvKey, platform } from "../platform/mod.ts";
import { jsonByteLength, type JsonValue, MAX_ARGS_BYTES } from "../schemas/mod.ts";
import { fitRecord, VALUE_LIMIT } from "./fit.ts";
import { fromBytes, objectBytes, toBytes } from "./json_bytes.ts";
import { KEYS } from "./keys.ts";
import { giveOwnerLive, OWNER_LIVE_ATTEMPTS, readOwnerLive, takeOwnerLive } from "./owner_live.ts";
import { checkBefore } from "./cursor.ts";
import { isId } from "./ids.ts";
import { JournalPacker, type StoredJournal, unpackJournal } from "./journal_pack.ts";
import {
  type ActivityAppend,
  below,
  type LedgerContext,
  now,
  REF_ROOM,
  runActivity,
  runFiles,
  type Stored,
} from "./context.ts";
import type { HostRef, LedgerOp, ListRunsOptions, RunLedger } from "./interface.ts";
import {
  type CallRecord,
  type JournalEntry,
  type NarrationEntry,
  type RunEvent,
  type RunInput,
  type RunStatus,
  type SecurityEvent,
  TERMINAL_STATES,
} from "./records.ts";

/**
 * Most runs `listRuns` examines when a `states` filter drops some: a rare state among many
 * runs returns fewer than `limit` rather than reading the whole ledger in one call.
 */
export const RUN_SCAN_LIMIT = 10_000;

/**
 * KV limits: 1000 mutations and 800 KiB an atomic commit; stay inside both, with room for the
 * run's own keys and an activity append. A resumed run's 200 replayed calls fit one commit.
 */
const BATCH_MUTATIONS = 900;
const BATCH_BYTES = 512 * 1024;
/** `1`, the version of a run's and a journal entry's document. */
const ONE = toBytes(1);

/**
 * `input.json` of a run directory: what the run was started with besides its script (kept in
 * `script.js` beside it) and its status. Absent for runs recorded before it existed.
 */
interface InputDoc {
  v: 1;
  args?: JsonValue;
  schema_attempts?: number;
  script_dir?: string;
  notes?: string[];
}

/** A run's record as stored. */
export interface RunDoc {
  v: 1;
  status: RunStatus;
  result?: Stored;
}

/** The status as stored: without the lists kept under their own keys, and without the result. */
function bareStatus(status: RunStatus): RunStatus {
  const { result: _result, ...rest } = status;
  return { ...rest, narration: [], security_events: [] };
}

/**
 * Records a new run and writes its input into the run directory: the script as `script.js`,
 * the rest as `input.json`. Both are written before the run's record, so that a reader who
 * finds the run finds its input. A run recorded as taken by `host` takes its owner's live slot
 * in the same commit (src/ledger/owner_live.ts); with `ownerCap` only while the owner holds
 * fewer, else nothing is recorded and the answer is false (the caller queues the run).
 */
async function createRun(
  ctx: LedgerContext,
  status: RunStatus,
  options: { input: RunInput; host: HostRef | null; event: RunEvent; ownerCap?: number },
): Promise<boolean> {
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
  await ctx.files.write(`${dir}/script.js`, script);
  const input: InputDoc = { v: 1, ...rest };
  await ctx.files.write(`${dir}/input.json`, JSON.stringify(input));
  const record: RunDoc = { v: 1, status: fitRecord(bareStatus(status), VALUE_LIMIT).value };
  const doc = toBytes(record);
  const event = fitRecord(options.event).bytes;
  const capped = host !== null && options.ownerCap !== undefined;
  for (let attempt = 1;; attempt++) {
    const gate = capped ? await readOwnerLive(ctx, status.owner) : undefined;
    if (gate && gate.count >= options.ownerCap!) return false;
    const ok = await ctx.commit((atomic) => {
      atomic
        .check(KEYS.run(status.run_id), null)
        .set(KEYS.run(status.run_id), doc)
        .set(KEYS.runsByOwner(status.owner, status.run_id), toBytes({}))
        .set(
          host ? KEYS.active(status.run_id) : KEYS.queue("run", status.run_id),
          host
            ? toBytes({ host_id: host.id, pid: host.pid, owner: status.owner })
            : toBytes({ owner: status.owner, at: status.created_at }),
        )
        .set(KEYS.events(status.run_id, 0), event)
        .set(KEYS.feedTick, toBytes({}));
      if (host) {
        takeOwnerLive(atomic, { owner: status.owner, runId: status.run_id, host, gate });
      }
    }, {
      owner: status.owner,
      items: [runActivity(status, { at: options.event.at, state: status.state })],
    });
    if (ok) break;
    // A failed capped commit lost to another host's take, unless the id is taken.
    const taken = (await ctx.kv.get(KEYS.run(status.run_id))).value !== null;
    if (!capped || taken) {
      throw new SvcError("internal", `Cannot record run ${status.run_id}: the id is taken`);
    }
    // The owner's slots kept changing: the run queues rather than pass the cap.
    if (attempt >= OWNER_LIVE_ATTEMPTS) return false;
  }
  // Only the process that runs it writes a live run's events: a queued run is left to others.
  ctx.notify(
    { kind: "run", id: status.run_id },
    host ? { head: 0, events: new Map([[0, event]]) } : undefined,
  );
  return true;
}

type Mutation = { key: KvKey; value: Uint8Array };
/** Mutations of a run that commit together. */
type Chunk = {
  mutations: Mutation[];
  bytes: number;
  status?: RunStatus;
  /** The state changes of the chunk, for the owner's activity stream. */
  activity?: ActivityAppend;
};

/** A run's writes cut into chunks one atomic commit can hold, with what they add to its feed. */
interface Chunked {
  chunks: Chunk[];
  finalStatus: RunStatus | undefined;
  events: boolean;
  head: number;
  written: Map<number, Uint8Array>;
}

type JournalOp = Extract<LedgerOp, { kind: "journal" }>;

/** The call log's record of a journal entry. */
function callRecord(runId: string, op: JournalOp): CallRecord {
  return {
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
}

/**
 * The call log's one record of a pack of replayed entries: `count` calls from the first's seq,
 * ended when the last did. They asked no provider and cost nothing; the provider and model are
 * those of the source's calls when all had the same, else null.
 */
function replayedRecord(runId: string, ops: readonly JournalOp[]): Mutation {
  const first = ops[0]!;
  const record = callRecord(runId, ops.at(-1)!);
  record.seq = first.entry.seq;
  record.duration_ms = 0;
  if (ops.some((op) => op.entry.provider !== first.entry.provider)) record.provider = null;
  if (ops.some((op) => op.entry.model !== first.entry.model)) record.model = null;
  if (ops.length > 1) record.count = ops.length;
  return { key: KEYS.call(record.at, runId, record.seq), value: fitRecord(record).bytes };
}

/** A journal entry as its stored document. */
async function journalDoc(
  ctx: LedgerContext,
  runId: string,
  op: JournalOp,
): Promise<Mutation> {
  const { result, ...rest } = op.entry;
  // The entry is fitted first; its result goes inline only in the room left beside it.
  const entry = fitRecord(rest, VALUE_LIMIT - REF_ROOM);
  const stored = result === undefined ? undefined : await ctx.store(runId, result, {
    room: VALUE_LIMIT - REF_ROOM - entry.bytes.length,
  });
  // A JournalDoc, the entry encoded once.
  const doc = objectBytes({ v: ONE, entry: entry.bytes, result: stored && toBytes(stored) });
  return { key: KEYS.journal(runId, op.entry.seq), value: doc };
}

/**
 * Cuts a run's writes into chunks within the KV limits. A journal entry always lands in the
 * chunk that holds the run counters that include it, a state change with its event.
 */
async function chunkOps(ctx: LedgerContext, runId: string, ops: LedgerOp[]): Promise<Chunked> {
  const out: Chunked = {
    chunks: [],
    finalStatus: undefined,
    events: false,
    head: -1,
    written: new Map(),
  };
  let chunk: Chunk = { mutations: [], bytes: 0 };
  const add = (mutation: Mutation, status?: RunStatus) => {
    if (
      chunk.mutations.length >= BATCH_MUTATIONS ||
      chunk.bytes + mutation.value.length > BATCH_BYTES
    ) {
      out.chunks.push(chunk);
      chunk = { mutations: [], bytes: 0, status: chunk.status };
    }
    chunk.mutations.push(mutation);
    chunk.bytes += mutation.value.length + 64;
    if (status) chunk.status = status;
  };
  const addEvent = (seq: number, bytes: Uint8Array, status?: RunStatus) => {
    add({ key: KEYS.events(runId, seq), value: bytes }, status);
    out.events = true;
    out.head = Math.max(out.head, seq);
    out.written.set(seq, bytes);
  };
  // Replayed entries pack together, with one call record for the pack; the events between
  // them follow the pack, as they follow a single entry.
  const packer = new JournalPacker();
  let packStatus: RunStatus | undefined;
  let packed: JournalOp[] = [];
  let held: (() => void)[] = [];
  const closePack = () => {
    const pack = packer.close();
    if (pack) add({ key: KEYS.journal(runId, pack.seq), value: pack.value }, packStatus);
    if (packed.length > 0) add(replayedRecord(runId, packed));
    for (const later of held) later();
    packed = [];
    held = [];
  };
  for (const op of ops) {
    if (op.kind === "journal" && op.entry.outcome === "replayed") {
      const journal = await journalDoc(ctx, runId, op);
      if (!packer.fits(op.entry.seq, journal.value.length)) closePack();
      packer.add(op.entry.seq, journal.value);
      packStatus = op.status;
      packed.push(op);
      continue;
    }
    if (op.kind === "event" && packer.open) {
      held.push(() => addEvent(op.event.seq, fitRecord(op.event.event).bytes));
      continue;
    }
    closePack();
    switch (op.kind) {
      case "narration":
        add({ key: KEYS.narration(runId, op.seq), value: fitRecord(op.entry).bytes });
        break;
      case "security":
        add({ key: KEYS.security(runId, op.seq), value: fitRecord(op.event).bytes });
        break;
      case "event":
        addEvent(op.event.seq, fitRecord(op.event.event).bytes);
        break;
      case "journal": {
        add(await journalDoc(ctx, runId, op), op.status);
        const call = callRecord(runId, op);
        add({ key: KEYS.call(call.at, runId, call.seq), value: fitRecord(call).bytes });
        break;
      }
      case "status":
        if (op.event) {
          const event = op.event.event;
          addEvent(op.event.seq, fitRecord(event).bytes, op.status);
          if (event.type === "state") {
            // In the chunk that holds the state's event: the two commit together.
            chunk.activity ??= { owner: op.status.owner, items: [] };
            chunk.activity.items.push(runActivity(op.status, event));
          }
        } else chunk.status = op.status;
        out.finalStatus = op.status;
        break;
    }
  }
  closePack();
  out.chunks.push(chunk);
  return out;
}

/**
 * Commits a run's writes in order, as few atomic KV operations as the size limits allow.
 * A journal entry always commits together with the run counters that include it, a state
 * change with its event. A terminal status leaves the active index and gets its files.
 */
async function write(ctx: LedgerContext, runId: string, ops: LedgerOp[]): Promise<void> {
  const { chunks, finalStatus, events, head, written } = await chunkOps(ctx, runId, ops);
  const last = ops.findLast((op) => op.kind === "status" || op.kind === "journal");
  const latest = last && "status" in last ? last.status : undefined;
  const terminal = latest !== undefined && TERMINAL_STATES.has(latest.state);
  // Feed events alone (a call started, live output, counts) need not wait for a disk flush:
  // the run's next journal or status commit flushes them with itself, in order.
  const lazy = ops.every((op) => op.kind === "event");
  for (const [index, { mutations, status, activity }] of chunks.entries()) {
    if (mutations.length === 0 && !status) continue;
    const ends = index === chunks.length - 1 && terminal;
    let doc: Uint8Array | undefined;
    if (status) {
      const fitted = fitRecord(bareStatus(status), VALUE_LIMIT - REF_ROOM);
      const result = ends && latest.result !== undefined
        ? await ctx.store(runId, latest.result, {
          room: VALUE_LIMIT - REF_ROOM - fitted.bytes.length,
        })
        : undefined;
      // A RunDoc, the status encoded once.
      doc = objectBytes({ v: ONE, status: fitted.bytes, result: result && toBytes(result) });
    }
    // Only sets and deletes of this run's own keys: the same again if the activity append retries.
    await ctx.commit(
      (atomic) => {
        for (const { key, value } of mutations) atomic.set(key, value);
        if (doc) atomic.set(KEYS.run(runId), doc);
        if (ends) atomic.delete(KEYS.active(runId)).delete(KEYS.runCancel(runId));
        if (ends && latest) giveOwnerLive(atomic, latest.owner, runId);
        if (events) atomic.set(KEYS.feedTick, toBytes({}));
      },
      activity,
      { lazy },
    );
  }
  if (terminal && finalStatus) await writeSummary(ctx, finalStatus);
  if (events) {
    ctx.notify({ kind: "run", id: runId }, terminal ? undefined : { head, events: written });
  }
}

/** The run's directory: script text, result, final status and large values. */
export function runDir(ctx: LedgerContext, runId: string): string {
  return joinPath(ctx.home, "runs", runId);
}

async function writeSummary(ctx: LedgerContext, status: RunStatus): Promise<void> {
  const dir = runDir(ctx, status.run_id);
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

/** The run's full status, or undefined when there is no such run. */
async function getRun(ctx: LedgerContext, runId: string): Promise<RunStatus | undefined> {
  const entry = await ctx.kv.get(KEYS.run(runId));
  if (!entry.value) return undefined;
  const doc = fromBytes<RunDoc>(entry.value);
  const status = doc.status;
  status.narration = await ctx.list<NarrationEntry>(KEYS.narration(runId));
  status.security_events = await ctx.list<SecurityEvent>(KEYS.security(runId));
  if (doc.result) status.result = await ctx.load(runId, doc.result);
  return status;
}

/**
 * What the run was started with: `script.js` and `input.json` of its directory. A run
 * recorded before `input.json` existed reads with its script alone.
 */
async function getRunInput(ctx: LedgerContext, runId: string): Promise<RunInput | undefined> {
  // Only the id of a recorded run ever becomes a path.
  if (!isId("run", runId) || !(await ctx.kv.get(KEYS.run(runId))).value) return undefined;
  const dir = runFiles(runId);
  const read = async (name: string) => {
    const path = `${dir}/${name}`;
    try {
      return await ctx.files.read(path);
    } catch (error) {
      // An unreachable database says so; a file that cannot be read is named.
      if (error instanceof SvcError) throw error;
      throw new SvcError(
        "internal",
        `Cannot read the input of run ${runId}: ${ctx.files.where(path)} cannot be read`,
        { cause: error },
      );
    }
  };
  const script = await read("script.js");
  if (script === undefined) {
    throw new SvcError(
      "internal",
      `Cannot read the input of run ${runId}: ${ctx.files.where(`${dir}/script.js`)} is missing`,
    );
  }
  const text = await read("input.json");
  if (text === undefined) return { script };
  const { v: _v, ...rest } = JSON.parse(text) as InputDoc;
  return { script, ...rest };
}

/** The run's journal in call order, results included. */
async function getJournal(ctx: LedgerContext, runId: string): Promise<JournalEntry[]> {
  const docs = unpackJournal(await ctx.list<StoredJournal>(KEYS.journal(runId)));
  return await Promise.all(docs.map(async (doc) => {
    const entry: JournalEntry = doc.entry;
    if (doc.result) entry.result = await ctx.load(runId, doc.result);
    return entry;
  }));
}

/** Run documents read at once while listing an owner's runs. */
const LIST_READ_BATCH = 16;

/**
 * The run documents of an owner's index entries, in the index's order, read
 * {@linkcode LIST_READ_BATCH} at a time: one read after another would make a listing of many
 * runs as slow as that many round trips, each waiting behind every live run's commits.
 */
async function* runDocsOf(
  ctx: LedgerContext,
  index: AsyncIterable<{ key: readonly unknown[] }>,
): AsyncGenerator<{ value: Uint8Array | null }[]> {
  let ids: string[] = [];
  const read = () => Promise.all(ids.map((runId) => ctx.kv.get(KEYS.run(runId))));
  for await (const entry of index) {
    const runId = entry.key.at(-1);
    if (typeof runId === "string") ids.push(runId);
    if (ids.length < LIST_READ_BATCH) continue;
    yield await read();
    ids = [];
  }
  if (ids.length > 0) yield await read();
}

/**
 * Statuses of runs, newest first, older than `before` when given. With `states`, at most
 * {@linkcode RUN_SCAN_LIMIT} runs are examined.
 */
async function listRuns(
  ctx: LedgerContext,
  options: ListRunsOptions = {},
): Promise<RunStatus[]> {
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
    const index = ctx.kv.list(prefix, { reverse: true, ...below(prefix, before) });
    for await (const runs of runDocsOf(ctx, index)) {
      if (runs.some((run) => run.value && take(fromBytes<RunDoc>(run.value).status))) break;
    }
    return out;
  }
  const prefix = KEYS.allRuns;
  for await (const entry of ctx.kv.list(prefix, { reverse: true, ...below(prefix, before) })) {
    if (entry.value && take(fromBytes<RunDoc>(entry.value).status)) break;
  }
  return out;
}

async function requestRunCancel(ctx: LedgerContext, runId: string): Promise<boolean> {
  const active = await ctx.kv.get(KEYS.active(runId));
  if (!active.value) return false;
  const result = await ctx.kv.atomic()
    .check(KEYS.active(runId), active.versionstamp)
    .set(KEYS.runCancel(runId), toBytes({ at: now() }))
    .commit();
  return result.ok;
}

/**
 * Which of `runIds` were asked to cancel: one listing of the asks outstanding, which are only
 * those of live runs (a run's end deletes its ask), rather than one read per live run at every
 * poll, which a host of hundreds of live runs could not keep up with.
 */
async function runCancelsRequested(
  ctx: LedgerContext,
  runIds: readonly string[],
): Promise<string[]> {
  if (runIds.length === 0) return [];
  const asked = new Set<unknown>();
  for await (const entry of ctx.kv.list(KEYS.runCancels)) asked.add(entry.key.at(-1));
  return runIds.filter((runId) => asked.has(runId));
}

/** Marks a run `interrupted` with `error`, if its active marker is still the one seen. */
export async function markInterrupted(
  ctx: LedgerContext,
  runId: string,
  activeStamp: string | null,
  error: { code: string; message: string },
): Promise<boolean> {
  const runEntry = await ctx.kv.get(KEYS.run(runId));
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
  const last = await ctx.lastSeq(KEYS.events(runId));
  const event: RunEvent = { type: "state", run_id: runId, at, state: "interrupted" };
  const ok = await ctx.commit((atomic) =>
    atomic
      .check(KEYS.run(runId), runEntry.versionstamp)
      .check(KEYS.active(runId), activeStamp)
      .set(KEYS.run(runId), toBytes(doc))
      .set(KEYS.events(runId, last + 1), toBytes(event))
      .delete(KEYS.active(runId))
      .delete(KEYS.ownerLive(doc.status.owner, runId))
      .delete(KEYS.runCancel(runId))
      .set(KEYS.feedTick, toBytes({})), {
    owner: doc.status.owner,
    items: [runActivity(doc.status, event)],
  });
  if (!ok) return false;
  ctx.notify({ kind: "run", id: runId });
  const status = await getRun(ctx, runId);
  if (status) await write(ctx, runId, [{ kind: "status", status }]);
  return true;
}

/** The runs of a ledger's context. */
export function runLedger(ctx: LedgerContext): RunLedger {
  return {
    createRun: (status, options) => createRun(ctx, status, options),
    write: (runId, ops) => write(ctx, runId, ops),
    getRun: (runId) => getRun(ctx, runId),
    getRunInput: (runId) => getRunInput(ctx, runId),
    getJournal: (runId) => getJournal(ctx, runId),
    listRuns: (options) => listRuns(ctx, options),
    requestRunCancel: (runId) => requestRunCancel(ctx, runId),
    runCancelsRequested: (runIds) => runCancelsRequested(ctx, runIds),
  };
}

import { Semaphore } from "../concurrency/mod.ts";
import { SvcError } from "../errors/mod.ts";
import { type Caller, fromBytes, mayAccess, Notifier, openStore, toBytes } from "../ledger/mod.ts";
import type { KvEntry, KvKey, KvStore } from "../platform/mod.ts";
import type { SharedKvStore } from "../platform/postgres.ts";
import {
  type BoardCard,
  type BoardChange,
  type BoardListResult,
  type BoardWriteRequest,
  BoardWriteRequestSchema,
  type BoardWriteResult,
  CARD_STATES,
  type CardState,
  describeIssue,
  isCardNumber,
  refuseBoardDir,
} from "../schemas/mod.ts";
import { applyAction, linkRun } from "./card.ts";
import { BOARD_SCHEMA_VERSION, KEYS } from "./keys.ts";

/** The actor label recorded when a write names none and the board was opened without one. */
export const DEFAULT_BY = "svc";

/** Cards a listing returns when it names no limit. */
export const LIST_DEFAULT = 100;
/** Most cards one listing returns. */
export const LIST_LIMIT = 500;

/** How often followers of the change log look for other processes' writes, in ms. */
const POLL_MS = 25;
/** The same on a shared ledger: the database's notifications wake followers; this is a fallback. */
const SHARED_POLL_MS = 1_000;

/** Attempts of a write that loses its atomic check to other processes, before giving up. */
const WRITE_ATTEMPTS = 100;

/** Changes read from KV at once while replaying. */
const CHANGES_BATCH = 500;

/** Options of {@linkcode openBoard}. */
export interface OpenBoardOptions {
  /** The actor label of writes that name no `by`. Default `svc`. */
  by?: string;
  /** The clock of written times. Default the system's; tests fix it. */
  clock?: () => Date;
  /**
   * How often followers of the change log look for other processes' writes, in ms. Default 25;
   * 1000 on a shared ledger, whose database tells of other hosts' writes at once.
   */
  pollMs?: number;
  /**
   * The database of a ledger several hosts share (`SVC_LEDGER_URL`): the board is kept there,
   * one for every host, instead of in `board.kv` of `dir`.
   */
  url?: string;
}

/** Options of {@linkcode Board.list}. */
export interface BoardListOptions {
  /** Most cards returned: 1 to 500, default 100. */
  limit?: number;
  /** The `next_cursor` of the previous page. */
  cursor?: string;
  /** Only cards in this state. */
  state?: CardState;
}

/** Options of {@linkcode Board.changes}. */
export interface BoardChangesOptions {
  /** Start after this `seq` (the last one the reader saw). Default: from the first change. */
  after?: number;
  /** Stops following; the iteration ends without an error. */
  signal?: AbortSignal;
  /** With false, ends after the changes recorded so far. Default true. */
  follow?: boolean;
}

/** A card as stored. */
interface CardDoc {
  v: 1;
  card: BoardCard;
}

/** What a write would do, read at one moment; applying it checks that moment still holds. */
interface Plan {
  card: BoardCard;
  change: BoardChange;
  n: number;
  isNew: boolean;
  headStamp: string | null;
  /** The counter's versionstamp for a new card, the card's otherwise. */
  stamp: string | null;
}

function headSeq(entry: KvEntry): number {
  return entry.value ? fromBytes<{ seq: number }>(entry.value).seq : -1;
}

function invalid(message: string): SvcError {
  return new SvcError("invalid_request", message);
}

/**
 * Opens (creating if needed) the board of a directory: a Deno KV file `board.kv` inside it.
 * Several processes may open the same board; card numbers and change sequence numbers stay
 * unique and gapless across them.
 */
export async function openBoard(dir: string, options: OpenBoardOptions = {}): Promise<Board> {
  const by = options.by ?? DEFAULT_BY;
  const checked = BoardWriteRequestSchema.shape.by.safeParse(by);
  if (!checked.success) {
    throw new SvcError(
      "invalid_argument",
      `Cannot open the board: the default actor ${describeIssue(checked.error)}`,
    );
  }
  const { kv, shared } = await openStore({
    ...(options.url ? { url: options.url } : {}),
    dir,
    file: "board.kv",
    namespace: "board",
    watch: [KEYS.head],
    max: 4,
  });
  try {
    await migrate(kv, shared?.location ?? dir);
  } catch (error) {
    await kv.close();
    throw error;
  }
  return new Board(dir, kv, {
    by,
    clock: options.clock ?? (() => new Date()),
    pollMs: options.pollMs ?? (shared ? SHARED_POLL_MS : POLL_MS),
    ...(shared ? { shared } : {}),
  });
}

async function migrate(kv: KvStore, dir: string): Promise<void> {
  const entry = await kv.get(KEYS.schema);
  const version = entry.value ? fromBytes<{ version: number }>(entry.value).version : 0;
  if (version > BOARD_SCHEMA_VERSION) {
    throw new SvcError(
      "internal",
      `Cannot open the board in ${dir}: it has schema version ${version}, this svc knows up to ${BOARD_SCHEMA_VERSION}`,
    );
  }
  if (version !== BOARD_SCHEMA_VERSION) {
    await kv.atomic().check(KEYS.schema, entry.versionstamp)
      .set(KEYS.schema, toBytes({ version: BOARD_SCHEMA_VERSION })).commit();
  }
}

/**
 * The board ledger: cards with their logs, and a change log of every applied write, in one KV
 * file of the board directory. The one service behind every board entry (`POST
 * /api/board/write`, `svc board write`, the tool `svc_board_write`). Owners see and change only
 * their cards; administrators see all. Open it with {@linkcode openBoard}.
 */
export class Board {
  /** The board directory. */
  readonly dir: string;
  readonly #kv: KvStore;
  readonly #by: string;
  readonly #clock: () => Date;
  /** Writes of this process go one at a time; other processes are met by the atomic checks. */
  readonly #writes = new Semaphore(1);
  /** Wakes followers of the change log, the board's one stream. */
  readonly #notifier: Notifier<"board">;
  #closed = false;

  /** Use {@linkcode openBoard}. */
  constructor(
    dir: string,
    kv: KvStore,
    options: { by: string; clock: () => Date; pollMs: number; shared?: SharedKvStore },
  ) {
    this.dir = dir;
    this.#kv = kv;
    this.#by = options.by;
    this.#clock = options.clock;
    this.#notifier = new Notifier<"board">({
      pollMs: options.pollMs,
      key: (stream) => stream,
      // One read while nothing changes: the head key every write rewrites.
      tick: async () => (await kv.get(KEYS.head)).versionstamp,
      head: async () => headSeq(await kv.get(KEYS.head)),
      ...(options.shared ? { shared: options.shared } : {}),
    });
  }

  /**
   * Performs a board write (`input` is the request body, unchecked) as `caller`. `dry_run`
   * returns what `apply` would write and persists nothing; `apply` writes the card and its
   * change in one atomic commit. Errors: `forbidden` for a body holding `board_dir` (before
   * anything else), `invalid_request` naming the field, `not_found` for a card that is not
   * there or not the caller's, `conflict` for a transition the table refuses.
   */
  async write(input: unknown, caller: Caller): Promise<BoardWriteResult> {
    refuseBoardDir(input);
    const request = parseRequest(input);
    if (request.mode === "dry_run") {
      const plan = await this.#plan(request, caller);
      return result(request, plan, false);
    }
    return result(request, await this.#applyPlan(() => this.#plan(request, caller)), true);
  }

  /**
   * Records on card `issueId` that run `runId` started for it: the run joins the card's `runs`
   * (the newest {@linkcode RUN_LINKS}) and the card's log gains a `log` entry naming it, in any
   * state of the card (a run may look back at a done card). `not_found` for a card the caller
   * may not see, exactly as for an unknown one.
   */
  async linkRun(issueId: string, runId: string, caller: Caller): Promise<BoardCard> {
    const plan = await this.#applyPlan(async () => {
      const at = this.#clock().toISOString();
      const { current, stamp, n } = await this.#readCard(issueId, caller);
      const card = linkRun(current, { run_id: runId, at, by: caller.owner });
      const head = await this.#kv.get(KEYS.head);
      const change: BoardChange = {
        seq: headSeq(head) + 1,
        at,
        action: "log",
        issue_id: card.issue_id,
        owner: card.owner,
        by: caller.owner,
        state: card.state,
      };
      return { card, change, n, isNew: false, headStamp: head.versionstamp, stamp };
    });
    return plan.card;
  }

  /** Card `issueId` as stored, with its versionstamp, when `caller` may see it; `not_found` otherwise. */
  async #readCard(
    issueId: string,
    caller: Caller,
  ): Promise<{ current: BoardCard; stamp: string | null; n: number }> {
    const n = isCardNumber(issueId) ? Number(issueId) : NaN;
    const entry = Number.isNaN(n) ? undefined : await this.#kv.get(KEYS.card(n));
    const current = entry?.value ? fromBytes<CardDoc>(entry.value).card : undefined;
    if (entry === undefined || current === undefined || !mayAccess(caller, current.owner)) {
      throw new SvcError("not_found", `Cannot find card ${issueId.slice(0, 20)}: no such card`);
    }
    return { current, stamp: entry.versionstamp, n };
  }

  /** Commits what `makePlan` reads, reading again when another writer got there first. */
  async #applyPlan(makePlan: () => Promise<Plan>): Promise<Plan> {
    this.#assertOpen();
    const release = await this.#writes.acquire();
    try {
      for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        const plan = await makePlan();
        if (await this.#commit(plan)) {
          this.#notifier.notify("board", plan.change.seq);
          return plan;
        }
        // Another process wrote first: read again, after a short random pause.
        await new Promise((resolve) =>
          setTimeout(resolve, Math.random() * 2 ** Math.min(attempt, 6))
        );
      }
    } finally {
      release();
    }
    throw new SvcError(
      "unavailable",
      `Cannot write to the board: other writers kept it busy through ${WRITE_ATTEMPTS} attempts`,
    );
  }

  async #plan(request: BoardWriteRequest, caller: Caller): Promise<Plan> {
    const head = await this.#kv.get(KEYS.head);
    const at = this.#clock().toISOString();
    const by = request.by ?? this.#by;
    let n: number;
    let current: BoardCard | undefined;
    let stamp: string | null;
    if (request.action === "new") {
      const counter = await this.#kv.get(KEYS.counter);
      n = (counter.value ? fromBytes<{ last: number }>(counter.value).last : 0) + 1;
      stamp = counter.versionstamp;
    } else {
      // parseRequest made sure of the shape.
      n = Number(request.issue_id);
      const entry = await this.#kv.get(KEYS.card(n));
      current = entry.value ? fromBytes<CardDoc>(entry.value).card : undefined;
      if (current === undefined || !mayAccess(caller, current.owner)) {
        throw new SvcError("not_found", `Cannot find card ${n}: no such card`);
      }
      stamp = entry.versionstamp;
    }
    const card = applyAction(current, request, { issueId: String(n), owner: caller.owner, by, at });
    const change: BoardChange = {
      seq: headSeq(head) + 1,
      at,
      action: request.action,
      issue_id: card.issue_id,
      owner: card.owner,
      by,
      state: card.state,
    };
    return {
      card,
      change,
      n,
      isNew: request.action === "new",
      headStamp: head.versionstamp,
      stamp,
    };
  }

  async #commit(plan: Plan): Promise<boolean> {
    const { card, change, n } = plan;
    const doc: CardDoc = { v: 1, card };
    const atomic = this.#kv.atomic().check(KEYS.head, plan.headStamp);
    if (plan.isNew) {
      atomic.check(KEYS.counter, plan.stamp).check(KEYS.card(n), null)
        .set(KEYS.counter, toBytes({ last: n }))
        .set(KEYS.byOwner(card.owner, n), toBytes({}));
    } else {
      atomic.check(KEYS.card(n), plan.stamp);
    }
    const committed = await atomic.set(KEYS.card(n), toBytes(doc))
      .set(KEYS.change(change.seq), toBytes(change))
      .set(KEYS.head, toBytes({ seq: change.seq }))
      .commit();
    return committed.ok;
  }

  /** Card `issueId` when the caller may see it; undefined for an unknown card, another owner's, or an id of another shape. */
  async get(issueId: string, caller: Caller): Promise<BoardCard | undefined> {
    if (!isCardNumber(issueId)) return undefined;
    const entry = await this.#kv.get(KEYS.card(Number(issueId)));
    if (!entry.value) return undefined;
    const { card } = fromBytes<CardDoc>(entry.value);
    return mayAccess(caller, card.owner) ? card : undefined;
  }

  /** The caller's cards (an administrator's: everyone's), newest first, a page at a time. */
  async list(caller: Caller, options: BoardListOptions = {}): Promise<BoardListResult> {
    const limit = options.limit ?? LIST_DEFAULT;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIST_LIMIT) {
      throw invalid(
        `Cannot list the board: 'limit' must be a whole number from 1 to ${LIST_LIMIT}`,
      );
    }
    const state = options.state;
    if (state !== undefined && !(CARD_STATES as readonly string[]).includes(state)) {
      throw invalid(`Cannot list the board: 'state' must be one of ${CARD_STATES.join(", ")}`);
    }
    const before = cursorPosition(options.cursor);
    const admin = caller.admin === true;
    const prefix = admin ? KEYS.cards : KEYS.byOwner(caller.owner);
    const start: KvKey | undefined = before === undefined ? undefined : [...prefix, -before + 1];
    const cards: BoardCard[] = [];
    let more = false;
    for await (const entry of this.#kv.list(prefix, start ? { start } : {})) {
      const key = entry.key.at(-1);
      if (typeof key !== "number") continue;
      const card = admin
        ? (entry.value ? fromBytes<CardDoc>(entry.value).card : undefined)
        : await this.get(String(-key), caller);
      if (card === undefined || (state !== undefined && card.state !== state)) continue;
      if (cards.length === limit) {
        more = true;
        break;
      }
      cards.push(card);
    }
    const last = cards.at(-1);
    return { cards, next_cursor: more && last ? `c${last.issue_id}` : null };
  }

  /**
   * The position of the board's newest change (-1 for none): where a reader that wants only
   * the changes from now on starts. Positions are the board's, shared by every caller.
   */
  async head(): Promise<number> {
    this.#assertOpen();
    return headSeq(await this.#kv.get(KEYS.head));
  }

  /**
   * The board's changes the caller may see (its own cards'; an administrator's: all), after
   * `after`, in `seq` order; then, unless `follow` is false, the new ones as any process
   * writes them, until `signal` aborts or the board closes.
   */
  async *changes(caller: Caller, options: BoardChangesOptions = {}): AsyncGenerator<BoardChange> {
    let after = options.after ?? -1;
    if (!Number.isSafeInteger(after) || after < -1) {
      throw invalid("Cannot follow the board: 'after' must be a whole number, at least -1");
    }
    const { signal } = options;
    while (!signal?.aborted && !this.#closed) {
      const batch: BoardChange[] = [];
      for await (
        const entry of this.#kv.list(KEYS.changes, {
          start: KEYS.change(after + 1),
          limit: CHANGES_BATCH,
        })
      ) {
        if (entry.value) batch.push(fromBytes<BoardChange>(entry.value));
      }
      for (const change of batch) {
        if (signal?.aborted) return;
        after = change.seq;
        if (mayAccess(caller, change.owner)) yield change;
      }
      if (batch.length === CHANGES_BATCH) continue;
      if (options.follow === false) return;
      await this.#notifier.wait("board", { after, ...(signal ? { signal } : {}) });
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new SvcError("unavailable", "Cannot write to the board: it is closed");
  }

  /** Closes the store; followers end. Resolves once its connections are closed. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#notifier.close();
    await this.#kv.close();
  }
}

/** The request checked: its fields, then what depends on the action. */
function parseRequest(input: unknown): BoardWriteRequest {
  const parsed = BoardWriteRequestSchema.safeParse(input);
  if (!parsed.success) {
    throw invalid(`Cannot write to the board: ${describeIssue(parsed.error)}`);
  }
  const request = parsed.data;
  const issueId = request.issue_id ?? "";
  if (request.action === "new") {
    if (issueId !== "") {
      throw invalid(
        "Cannot write to the board: 'issue_id' must be empty for new, the board assigns the number",
      );
    }
    if (request.title === undefined) {
      throw invalid("Cannot write to the board: 'title' is required for new");
    }
  } else if (!isCardNumber(issueId)) {
    throw invalid(`Cannot write to the board: 'issue_id' is required for ${request.action}`);
  }
  return request;
}

function result(request: BoardWriteRequest, plan: Plan, applied: boolean): BoardWriteResult {
  return {
    mode: request.mode,
    applied,
    action: request.action,
    card: plan.card,
    change: plan.change,
  };
}

/** The card number a cursor continues before; undefined for none; `invalid_request` for a malformed one. */
function cursorPosition(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  if (typeof cursor !== "string" || !/^c[1-9][0-9]{0,14}$/.test(cursor)) {
    throw invalid("Cannot list the board: 'cursor' is not a cursor this board gave out");
  }
  return Number(cursor.slice(1));
}

import type MiniSearch from "minisearch";
import * as z from "zod";
import type { TaskManager } from "../tasks/mod.ts";
import type { RunManager } from "../engine/mod.ts";
import { SvcError } from "../errors/mod.ts";
import { type Caller, mayAccess, ownerScope, TERMINAL_STATES } from "../ledger/mod.ts";
import { type Assert, describeIssue, type SameType } from "../schemas/mod.ts";
import type { CardSource } from "./card_source.ts";
import {
  cardDocument,
  type MemoryDocument,
  type MemoryKind,
  runDocument,
  taskDocument,
} from "./documents.ts";
import { snippetOf } from "./snippet.ts";

/** Longest query, in characters. */
export const QUERY_LIMIT = 256;
/** Most hits one search returns. */
export const HITS_LIMIT = 100;
/** How many of the caller's newest records of each kind are searched. */
export const CORPUS_LIMITS = { runs: 500, tasks: 500, cards: 1000 } as const;
/** Most distinct words of a query that are looked up (each one fuzzy and by prefix). */
export const QUERY_TERMS_LIMIT = 16;

/** The request of {@linkcode MemorySearch.search}. */
export const MemorySearchRequestSchema = z.strictObject({
  q: z.string().trim().min(1, "must not be empty").max(
    QUERY_LIMIT,
    `must be at most ${QUERY_LIMIT} characters`,
  ),
  limit: z.number().int("must be a whole number").min(1).max(HITS_LIMIT).default(20),
  kinds: z.array(z.enum(["card", "task", "run"])).min(1).max(3).optional(),
});

/** What {@linkcode MemorySearch.search} takes. */
export interface MemorySearchRequest {
  /** The words to look for: 1 to 256 characters. */
  q: string;
  /** Most hits returned, 1 to 100. Default 20. */
  limit?: number;
  /** Only records of these kinds. Default: all three. */
  kinds?: MemoryKind[];
}

type _RequestMatches = Assert<
  SameType<MemorySearchRequest, z.input<typeof MemorySearchRequestSchema>>
>;

/** One record memory search found. */
export interface MemoryHit {
  /** What the record is. */
  kind: MemoryKind;
  /** Its id: a card's number, a task id or a run id. */
  id: string;
  /** A short name for it. */
  title: string;
  /** An excerpt around the first word found, on one line. */
  snippet: string;
  /** How well it matches (higher is better); hits come best first. */
  score: number;
  /** When the record last changed (ISO 8601). */
  at: string;
}

/** Options of {@linkcode MemorySearch}. */
export interface MemorySearchOptions {
  /** The caller's runs. */
  runs: RunManager;
  /** The caller's tasks. */
  tasks: TaskManager;
  /** The caller's board cards; none are searched without one. */
  cards?: CardSource;
  /**
   * How long an owner's index is reused, in ms: a record written meanwhile is found once it
   * expires. 0 builds an index for every search. Default 5000.
   */
  indexTtlMs?: number;
}

/** Owners whose indexes are kept at once; the least recently built goes first. */
const CACHED_INDEXES = 16;
/** Run and task texts kept across index builds: an ended record never changes. */
const CACHED_TEXTS = 4000;
/** Cards asked for at a time. */
const CARD_PAGE = 200;

/** MiniSearch, loaded at the first search: a host that never searches (a run) never loads it. */
let miniSearchModule: Promise<typeof import("minisearch")> | undefined;

/** The MiniSearch class, loaded once. */
async function miniSearchClass(): Promise<typeof MiniSearch> {
  miniSearchModule ??= import("minisearch");
  return (await miniSearchModule).default;
}

interface OwnerIndex {
  search: MiniSearch<MemoryDocument>;
  documents: Map<string, MemoryDocument>;
}

/**
 * Full-text search over the caller's memory: its workflow runs (name, result, error), its
 * tasks (prompt, result, error) and its board cards, with MiniSearch (prefix and fuzzy
 * matching, titles weighted double). Each owner's newest records, their texts bounded, make
 * one index, kept for a few seconds so that a person typing does not rebuild it each key.
 */
export class MemorySearch {
  readonly #runs: RunManager;
  readonly #tasks: TaskManager;
  readonly #cards: CardSource | undefined;
  readonly #ttlMs: number;
  readonly #indexes = new Map<string, { startedAt: number; index: Promise<OwnerIndex> }>();
  readonly #texts = new Map<string, MemoryDocument>();

  /** A search over the runs, tasks and (when given) cards of the options. */
  constructor(options: MemorySearchOptions) {
    this.#runs = options.runs;
    this.#tasks = options.tasks;
    this.#cards = options.cards;
    this.#ttlMs = options.indexTtlMs ?? 5000;
  }

  /**
   * The caller's records that match `q`, best first. An empty query, one over 256 characters,
   * a bad `limit` or an unknown kind is refused with `invalid_request`.
   */
  async search(caller: Caller, request: MemorySearchRequest): Promise<{ hits: MemoryHit[] }> {
    const parsed = MemorySearchRequestSchema.safeParse(request);
    if (!parsed.success) {
      throw new SvcError("invalid_request", `Cannot search memory: ${describeIssue(parsed.error)}`);
    }
    const { q, limit, kinds } = parsed.data;
    const tokenize = (await miniSearchClass()).getDefault("tokenize") as (text: string) => string[];
    const terms = [...new Set(tokenize(q).map((term) => term.toLowerCase()))]
      .filter((term) => term !== "").slice(0, QUERY_TERMS_LIMIT);
    if (terms.length === 0) return { hits: [] };
    const index = await this.#index(caller);
    const wanted = kinds === undefined ? undefined : new Set<string>(kinds);
    const results = index.search.search(terms.join(" "), {
      prefix: (term) => term.length >= 2,
      fuzzy: (term) => term.length >= 4 ? 0.2 : false,
      boost: { title: 2 },
      ...(wanted !== undefined
        ? { filter: (result) => wanted.has(String(result.id).split(":")[0] ?? "") }
        : {}),
    });
    const hits: MemoryHit[] = [];
    for (const result of results.slice(0, limit)) {
      const doc = index.documents.get(String(result.id));
      if (!doc) continue;
      hits.push({
        kind: doc.kind,
        id: doc.id,
        title: doc.title,
        snippet: snippetOf(doc.text, [...result.terms, ...terms]),
        score: Math.round(result.score * 1000) / 1000,
        at: doc.at,
      });
    }
    return { hits };
  }

  /**
   * The caller's index: one started less than the TTL ago (being built or built), else a new
   * one. Searches that arrive while it builds share it; a failed build is not kept.
   */
  #index(caller: Caller): Promise<OwnerIndex> {
    const owner = ownerScope(caller);
    const key = owner === undefined ? "admin" : `owner:${owner}`;
    const now = Date.now();
    const cached = this.#indexes.get(key);
    if (cached && now - cached.startedAt < this.#ttlMs) return cached.index;
    const index = this.#build(caller);
    const entry = { startedAt: now, index };
    // Re-inserted last: the map's order is the order of building, oldest first.
    this.#indexes.delete(key);
    this.#indexes.set(key, entry);
    index.catch(() => {
      if (this.#indexes.get(key) === entry) this.#indexes.delete(key);
    });
    while (this.#indexes.size > CACHED_INDEXES) {
      const oldest = this.#indexes.keys().next().value;
      if (oldest === undefined) break;
      this.#indexes.delete(oldest);
    }
    return index;
  }

  async #build(caller: Caller): Promise<OwnerIndex> {
    const [runs, tasks, cards] = await Promise.all([
      this.#runs.list(caller, { limit: CORPUS_LIMITS.runs }),
      this.#tasks.list(caller, { limit: CORPUS_LIMITS.tasks }),
      this.#cardDocuments(caller),
    ]);
    const documents = new Map<string, MemoryDocument>();
    for (const run of runs) {
      if (!mayAccess(caller, run.owner)) continue;
      const doc = await this.#runText(run.run_id, run.state === "succeeded", caller) ??
        runDocument(run);
      documents.set(doc.key, doc);
    }
    for (const task of tasks) {
      if (!mayAccess(caller, task.owner)) continue;
      const doc = taskDocument(task);
      documents.set(doc.key, doc);
    }
    for (const doc of cards) documents.set(doc.key, doc);
    const search = new (await miniSearchClass())<MemoryDocument>({
      idField: "key",
      fields: ["title", "text"],
      storeFields: [],
    });
    search.addAll([...documents.values()]);
    return { search, documents };
  }

  /**
   * The document of a succeeded run, whose result the run listing leaves out: read once, then
   * kept, since an ended run never changes. Undefined for a run without a result to read.
   */
  async #runText(
    runId: string,
    succeeded: boolean,
    caller: Caller,
  ): Promise<MemoryDocument | undefined> {
    if (!succeeded) return undefined;
    const key = `run:${runId}`;
    const known = this.#texts.get(key);
    if (known) return known;
    const status = await this.#runs.get(runId, caller);
    if (!status || !TERMINAL_STATES.has(status.state)) return undefined;
    const doc = runDocument(status);
    this.#texts.set(key, doc);
    if (this.#texts.size > CACHED_TEXTS) {
      const oldest = this.#texts.keys().next().value;
      if (oldest !== undefined) this.#texts.delete(oldest);
    }
    return doc;
  }

  async #cardDocuments(caller: Caller): Promise<MemoryDocument[]> {
    if (!this.#cards) return [];
    const out: MemoryDocument[] = [];
    let cursor: string | undefined;
    while (out.length < CORPUS_LIMITS.cards) {
      const page = await this.#cards.list(caller, {
        limit: Math.min(CARD_PAGE, CORPUS_LIMITS.cards - out.length),
        ...(cursor !== undefined ? { cursor } : {}),
      });
      for (const card of page.cards.slice(0, CORPUS_LIMITS.cards - out.length)) {
        // The source answers for the caller; a card it marks as another owner's stays out anyway.
        if (card.owner !== undefined && !mayAccess(caller, card.owner)) continue;
        out.push(cardDocument(card));
      }
      if (page.next_cursor === null || page.cards.length === 0) break;
      cursor = page.next_cursor;
    }
    return out;
  }
}

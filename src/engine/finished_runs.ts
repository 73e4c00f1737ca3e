/**
 * A bounded cache of ended runs' statuses as the ledger holds them. A run's record changes no
 * more once its terminal status is committed (that commit is the run's last write, and runs are
 * never deleted), so a status read from the ledger in a terminal state stays true for good, on
 * every host sharing the ledger. Reads of finished runs (the page's, an SDK polling a handle)
 * are then answered without the ledger's three reads (record, narration, security events).
 * @module
 */
import { isTerminal, type RunStatus } from "../ledger/mod.ts";

/** Options of {@linkcode FinishedRuns}. */
export interface FinishedRunsOptions {
  /**
   * Most statuses kept; the least recently read goes first.
   * @default 512
   */
  maxEntries?: number;
  /**
   * Most bytes kept, counted as the length of the statuses' JSON text; a larger status is not kept at all.
   * @default 16 MiB
   */
  maxBytes?: number;
}

/** A status kept: its owner (who may read it), and its JSON text. */
export interface KeptRun {
  /** The run's owner. */
  owner: string;
  /** The status as JSON text: what the ledger holds, as an API answers it. */
  text: string;
}

type Kept = KeptRun;

/** The cache of JSON texts: least recently read first (a `Map` keeps insertion order). */
export class FinishedRuns {
  readonly #kept = new Map<string, Kept>();
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  #bytes = 0;

  /** An empty cache bounded by `options`. */
  constructor(options: FinishedRunsOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 512;
    this.#maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
  }

  /** A copy of the kept status of `runId` (the caller may change it), or undefined. */
  get(runId: string): RunStatus | undefined {
    const kept = this.text(runId);
    // The ledger's values are JSON (that is how it stores them): parsing the text is an exact
    // copy, and cheaper than a structured clone.
    return kept ? JSON.parse(kept.text) as RunStatus : undefined;
  }

  /** The kept status of `runId` as JSON text, with its owner; or undefined. */
  text(runId: string): KeptRun | undefined {
    const kept = this.#kept.get(runId);
    if (!kept) return undefined;
    this.#kept.delete(runId);
    this.#kept.set(runId, kept);
    return kept;
  }

  /**
   * Keeps a copy of `status` when it was read from the ledger in a terminal state and fits the
   * bound; anything else is ignored. Evicts the least recently read to make room.
   */
  offer(status: RunStatus): void {
    if (!isTerminal(status.state) || this.#kept.has(status.run_id)) return;
    const text = JSON.stringify(status);
    if (text.length > this.#maxBytes / 16) return;
    for (const [runId, kept] of this.#kept) {
      if (this.#kept.size < this.#maxEntries && this.#bytes + text.length <= this.#maxBytes) break;
      this.#kept.delete(runId);
      this.#bytes -= kept.text.length;
    }
    this.#kept.set(status.run_id, { owner: status.owner, text });
    this.#bytes += text.length;
  }

  /** How many statuses are kept, and their bytes. */
  size(): { entries: number; bytes: number } {
    return { entries: this.#kept.size, bytes: this.#bytes };
  }
}

/**
 * A host's announcements of its writes to the other hosts of a shared ledger (Postgres
 * `NOTIFY`), gathered. The first write after a quiet spell announces itself, in its own commit;
 * the writes of the next few milliseconds are announced together, by one notification sent once
 * they have all committed. A busy run (a sequential step commits twice in about a millisecond)
 * so sends one notification every few steps instead of two a step: each one takes Postgres's
 * cluster-wide notification lock until its commit is flushed, and wakes every other host.
 * @module
 */

/** Options of {@linkcode Announcer}. */
export interface AnnouncerOptions {
  /** Sends one notification (a statement of its own); its failure is ignored. */
  send: () => Promise<void>;
  /**
   * How long after an announcement the next writes are gathered, in ms: how late another host
   * may learn of a write (its readers still poll as a fallback).
   * @default 5
   */
  gatherMs?: number;
}

/** Decides which commits announce themselves, and announces the others later, together. */
export class Announcer {
  readonly #send: () => Promise<void>;
  readonly #gatherMs: number;
  /** Until when (performance.now()) writes are gathered rather than announced at once. */
  #quietUntil = -Infinity;
  /** Commits not announced yet. */
  readonly #owed = new Set<Promise<unknown>>();
  /** Of those, the ones not committed yet: a notification must not go before them. */
  readonly #unsettled = new Set<Promise<unknown>>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #flushing: Promise<void> | undefined;
  #closed = false;

  constructor(options: AnnouncerOptions) {
    this.#send = options.send;
    this.#gatherMs = options.gatherMs ?? 5;
  }

  /**
   * Whether the commit about to be issued announces itself: then it returns the earlier writes
   * its notification announces too (every one committed), for {@linkcode announced}; else
   * undefined, and the caller hands the commit to {@linkcode later}.
   */
  inline(): Promise<unknown>[] | undefined {
    const now = performance.now();
    if (now < this.#quietUntil || this.#unsettled.size > 0) return undefined;
    this.#quietUntil = now + this.#gatherMs;
    return [...this.#owed];
  }

  /** A commit that announced itself went through: what it covered is announced. */
  announced(covered: Promise<unknown>[]): void {
    for (const commit of covered) this.#owed.delete(commit);
    if (this.#owed.size === 0 && this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  /**
   * A commit that did not announce itself: the next commit that does announces it, or else one
   * notification of its own once it (and the rest owed) settled, a window later.
   */
  later(commit: Promise<unknown>): void {
    this.#owed.add(commit);
    this.#unsettled.add(commit);
    const settled = () => this.#unsettled.delete(commit);
    commit.then(settled, settled);
    if (this.#timer === undefined && this.#flushing === undefined) this.#schedule();
  }

  /** Announces what is owed now (the store is closing); resolves once it is sent. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#flushing !== undefined || this.#owed.size > 0) {
      if (this.#flushing === undefined) this.#startFlush();
      await this.#flushing;
    }
  }

  #schedule(): void {
    if (this.#closed) return;
    // A window past the quiet spell's end: a busy writer's next commit announces it first.
    const wait = Math.max(0, this.#quietUntil - performance.now()) + this.#gatherMs;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#startFlush();
    }, wait);
  }

  #startFlush(): void {
    this.#flushing = this.#drain().finally(() => {
      this.#flushing = undefined;
      this.#quietUntil = performance.now() + this.#gatherMs;
      // Handed over after the last notification left: the next one is theirs.
      if (this.#owed.size > 0) this.#schedule();
    });
  }

  async #drain(): Promise<void> {
    while (this.#owed.size > 0) {
      const batch = [...this.#owed];
      this.#owed.clear();
      await Promise.allSettled(batch);
      await this.#send().catch(() => {});
    }
  }
}

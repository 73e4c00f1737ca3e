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
  /** Commits not announced yet: the next notification goes once they have settled. */
  readonly #owed = new Set<Promise<unknown>>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #flushing: Promise<void> | undefined;
  #closed = false;

  constructor(options: AnnouncerOptions) {
    this.#send = options.send;
    this.#gatherMs = options.gatherMs ?? 5;
  }

  /**
   * Whether the commit about to be issued announces itself. When it does not, the caller
   * hands it to {@linkcode later}.
   */
  inline(): boolean {
    const now = performance.now();
    if (this.#timer !== undefined || this.#flushing !== undefined || now < this.#quietUntil) {
      return false;
    }
    this.#quietUntil = now + this.#gatherMs;
    return true;
  }

  /** A commit that did not announce itself: announced once it (and the rest owed) settled. */
  later(commit: Promise<unknown>): void {
    this.#owed.add(commit);
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
    const wait = Math.max(0, this.#quietUntil - performance.now());
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

/**
 * Group commit without a timer: the first write commits at once (in the next microtask, so
 * that the writes of one synchronous burst share it); writes that arrive while a commit is in
 * flight gather into the next one. Each writer waits only for the commit that holds its write,
 * never for a timer and never for a later batch.
 * @module
 */

interface Queued<T> {
  item: T;
  done: () => void;
}

/** A queue of writes committed in batches by `commit`, one batch at a time, in order. */
export class GroupCommit<T> {
  readonly #commit: (items: T[]) => Promise<void>;
  #queued: Queued<T>[] = [];
  #running: Promise<void> | undefined;

  /**
   * `commit` writes one batch, in the order the items were added; it must not throw (a
   * failure is the caller's to record). Batches never overlap.
   */
  constructor(commit: (items: T[]) => Promise<void>) {
    this.#commit = commit;
  }

  /** Queues `item`; resolves once the batch holding it has been committed. */
  add(item: T): Promise<void> {
    const written = new Promise<void>((done) => this.#queued.push({ item, done }));
    this.#running ??= this.#drain();
    return written;
  }

  /** Resolves once every item queued so far has been committed. */
  idle(): Promise<void> {
    return this.#running ?? Promise.resolve();
  }

  async #drain(): Promise<void> {
    // One microtask: what the same synchronous burst queues joins the first batch.
    await Promise.resolve();
    while (this.#queued.length > 0) {
      const batch = this.#queued.splice(0);
      try {
        await this.#commit(batch.map((queued) => queued.item));
      } finally {
        for (const queued of batch) queued.done();
      }
    }
    this.#running = undefined;
  }
}

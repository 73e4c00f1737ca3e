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
  fail: (error: unknown) => void;
}

/** A queue of writes committed in batches by `commit`, one batch at a time, in order. */
export class GroupCommit<T> {
  readonly #commit: (items: T[]) => Promise<void>;
  #queued: Queued<T>[] = [];
  #running: Promise<void> | undefined;

  /**
   * `commit` writes one batch, in the order the items were added. When it throws, every write
   * of that batch is rejected with its error: none of them may be acknowledged. Batches never
   * overlap.
   */
  constructor(commit: (items: T[]) => Promise<void>) {
    this.#commit = commit;
  }

  /**
   * Queues `item`; resolves once the batch holding it has been committed, and rejects when that
   * batch failed.
   */
  add(item: T): Promise<void> {
    const written = new Promise<void>((done, fail) => this.#queued.push({ item, done, fail }));
    this.#running ??= this.#drain();
    return written;
  }

  /** Resolves (never rejects) once every item queued so far has been committed or has failed. */
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
        for (const queued of batch) queued.done();
      } catch (error) {
        for (const queued of batch) queued.fail(error);
      }
    }
    this.#running = undefined;
  }
}

/**
 * Group commit without a timer: the first write commits at once (in the next microtask, so
 * that the writes of one synchronous burst share it); writes that arrive while a commit is in
 * flight gather into the next one. Each writer waits only for the commit that holds its write,
 * never for a timer and never for a later batch.
 *
 * A deferred write (a feed event no one waits for, such as a call's start) starts no commit of
 * its own: it rides with the next write that does, or commits in the next turn of the event
 * loop when none came. A call that ends in the turn it started in then costs one commit, not
 * two in a row, and its start still reaches the feed at once when the call takes longer.
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
  /** Starts a drain still waiting for the next turn (one of deferred writes only), now. */
  #kick: (() => void) | undefined;

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
    const written = this.#queue(item);
    if (this.#kick) this.#kick();
    else this.#running ??= this.#drain(false);
    return written;
  }

  /**
   * Queues `item` behind the writes before it without starting a commit: it commits with the
   * next {@linkcode add}, at the latest in the next turn of the event loop. Resolves and rejects
   * as `add` does.
   */
  defer(item: T): Promise<void> {
    const written = this.#queue(item);
    this.#running ??= this.#drain(true);
    return written;
  }

  /** Resolves (never rejects) once every item queued so far has been committed or has failed. */
  idle(): Promise<void> {
    return this.#running ?? Promise.resolve();
  }

  #queue(item: T): Promise<void> {
    return new Promise<void>((done, fail) => this.#queued.push({ item, done, fail }));
  }

  /** Waits for the next turn of the event loop, or less when an `add` kicks it. */
  #nextTurn(): Promise<void> {
    return new Promise<void>((resolve) => {
      const go = () => {
        clearTimeout(timer);
        this.#kick = undefined;
        resolve();
      };
      const timer = setTimeout(go, 0);
      this.#kick = go;
    });
  }

  async #drain(deferred: boolean): Promise<void> {
    // One microtask: what the same synchronous burst queues joins the first batch.
    await (deferred ? this.#nextTurn() : Promise.resolve());
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

/** Releases a permit taken from a {@linkcode Semaphore}. Calling it twice is harmless. */
export type Release = () => void;

/** A counting semaphore with a FIFO queue; waiting can be abandoned through an AbortSignal. */
export class Semaphore {
  #available: number;
  readonly #waiters: Array<{ grant: (release: Release) => void }> = [];

  constructor(permits: number) {
    if (!Number.isInteger(permits) || permits < 1) {
      throw new RangeError(
        `Cannot create a semaphore: permits must be a positive integer, got ${permits}`,
      );
    }
    this.#available = permits;
  }

  /** Number of callers waiting for a permit. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** Waits for a permit. Rejects with the signal's reason if it aborts first. */
  acquire(signal?: AbortSignal): Promise<Release> {
    signal?.throwIfAborted();
    if (this.#available > 0) {
      this.#available--;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: (release: Release) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(release);
        },
      };
      const onAbort = () => {
        const index = this.#waiters.indexOf(waiter);
        if (index !== -1) this.#waiters.splice(index, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  #releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next) next.grant(this.#releaser());
      else this.#available++;
    };
  }
}

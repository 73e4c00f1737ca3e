/**
 * Slots of micro-VMs: at most `SVC_WORKFLOW_MICROVM_MAX_CONCURRENT` at once in this process,
 * the rest wait in arrival order. A process-wide pool per cap, since every run manager of a
 * process starts its VMs on the same machine.
 */
export class MicrovmSlots {
  readonly #cap: number;
  #inUse = 0;
  readonly #waiting: (() => void)[] = [];

  /** A pool of `cap` slots. */
  constructor(cap: number) {
    this.#cap = cap;
  }

  /** Slots taken now. */
  get inUse(): number {
    return this.#inUse;
  }

  /**
   * Takes a slot, waiting for one when all are taken (`onQueued` hears it once, with how many
   * are in use). Resolves to the function that gives the slot back (idempotent); rejects with
   * the signal's reason when it aborts first, holding nothing.
   */
  acquire(
    options: { signal?: AbortSignal; onQueued?: (message: string) => void } = {},
  ): Promise<() => void> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#inUse < this.#cap) {
      this.#inUse++;
      return Promise.resolve(this.#releaser());
    }
    options.onQueued?.(
      `waiting for a microVM slot: ${this.#inUse} of ${this.#cap} in use ` +
        "(SVC_WORKFLOW_MICROVM_MAX_CONCURRENT)",
    );
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        // The slot passes straight from the releaser to this waiter: #inUse stays as it was.
        resolve(this.#releaser());
      };
      const onAbort = () => {
        const index = this.#waiting.indexOf(grant);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(grant);
    });
  }

  /**
   * Takes a free slot now, or none: for a guest started ahead of need, which must never queue
   * before (or hold up) the runs that wait for a slot.
   */
  tryAcquire(): (() => void) | undefined {
    if (this.#inUse >= this.#cap || this.#waiting.length > 0) return undefined;
    this.#inUse++;
    return this.#releaser();
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next();
      else this.#inUse--;
    };
  }
}

const POOLS = new Map<number, MicrovmSlots>();

/** The process-wide pool of `cap` slots. */
export function sharedMicrovmSlots(cap: number): MicrovmSlots {
  let pool = POOLS.get(cap);
  if (pool === undefined) {
    pool = new MicrovmSlots(cap);
    POOLS.set(cap, pool);
  }
  return pool;
}

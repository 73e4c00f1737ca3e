/**
 * An event stream that holds one of its owner's stream slots (admission control) from the
 * moment it is opened until it is given back: by the end of its iteration, however it ends,
 * or by its `release`, whichever comes first.
 * @module
 */

/** An opened event stream: one slot of its owner's cap, held until released. */
export interface AdmittedStream<T> {
  /**
   * The items, followed until `signal` aborts (or the source ends). The slot is given back
   * when the iteration ends, by completion, error or `return()`.
   */
  follow(signal: AbortSignal): AsyncGenerator<T>;
  /**
   * Gives the slot back now; later calls do nothing. A surface calls it when its response
   * ends, which may be before an iteration starts or while one is suspended.
   */
  release(): void;
}

/** The stream over `source` that holds the slot `release` gives back, exactly once. */
export function admittedStream<T>(
  release: () => void,
  source: (signal: AbortSignal) => AsyncIterable<T>,
): AdmittedStream<T> {
  let held = true;
  const giveBack = () => {
    if (!held) return;
    held = false;
    release();
  };
  return {
    async *follow(signal: AbortSignal): AsyncGenerator<T> {
      try {
        yield* source(signal);
      } finally {
        giveBack();
      }
    },
    release: giveBack,
  };
}

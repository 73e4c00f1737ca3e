/**
 * Counts what each owner holds of one kind of thing (live tasks, open event streams) and
 * hands out holds up to a cap. The check and the count are one synchronous step, so that
 * callers racing in one process never pass the cap together.
 * @module
 */

/** Gives back what {@linkcode OwnerGauge.tryHold} took; calling it again does nothing. */
export type GaugeRelease = () => void;

/** Holds per owner, each up to a cap the caller names. */
export class OwnerGauge {
  readonly #held = new Map<string, number>();

  /** What `owner` holds now. */
  count(owner: string): number {
    return this.#held.get(owner) ?? 0;
  }

  /** Every owner's holds together. */
  get total(): number {
    let sum = 0;
    for (const n of this.#held.values()) sum += n;
    return sum;
  }

  /** Takes one hold for `owner` if it holds fewer than `cap`; undefined when it is at the cap. */
  tryHold(owner: string, cap: number): GaugeRelease | undefined {
    const held = this.count(owner);
    if (held >= cap) return undefined;
    return this.hold(owner);
  }

  /** Takes one hold for `owner` whatever it holds (callers the caps do not apply to). */
  hold(owner: string): GaugeRelease {
    this.#held.set(owner, this.count(owner) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.count(owner) - 1;
      if (left > 0) this.#held.set(owner, left);
      else this.#held.delete(owner);
    };
  }
}

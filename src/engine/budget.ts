import type { BudgetFigures } from "../ledger/mod.ts";
import type { AgentOptions } from "../schemas/mod.ts";

/** What one admitted call holds until it ends. */
export interface Reservation {
  tokens: number;
  usd: number;
}

/** The budget gate's answer to a call. */
export type Admission = { ok: true; reservation: Reservation } | { ok: false; reason: string };

/**
 * What a finished call used. An axis marked unknown (a provider that failed without saying
 * what it consumed, a cost nobody could price) counts at least the call's estimate.
 */
export interface Used {
  tokens: number;
  usd: number;
  unknown?: { tokens?: boolean; usd?: boolean };
}

/**
 * The budget gate of one run. A call is refused when committed plus reserved usage reaches
 * a cap, or would pass it with the call's own estimate. Without estimates the overshoot is
 * bounded by the calls already admitted (at most the concurrency cap times the largest call);
 * with an estimate no smaller than the largest call the cap is never passed.
 */
export class BudgetGate {
  readonly #caps: { tokens: number | null; usd: number | null };
  #committed = { tokens: 0, usd: 0 };
  #reserved = { tokens: 0, usd: 0 };

  constructor(caps: { tokens?: number; usd?: number }) {
    this.#caps = { tokens: caps.tokens ?? null, usd: caps.usd ?? null };
  }

  /** The unit of `budget.total` in the script: tokens when a token cap is set, else currency. */
  get unit(): "tokens" | "usd" {
    return this.#caps.tokens === null && this.#caps.usd !== null ? "usd" : "tokens";
  }

  /** Turns a call's `estimate` option into amounts on both axes. A bare number is in the budget's unit. */
  estimateOf(options: AgentOptions): Reservation {
    const estimate = options.estimate;
    if (estimate === undefined) return { tokens: 0, usd: 0 };
    if (typeof estimate === "number") {
      return this.unit === "usd" ? { tokens: 0, usd: estimate } : { tokens: estimate, usd: 0 };
    }
    return { tokens: estimate.tokens ?? 0, usd: estimate.usd ?? 0 };
  }

  /** Whether calls must be priced: a currency cap is set. */
  get needsPrice(): boolean {
    return this.#caps.usd !== null;
  }

  /**
   * Why the call would be refused whatever the running calls end up using, judged on committed
   * usage alone (which only grows); undefined when it might be admitted. Lets a call be
   * refused before anything is spent on it (a schema compiled, a place in the queue).
   */
  certainRefusal(estimate: Reservation): string | undefined {
    return this.#refusal(estimate, { reserved: false });
  }

  /** Admits a call and reserves its estimate, or refuses it with the figures. */
  admit(estimate: Reservation): Admission {
    const reason = this.#refusal(estimate, { reserved: true });
    if (reason !== undefined) return { ok: false, reason };
    this.#reserved.tokens += estimate.tokens;
    this.#reserved.usd += estimate.usd;
    return { ok: true, reservation: estimate };
  }

  #refusal(estimate: Reservation, options: { reserved: boolean }): string | undefined {
    for (const axis of ["tokens", "usd"] as const) {
      const cap = this.#caps[axis];
      if (cap === null) continue;
      const held = this.#committed[axis] + (options.reserved ? this.#reserved[axis] : 0);
      if (held >= cap || held + estimate[axis] > cap) {
        const unit = axis === "tokens" ? "tokens" : "USD";
        return `the budget of ${cap} ${unit} is reached: ${
          round(this.#committed[axis])
        } committed, ` +
          `${round(this.#reserved[axis])} reserved, this call's estimate ${round(estimate[axis])}`;
      }
    }
    return undefined;
  }

  /**
   * Ends a call: frees its reservation and commits what it used; an axis whose use is unknown
   * commits at least the reservation, so that a call that hides its use is not free.
   */
  settle(reservation: Reservation, used: Used): void {
    this.#reserved.tokens -= reservation.tokens;
    this.#reserved.usd -= reservation.usd;
    this.#committed.tokens += used.unknown?.tokens
      ? Math.max(used.tokens, reservation.tokens)
      : used.tokens;
    this.#committed.usd += used.unknown?.usd ? Math.max(used.usd, reservation.usd) : used.usd;
  }

  /** Committed usage in the budget's unit: what `budget.spent()` returns. */
  spent(): number {
    return this.#committed[this.unit];
  }

  /** The figures for the run's status. */
  figures(): BudgetFigures {
    const unit = this.unit;
    const total = this.#caps[unit];
    const spent = this.#committed[unit];
    return {
      total,
      unit,
      spent: round(spent),
      remaining: total === null ? null : round(Math.max(0, total - spent)),
      tokens: {
        cap: this.#caps.tokens,
        committed: this.#committed.tokens,
        reserved: this.#reserved.tokens,
      },
      usd: {
        cap: this.#caps.usd,
        committed: round(this.#committed.usd),
        reserved: round(this.#reserved.usd),
      },
    };
  }
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

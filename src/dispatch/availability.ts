import type { Availability, Provider } from "./types.ts";

/** Options of {@linkcode AvailabilityTracker}. */
export interface AvailabilityOptions {
  /** How long a probe's answer is trusted, in ms. Default 60 s. */
  ttlMs?: number;
  /** Recent calls remembered per provider. Default 10. */
  window?: number;
  /** Share of failed recent calls (with a full window) that makes a provider unavailable. Default 0.8. */
  failureRate?: number;
  /** The clock, for tests. */
  now?: () => number;
}

interface Entry {
  probed?: { at: number; result: Availability };
  outcomes: boolean[];
}

/**
 * Whether each provider can take calls: its probe (binary answers its version flag, API key
 * present), cached for a while, and its recent failure rate. `auto` routing skips an
 * unavailable provider; asking for it by name is refused with the reason.
 */
export class AvailabilityTracker {
  readonly #ttl: number;
  readonly #window: number;
  readonly #failureRate: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(options: AvailabilityOptions = {}) {
    this.#ttl = options.ttlMs ?? 60_000;
    this.#window = options.window ?? 10;
    this.#failureRate = options.failureRate ?? 0.8;
    this.#now = options.now ?? Date.now;
  }

  #entry(name: string): Entry {
    let entry = this.#entries.get(name);
    if (!entry) this.#entries.set(name, entry = { outcomes: [] });
    return entry;
  }

  /** The provider's availability now: the cached probe, then the recent failure rate. */
  async check(provider: Provider): Promise<Availability> {
    const entry = this.#entry(provider.name);
    if (!entry.probed || this.#now() - entry.probed.at > this.#ttl) {
      let result: Availability;
      try {
        result = provider.probe ? await provider.probe() : { available: true, reason: "no probe" };
      } catch (error) {
        result = {
          available: false,
          reason: `probe failed: ${error instanceof Error ? error.message : "unknown error"}`,
        };
      }
      entry.probed = { at: this.#now(), result };
    }
    const probed = entry.probed.result;
    if (!probed.available) return probed;
    const failures = entry.outcomes.filter((ok) => !ok).length;
    if (
      entry.outcomes.length >= this.#window && failures / entry.outcomes.length >= this.#failureRate
    ) {
      return {
        ...probed,
        available: false,
        reason: `failing: ${failures} of its last ${entry.outcomes.length} calls failed`,
      };
    }
    return probed;
  }

  /** Records how a call to the provider ended. */
  record(name: string, ok: boolean): void {
    const entry = this.#entry(name);
    entry.outcomes.push(ok);
    if (entry.outcomes.length > this.#window) entry.outcomes.shift();
  }
}

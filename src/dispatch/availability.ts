import type { Availability, ProbeRequest, Provider } from "./types.ts";

/** Options of {@linkcode AvailabilityTracker}. */
export interface AvailabilityOptions {
  /** How long a probe's answer is trusted, in ms. Default 60 s. */
  ttlMs?: number;
  /** Recent calls remembered per provider. Default 10. */
  window?: number;
  /** Share of failed recent calls (with a full window) that makes a provider unavailable. Default 0.8. */
  failureRate?: number;
  /** How long a call's outcome counts, in ms: older ones are forgotten. Default 5 minutes. */
  outcomeTtlMs?: number;
  /**
   * How long a failing provider is left alone after its last failure, in ms; then it is
   * offered calls again, and the first success clears its failures. Default 30 s.
   */
  cooldownMs?: number;
  /** The clock, for tests. */
  now?: () => number;
}

interface Entry {
  probed?: { at: number; result: Availability };
  /** The most recent outcomes, oldest first, each with when it was recorded. */
  outcomes: Array<{ at: number; ok: boolean }>;
}

/**
 * Whether each provider can take calls: its probe (binary answers its version flag, API key
 * present), cached for a while, and its recent failure rate. `auto` routing skips an
 * unavailable provider; asking for it by name is refused with the reason. Failures are not
 * held against a provider for ever (a script can cause them on purpose): they age out after
 * `outcomeTtlMs`, and a failing provider is tried again once `cooldownMs` has passed since its
 * last failure, like a circuit breaker's half-open state.
 */
export class AvailabilityTracker {
  readonly #ttl: number;
  readonly #window: number;
  readonly #failureRate: number;
  readonly #outcomeTtl: number;
  readonly #cooldown: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(options: AvailabilityOptions = {}) {
    this.#ttl = options.ttlMs ?? 60_000;
    this.#window = options.window ?? 10;
    this.#failureRate = options.failureRate ?? 0.8;
    this.#outcomeTtl = options.outcomeTtlMs ?? 5 * 60_000;
    this.#cooldown = options.cooldownMs ?? 30_000;
    this.#now = options.now ?? Date.now;
  }

  #entry(name: string): Entry {
    let entry = this.#entries.get(name);
    if (!entry) this.#entries.set(name, entry = { outcomes: [] });
    return entry;
  }

  /** The provider's availability now: the cached probe, then the recent failure rate. */
  async check(provider: Provider, request: ProbeRequest = {}): Promise<Availability> {
    const entry = this.#entry(provider.name);
    const fresh = entry.probed && this.#now() - entry.probed.at <= this.#ttl;
    const probed = fresh ? entry.probed!.result : await this.#probe(provider, entry, request);
    if (!probed.available) return probed;
    const failing = this.#failing(entry);
    if (failing === undefined) return probed;
    const waited = this.#now() - failing.lastFailure;
    if (waited >= this.#cooldown) {
      return {
        ...probed,
        reason: `${failing.reason}; tried again after a cool-down of ${
          Math.round(this.#cooldown / 1000)
        } s`,
      };
    }
    return {
      ...probed,
      available: false,
      reason: `${failing.reason}; tried again in ${Math.ceil((this.#cooldown - waited) / 1000)} s`,
    };
  }

  /** Probes the provider; keeps the answer unless it is provisional (a probe still running). */
  async #probe(provider: Provider, entry: Entry, request: ProbeRequest): Promise<Availability> {
    let result: Availability;
    try {
      result = provider.probe
        ? await provider.probe(request)
        : { available: true, reason: "no probe" };
    } catch (error) {
      result = {
        available: false,
        reason: `probe failed: ${error instanceof Error ? error.message : "unknown error"}`,
      };
    }
    if (!result.pending) entry.probed = { at: this.#now(), result };
    return result;
  }

  /** Why the provider counts as failing now, or undefined; forgets outcomes past their time. */
  #failing(entry: Entry): { reason: string; lastFailure: number } | undefined {
    const since = this.#now() - this.#outcomeTtl;
    while (entry.outcomes.length > 0 && entry.outcomes[0]!.at < since) entry.outcomes.shift();
    const failed = entry.outcomes.filter((o) => !o.ok);
    const total = entry.outcomes.length;
    if (total < this.#window || failed.length / total < this.#failureRate) return undefined;
    return {
      reason: `failing: ${failed.length} of its last ${total} calls failed`,
      lastFailure: failed[failed.length - 1]!.at,
    };
  }

  /** Records how a call to the provider ended. A success of a failing provider clears its failures. */
  record(name: string, ok: boolean): void {
    const entry = this.#entry(name);
    if (ok && this.#failing(entry) !== undefined) entry.outcomes = [];
    entry.outcomes.push({ at: this.#now(), ok });
    if (entry.outcomes.length > this.#window) entry.outcomes.shift();
  }
}

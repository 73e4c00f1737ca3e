import { Semaphore } from "../concurrency/mod.ts";
import type { Config } from "../config/mod.ts";
import { SvcError } from "../errors/mod.ts";
import type { SandboxLevel } from "../schemas/mod.ts";
import { AvailabilityTracker } from "./availability.ts";
import type { DispatcherOptions, DispatchInput } from "./dispatcher_options.ts";
import { stallWatch } from "./stall_watch.ts";
import { createFakeProvider } from "./fake.ts";
import type { RouteCandidate } from "./router.ts";
import {
  type DispatchResult,
  type ProbeRequest,
  type Provider,
  SpentFailure,
  type Usage,
} from "./types.ts";

/** A provider's price table: USD per million input and output tokens. */
export type Price = { input_per_mtok: number; output_per_mtok: number };

/**
 * The dispatcher's providers and what it keeps about them: their permits (a cap on simultaneous
 * calls), the calls each runs now, their availability, and their prices.
 */
export interface ProviderPool {
  config: Config;
  /** The fake provider, always registered. */
  fake: Provider;
  /** Every provider by name. */
  registry: Map<string, Provider>;
  /** The cap on simultaneous calls of each capped provider. */
  capacity: Map<string, number>;
  /** One semaphore per capped provider. */
  semaphores: Map<string, Semaphore>;
  /** Calls each provider runs now. */
  running: Map<string, number>;
  tracker: AvailabilityTracker;
  /** A provider's price; null when it has none. */
  priceOf(name: string): Price | null;
}

/** Registers the fake and the given providers, with the caps of the configuration and the options. */
export function providerPool(config: Config, options: DispatcherOptions): ProviderPool {
  const fake = fakeProvider(config, options);
  const registry = new Map<string, Provider>([["fake", fake]]);
  for (const provider of options.providers ?? []) registry.set(provider.name, provider);
  const capacity = capacities(config, options.concurrency ?? {});
  return {
    config,
    fake,
    registry,
    capacity,
    semaphores: new Map([...capacity].map(([name, permits]) => [name, new Semaphore(permits)])),
    running: new Map(),
    tracker: new AvailabilityTracker(options.availability),
    priceOf: (name) => config.providers[name]?.price ?? null,
  };
}

/** The fake provider, timed by the options, else the configuration, else the environment. */
function fakeProvider(config: Config, options: DispatcherOptions): Provider {
  const settings = config.providers.fake?.type === "fake" ? config.providers.fake : undefined;
  const env = options.env ?? (() => undefined);
  return createFakeProvider({
    latencyMs: options.fakeLatencyMs ?? settings?.latency_ms ??
      milliseconds("SVC_FAKE_LATENCY_MS", env("SVC_FAKE_LATENCY_MS")),
    jitterMs: options.fakeJitterMs ?? settings?.jitter_ms ??
      milliseconds("SVC_FAKE_JITTER_MS", env("SVC_FAKE_JITTER_MS")),
    costUsd: options.fakeCostUsd ?? settings?.cost_usd,
  });
}

/** A variable's milliseconds: 0 when unset or empty, refused when not a non-negative number. */
function milliseconds(name: string, raw: string | undefined): number {
  if (raw === undefined || raw === "") return 0;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    throw new SvcError(
      "invalid_argument",
      `Cannot read ${name}: expected a non-negative number of milliseconds, got '${raw}'`,
    );
  }
  return value;
}

/** Each provider's cap: the configuration's `concurrency`, overridden by the options'. */
function capacities(config: Config, given: Record<string, number>): Map<string, number> {
  const capacity = new Map<string, number>();
  for (const [name, settings] of Object.entries(config.providers)) {
    if (settings.concurrency !== undefined) capacity.set(name, settings.concurrency);
  }
  for (const [name, permits] of Object.entries(given)) capacity.set(name, permits);
  return capacity;
}

/**
 * Every provider as routing sees it. A call (`wait: false`) waits only a short while for a
 * probe still running; a listing waits for every probe to end.
 */
export async function candidates(
  pool: ProviderPool,
  request: ProbeRequest = {},
): Promise<RouteCandidate[]> {
  return await Promise.all([...pool.registry.values()].map(async (provider) => {
    const price = pool.priceOf(provider.name);
    return {
      name: provider.name,
      kind: provider.kind,
      availability: await pool.tracker.check(provider, request),
      load: {
        running: pool.running.get(provider.name) ?? 0,
        capacity: pool.capacity.get(provider.name) ?? null,
      },
      tags: pool.config.providers[provider.name]?.tags ?? [],
      price: price ? price.input_per_mtok + price.output_per_mtok : null,
      ...(provider.modelAliases ? { modelAliases: provider.modelAliases } : {}),
    };
  }));
}

/**
 * Sends a routed call under its provider's permit, prices it from the table when the provider
 * reported no cost, and feeds its success or failure to the provider's availability.
 */
export async function send(
  pool: ProviderPool,
  provider: Provider,
  input: DispatchInput,
  model: string | null,
  sandbox: SandboxLevel,
): Promise<DispatchResult> {
  const { running, tracker } = pool;
  const release = await pool.semaphores.get(provider.name)?.acquire(input.signal);
  // Routing awaited probes: the call may have been stopped meanwhile.
  if (input.signal.aborted) {
    release?.();
    throw input.signal.reason;
  }
  running.set(provider.name, (running.get(provider.name) ?? 0) + 1);
  // Watched from here, where the provider starts: the wait for a permit is no stall.
  const watch = stallWatch(provider.name, input);
  try {
    const result = await provider.dispatch({
      ...watch.input,
      sandbox,
      ...(model !== null ? { model } : {}),
    });
    tracker.record(provider.name, true);
    const price = pool.priceOf(provider.name);
    if (result.cost_usd === null && price) result.cost_usd = priced(result.usage, price);
    return result;
  } catch (error) {
    // A stall is the script's own limit: it says nothing of the provider's health.
    const stalled = input.signal.aborted ? undefined : watch.stalled();
    if (stalled) throw stalled;
    if (!input.signal.aborted && !callersFault(error)) {
      tracker.record(provider.name, false);
    }
    throw error;
  } finally {
    watch.stop();
    running.set(provider.name, (running.get(provider.name) ?? 1) - 1);
    release?.();
  }
}

function priced(usage: Usage, price: Price): number {
  return (usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok) /
    1e6;
}

/** What a failed call consumed, when its provider said so; its cost priced from the table if unreported. */
export function spentBy(
  error: unknown,
  price: Price | null,
): { usage: Usage; cost_usd: number | null } | null {
  if (!(error instanceof SpentFailure)) return null;
  const cost = error.cost_usd ?? (price ? priced(error.usage, price) : null);
  return { usage: error.usage, cost_usd: cost };
}

/**
 * Whether a provider refused the call for what the caller asked (a model value it will not pass
 * on, a schema the fake cannot satisfy): not a sign that the provider is failing, and not
 * something a script may use to make a provider look unavailable to every other run.
 */
function callersFault(error: unknown): boolean {
  return error instanceof SvcError &&
    (error.code === "invalid_request" || error.code === "invalid_argument");
}

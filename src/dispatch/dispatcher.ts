import { Semaphore } from "../concurrency/mod.ts";
import { SvcError } from "../errors/mod.ts";
import { platform } from "../platform/mod.ts";
import { createFakeProvider } from "./fake.ts";
import type { DispatchRequest, DispatchResult, Provider } from "./types.ts";

/** Routes a call to a provider. The one entry every dispatch goes through. */
export interface Dispatcher {
  /** Names of the registered providers. */
  providers(): string[];
  dispatch(request: DispatchRequest, options?: { fakeOnly?: boolean }): Promise<DispatchResult>;
}

/** Options of {@linkcode createDispatcher}. */
export interface DispatcherOptions {
  /** Latency of the fake provider; defaults to `SVC_FAKE_LATENCY_MS` or 0. */
  fakeLatencyMs?: number;
  /** Cost in USD of every fake call; 0 unless configured. */
  fakeCostUsd?: number;
  /** Providers beside `fake`, which is always registered. */
  providers?: Provider[];
  /**
   * Simultaneous calls per provider, shared by every run that uses this dispatcher, so that
   * one fan-out cannot take a provider's whole quota. A provider not named here has no cap.
   */
  concurrency?: Record<string, number>;
}

function latencyFromEnv(): number {
  const raw = platform().env("SVC_FAKE_LATENCY_MS");
  if (raw === undefined || raw === "") return 0;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    throw new SvcError(
      "invalid_argument",
      `Cannot read SVC_FAKE_LATENCY_MS: expected a non-negative number of milliseconds, got '${raw}'`,
    );
  }
  return value;
}

/**
 * Builds the dispatcher. Without a provider configuration only `fake` is registered, so
 * `auto` routing has just that one to choose.
 */
export function createDispatcher(options: DispatcherOptions = {}): Dispatcher {
  const fake = createFakeProvider({
    latencyMs: options.fakeLatencyMs ?? latencyFromEnv(),
    costUsd: options.fakeCostUsd,
  });
  const registry = new Map<string, Provider>([["fake", fake]]);
  for (const provider of options.providers ?? []) registry.set(provider.name, provider);
  const semaphores = new Map<string, Semaphore>();
  for (const [name, permits] of Object.entries(options.concurrency ?? {})) {
    semaphores.set(name, new Semaphore(permits));
  }

  async function send(provider: Provider, request: DispatchRequest): Promise<DispatchResult> {
    const release = await semaphores.get(provider.name)?.acquire(request.signal);
    try {
      return await provider.dispatch(request);
    } finally {
      release?.();
    }
  }

  return {
    providers: () => [...registry.keys()],
    dispatch(request, { fakeOnly = false } = {}) {
      if (fakeOnly) return send(fake, request);
      const name = request.options.provider ?? "auto";
      const provider = name === "auto" ? fake : registry.get(name);
      if (!provider) {
        const known = [...registry.keys()].join(", ");
        return Promise.reject(
          new SvcError(
            "not_found",
            `Cannot dispatch: unknown provider '${name}' (configured: ${known})`,
          ),
        );
      }
      return send(provider, request);
    },
  };
}

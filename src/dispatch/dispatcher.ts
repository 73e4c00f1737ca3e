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
  const fake = createFakeProvider({ latencyMs: options.fakeLatencyMs ?? latencyFromEnv() });
  const registry = new Map<string, Provider>([["fake", fake]]);
  return {
    providers: () => [...registry.keys()],
    dispatch(request, { fakeOnly = false } = {}) {
      if (fakeOnly) return fake.dispatch(request);
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
      return provider.dispatch(request);
    },
  };
}

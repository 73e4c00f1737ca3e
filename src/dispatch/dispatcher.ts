import { Semaphore } from "../concurrency/mod.ts";
import { type Config, defaultConfig } from "../config/mod.ts";
import { SvcError } from "../errors/mod.ts";
import { platform } from "../platform/mod.ts";
import type { AgentOptions, SandboxLevel } from "../schemas/mod.ts";
import { type AvailabilityOptions, AvailabilityTracker } from "./availability.ts";
import { createFakeProvider } from "./fake.ts";
import { admitSandbox, type SandboxAdmission } from "./kernel.ts";
import { chooseRoute, type RouteCandidate, type RouteDecision } from "./router.ts";
import {
  type ChatMessage,
  type DispatchResult,
  type ProbeRequest,
  type Provider,
  SpentFailure,
  type Usage,
} from "./types.ts";
import type { WorktreeManager, WorktreeResult } from "../worktrees/mod.ts";

/** What a caller hands the dispatcher: the call, before routing and admission. */
export interface DispatchInput {
  /** The prompt. */
  prompt: string;
  /** The call's options, as `agent()` takes them. */
  options: AgentOptions;
  /** The agent's system prompt (an `agentType`'s body), for the provider to apply. */
  system?: string;
  /** Aborting stops the call, wherever it is (queued, routed or running). */
  signal: AbortSignal;
  /** Working directory of the call; a fresh scratch directory for a harness when absent. */
  cwd?: string;
  /** A harness's own session id to continue (a session's turn). */
  resumeSession?: string;
  /** An API session's earlier messages, oldest first. */
  history?: ChatMessage[];
}

/** Who dispatches, and under which defaults. */
export interface DispatchContext {
  /** Send the call to the fake provider whatever it asks for (`--fake-dispatch`). */
  fakeOnly?: boolean;
  /**
   * The run's `sandbox_default`. Absent for a direct dispatch, whose own ask (its `sandbox`, else
   * its profile's) is its default.
   */
  sandboxDefault?: SandboxLevel;
  /** The ceiling (`sandbox_max`); the default level when absent (docs/SECURITY.md). */
  sandboxMax?: SandboxLevel;
  /**
   * Refuse, after routing and before anything is sent, a call whose provider has no price
   * (no price table; `fake` is priced by its configured cost): a run under a currency budget
   * must be able to count what every call costs. The refusal is an {@linkcode UnpricedCallError}.
   */
  requirePrice?: boolean;
  /**
   * A person approved this call's `full` sandbox (`sandbox.full: "ask"`). Without it such a
   * call is refused (`forbidden`): whoever dispatches asks {@linkcode Dispatcher.admit} first
   * and waits for the approval, so the dispatcher never grants `full` on its own.
   */
  fullApproved?: boolean;
  /** The call comes from a run in `microvm` isolation: `full` is clamped to `write` regardless. */
  microvm?: boolean;
}

/** A dispatch's result with how it was routed and admitted. */
export interface DispatchOutcome extends DispatchResult {
  /** Where the call went, with which model, and why. */
  route: RouteDecision;
  /** The sandbox level the kernel admitted. */
  sandbox: SandboxLevel;
  /** Why the sandbox level was clamped; null when it was not. */
  sandbox_clamped: string | null;
  /** With `isolation: "worktree"`: the worktree the call ran in, removed or kept. */
  worktree?: WorktreeResult;
}

/**
 * A call that reached a provider and failed there: the provider's error, with the route, so
 * that the failure is recorded against the provider that failed, and what it consumed when
 * the provider said (null: unknown), priced from the table when it reported no cost.
 */
export class ProviderError extends SvcError {
  /** The provider that failed. */
  readonly provider: string;
  /** How the call was routed there. */
  readonly route: RouteDecision;
  /** Tokens the failed call used; null when the provider did not say. */
  readonly usage: Usage | null;
  /** What it cost in USD (reported, else priced from the table); null when unknown. */
  readonly cost_usd: number | null;

  /** Wraps `cause`, keeping its code and message when it is an SvcError (else `provider_failed`). */
  constructor(
    cause: unknown,
    route: RouteDecision,
    spent: { usage: Usage; cost_usd: number | null } | null = null,
  ) {
    const known = cause instanceof SvcError;
    super(
      known ? cause.code : "provider_failed",
      known ? cause.message : `Cannot dispatch to ${route.provider}: the provider failed`,
      { cause },
    );
    this.name = "ProviderError";
    this.provider = route.provider;
    this.route = route;
    this.usage = spent?.usage ?? null;
    this.cost_usd = spent?.cost_usd ?? null;
  }
}

/** A call refused because its provider has no price while the run has a currency budget. */
export class UnpricedCallError extends SvcError {
  readonly provider: string;

  constructor(provider: string) {
    super(
      "invalid_request",
      `Cannot dispatch to ${provider} under a currency budget: it has no price; configure providers.${provider}.price (USD per million input and output tokens)`,
    );
    this.name = "UnpricedCallError";
    this.provider = provider;
  }
}

type Price = { input_per_mtok: number; output_per_mtok: number };

function priced(usage: Usage, price: Price): number {
  return (usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok) /
    1e6;
}

/** A provider's state, for `svc providers` and `/api/providers`. */
export interface ProviderStatus {
  /** The provider's name. */
  name: string;
  /** A coding-agent command line (`harness`), a model API (`api`) or the fake. */
  kind: "fake" | "harness" | "api";
  /** Whether it takes calls now. */
  available: boolean;
  /** Why it is unavailable, or what its probe found. */
  reason: string;
  /** The tool's version, for harnesses that reported one. */
  version: string | null;
  /** Calls it is running now. */
  running: number;
  /** Its cap on simultaneous calls; null when it has none. */
  concurrency: number | null;
  /** The routing tags it is configured for. */
  tags: string[];
  /** Its price table (USD per million tokens); null when it has none. */
  price: { input_per_mtok: number; output_per_mtok: number } | null;
}

/** Routes, admits and performs calls. The one entry every dispatch goes through. */
export interface Dispatcher {
  /** Names of the registered providers. */
  providers(): string[];
  /**
   * Every provider with its availability (probed, then cached), load and price. A listing waits
   * for probes still running; `{wait: false}` (deciding what to claim) waits only briefly.
   */
  status(request?: ProbeRequest): Promise<ProviderStatus[]>;
  /**
   * Routes the call, admits its sandbox level, waits for the provider's permit and performs it.
   * A provider's failure rejects as a {@linkcode ProviderError}; a refusal as an SvcError.
   */
  dispatch(input: DispatchInput, context?: DispatchContext): Promise<DispatchOutcome>;
  /**
   * The kernel's sandbox decision for a call, without dispatching it: what `dispatch()` would
   * grant. `needsApproval` says the call must wait for a person first (`sandbox.full: "ask"`).
   */
  admit(options: AgentOptions, context?: DispatchContext): SandboxAdmission;
}

/** Options of {@linkcode createDispatcher}. */
export interface DispatcherOptions {
  /** Latency of the fake provider; defaults to `SVC_FAKE_LATENCY_MS` or 0. */
  fakeLatencyMs?: number;
  /** Random extra latency of the fake provider, up to this; defaults to `SVC_FAKE_JITTER_MS` or 0. */
  fakeJitterMs?: number;
  /** Cost in USD of every fake call; 0 unless configured. */
  fakeCostUsd?: number;
  /** Providers beside `fake`, which is always registered. */
  providers?: Provider[];
  /**
   * Simultaneous calls per provider, shared by every run and task that uses this dispatcher,
   * so that one fan-out cannot take a provider's whole quota. The configuration's
   * `providers.<name>.concurrency` counts too; a provider named in neither has no cap.
   */
  concurrency?: Record<string, number>;
  /** Profiles, routing preferences, prices, tags and the `full` sandbox policy. Default: none. */
  config?: Config;
  /** How long probes are trusted and when failing providers are set aside. */
  availability?: AvailabilityOptions;
  /** Where `isolation: "worktree"` calls get their worktrees; without it such calls are refused. */
  worktrees?: WorktreeManager;
}

/** What a failed call consumed, when its provider said so; its cost priced from the table if unreported. */
function spentBy(
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

function millisecondsFromEnv(name: string): number {
  const raw = platform().env(name);
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

/**
 * Builds the dispatcher. A call is admitted by the kernel (sandbox level), routed (profile,
 * name or `auto`), waits for its provider's permit, and is priced from the table when the
 * provider reports no cost; its success or failure feeds the provider's availability.
 */
export function createDispatcher(options: DispatcherOptions = {}): Dispatcher {
  const config = options.config ?? defaultConfig();
  const fakeSettings = config.providers.fake?.type === "fake" ? config.providers.fake : undefined;
  const fake = createFakeProvider({
    latencyMs: options.fakeLatencyMs ?? fakeSettings?.latency_ms ??
      millisecondsFromEnv("SVC_FAKE_LATENCY_MS"),
    jitterMs: options.fakeJitterMs ?? fakeSettings?.jitter_ms ??
      millisecondsFromEnv("SVC_FAKE_JITTER_MS"),
    costUsd: options.fakeCostUsd ?? fakeSettings?.cost_usd,
  });
  const registry = new Map<string, Provider>([["fake", fake]]);
  for (const provider of options.providers ?? []) registry.set(provider.name, provider);
  const capacity = new Map<string, number>();
  for (const [name, settings] of Object.entries(config.providers)) {
    if (settings.concurrency !== undefined) capacity.set(name, settings.concurrency);
  }
  for (const [name, permits] of Object.entries(options.concurrency ?? {})) {
    capacity.set(name, permits);
  }
  const semaphores = new Map(
    [...capacity].map(([name, permits]) => [name, new Semaphore(permits)]),
  );
  const running = new Map<string, number>();
  const tracker = new AvailabilityTracker(options.availability);

  function priceOf(name: string) {
    return config.providers[name]?.price ?? null;
  }

  /**
   * Every provider as routing sees it. A call (`wait: false`) waits only a short while for a
   * probe still running; a listing waits for every probe to end.
   */
  async function candidates(request: ProbeRequest = {}): Promise<RouteCandidate[]> {
    return await Promise.all([...registry.values()].map(async (provider) => {
      const price = priceOf(provider.name);
      return {
        name: provider.name,
        kind: provider.kind,
        availability: await tracker.check(provider, request),
        load: {
          running: running.get(provider.name) ?? 0,
          capacity: capacity.get(provider.name) ?? null,
        },
        tags: config.providers[provider.name]?.tags ?? [],
        price: price ? price.input_per_mtok + price.output_per_mtok : null,
        ...(provider.modelAliases ? { modelAliases: provider.modelAliases } : {}),
      };
    }));
  }

  async function send(
    provider: Provider,
    input: DispatchInput,
    model: string | null,
    sandbox: SandboxLevel,
  ) {
    const release = await semaphores.get(provider.name)?.acquire(input.signal);
    // Routing awaited probes: the call may have been stopped meanwhile.
    if (input.signal.aborted) {
      release?.();
      throw input.signal.reason;
    }
    running.set(provider.name, (running.get(provider.name) ?? 0) + 1);
    try {
      const result = await provider.dispatch({
        ...input,
        sandbox,
        ...(model !== null ? { model } : {}),
      });
      tracker.record(provider.name, true);
      const price = priceOf(provider.name);
      if (result.cost_usd === null && price) result.cost_usd = priced(result.usage, price);
      return result;
    } catch (error) {
      if (!input.signal.aborted && !callersFault(error)) {
        tracker.record(provider.name, false);
      }
      throw error;
    } finally {
      running.set(provider.name, (running.get(provider.name) ?? 1) - 1);
      release?.();
    }
  }

  const worktrees = options.worktrees;
  /**
   * The worktree of a call's repository. The repository is the call's working directory as its
   * caller decided it (a run's workdir, a dispatch's own), never the `workdir` option a script
   * wrote: that one is confined to the run's workdir before it becomes `cwd`.
   */
  function openWorktree(input: DispatchInput) {
    const dir = input.cwd;
    if (!worktrees) {
      return Promise.reject(
        new SvcError(
          "invalid_request",
          "Cannot use a worktree: this host has no worktree directory",
        ),
      );
    }
    if (!dir) {
      return Promise.reject(
        new SvcError(
          "invalid_request",
          "Cannot use a worktree: the call has no workdir (the repository to branch from)",
        ),
      );
    }
    return worktrees.create(dir);
  }

  function admit(options: AgentOptions, context: DispatchContext = {}): SandboxAdmission {
    const profileSandbox = options.profile !== undefined
      ? config.profiles[options.profile]?.sandbox
      : undefined;
    const requested = options.sandbox ?? profileSandbox;
    return admitSandbox(requested, {
      sandboxDefault: context.sandboxDefault ?? requested,
      ...(context.sandboxMax !== undefined ? { sandboxMax: context.sandboxMax } : {}),
      full: config.sandbox.full,
      ...(context.fullApproved ? { approved: true } : {}),
      ...(context.microvm ? { microvm: true } : {}),
    });
  }

  return {
    providers: () => [...registry.keys()],
    async status(request = {}) {
      return (await candidates(request)).map((c) => ({
        name: c.name,
        kind: c.kind,
        available: c.availability.available,
        reason: c.availability.reason,
        version: c.availability.version ?? null,
        running: c.load.running,
        concurrency: c.load.capacity,
        tags: [...c.tags],
        price: priceOf(c.name),
      }));
    },
    admit,
    async dispatch(input, context = {}) {
      const { options } = input;
      const admission = admit(options, context);
      if (admission.needsApproval) {
        throw new SvcError(
          "forbidden",
          "Cannot grant the full sandbox: the configuration's sandbox.full is ask, and no person approved this call",
        );
      }
      const route: RouteDecision = context.fakeOnly
        ? {
          provider: "fake",
          model: null,
          reason: "every call goes to the fake provider (fake dispatch)",
        }
        : chooseRoute(options, admission.level, await candidates({ wait: false }), config);
      const provider = registry.get(route.provider)!;
      if (context.requirePrice && provider !== fake && !priceOf(provider.name)) {
        throw new UnpricedCallError(provider.name);
      }
      const worktree = options.isolation === "worktree" ? await openWorktree(input) : undefined;
      let result: DispatchResult;
      let kept: WorktreeResult | undefined;
      try {
        result = await send(
          provider,
          worktree ? { ...input, cwd: worktree.path } : input,
          route.model,
          admission.level,
        );
      } catch (error) {
        if (input.signal.aborted) throw error;
        throw new ProviderError(error, route, spentBy(error, priceOf(route.provider)));
      } finally {
        if (worktree) kept = await worktrees!.finish(worktree);
      }
      return {
        ...result,
        route,
        sandbox: admission.level,
        sandbox_clamped: admission.clamped,
        ...(kept ? { worktree: kept } : {}),
      };
    },
  };
}

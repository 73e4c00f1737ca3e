import { type Config, defaultConfig } from "../config/mod.ts";
import { SvcError } from "../errors/mod.ts";
import type { AgentOptions, SandboxLevel } from "../schemas/mod.ts";
import { admitSandbox, type SandboxAdmission } from "./kernel.ts";
import { candidates, type ProviderPool, providerPool, send, spentBy } from "./provider_pool.ts";
import { chooseRoute, type RouteDecision } from "./router.ts";
import { spawnDir } from "./spawn_dir.ts";
import type { DispatchResult, ProbeRequest, Usage } from "./types.ts";
import type { Worktree, WorktreeManager, WorktreeResult } from "../worktrees/mod.ts";
import type { DispatcherOptions, DispatchInput } from "./dispatcher_options.ts";

export type { DispatcherOptions, DispatchInput } from "./dispatcher_options.ts";

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
  /**
   * The dispatcher as configured now, which a later configuration reload does not change: a run
   * holds it for its whole life, so that it ends with the providers and routing it started
   * with. Absent on a dispatcher that is never reconfigured (it is its own pinned self).
   */
  pinned?(): Dispatcher;
}

/**
 * Builds the dispatcher. A call is admitted by the kernel (sandbox level), routed (profile,
 * name or `auto`), waits for its provider's permit, and is priced from the table when the
 * provider reports no cost; its success or failure feeds the provider's availability.
 */
export function createDispatcher(options: DispatcherOptions = {}): Dispatcher {
  const config = options.config ?? defaultConfig();
  const pool = providerPool(config, options);
  const admit = (agent: AgentOptions, context: DispatchContext = {}) =>
    admitCall(config, agent, context);
  return {
    providers: () => [...pool.registry.keys()],
    status: (request = {}) => providerStatuses(pool, request),
    admit,
    dispatch: (input, context = {}) =>
      dispatchCall({ pool, admit, worktrees: options.worktrees }, input, context),
  };
}

/** The kernel's sandbox decision for a call: its ask (else its profile's) under the context's bounds. */
function admitCall(
  config: Config,
  options: AgentOptions,
  context: DispatchContext,
): SandboxAdmission {
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

/** Every provider as `status()` lists it: a listing waits for every probe to end. */
async function providerStatuses(
  pool: ProviderPool,
  request: ProbeRequest,
): Promise<ProviderStatus[]> {
  return (await candidates(pool, request)).map((c) => ({
    name: c.name,
    kind: c.kind,
    available: c.availability.available,
    reason: c.availability.reason,
    version: c.availability.version ?? null,
    running: c.load.running,
    concurrency: c.load.capacity,
    tags: [...c.tags],
    price: pool.priceOf(c.name),
  }));
}

/** What one dispatch needs beside its input: the providers, the kernel and the worktrees. */
interface CallParts {
  pool: ProviderPool;
  admit(options: AgentOptions, context: DispatchContext): SandboxAdmission;
  worktrees: WorktreeManager | undefined;
}

/** One call, in order: admit, route, check its price, open its worktree, send, finish the worktree. */
async function dispatchCall(
  parts: CallParts,
  input: DispatchInput,
  context: DispatchContext,
): Promise<DispatchOutcome> {
  const { pool } = parts;
  const { options } = input;
  const admission = parts.admit(options, context);
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
    : chooseRoute(options, admission.level, await candidates(pool, { wait: false }), pool.config);
  const provider = pool.registry.get(route.provider)!;
  if (context.requirePrice && provider !== pool.fake && !pool.priceOf(provider.name)) {
    throw new UnpricedCallError(provider.name);
  }
  const worktree = options.isolation === "worktree"
    ? await openWorktree(parts.worktrees, input)
    : undefined;
  let result: DispatchResult;
  let kept: WorktreeResult | undefined;
  try {
    result = await send(
      pool,
      provider,
      worktree ? { ...input, cwd: worktree.path, cwdRoot: worktree.root } : input,
      route.model,
      admission.level,
    );
  } catch (error) {
    if (input.signal.aborted) throw error;
    throw new ProviderError(error, route, spentBy(error, pool.priceOf(route.provider)));
  } finally {
    if (worktree) kept = await parts.worktrees!.finish(worktree);
  }
  return {
    ...result,
    route,
    sandbox: admission.level,
    sandbox_clamped: admission.clamped,
    ...(kept ? { worktree: kept } : {}),
  };
}

/**
 * The worktree of a call's repository. The repository is the call's working directory as its
 * caller decided it (a run's workdir, a dispatch's own), never the `workdir` option a script
 * wrote: that one is confined to the run's workdir before it becomes `cwd`.
 */
function openWorktree(
  worktrees: WorktreeManager | undefined,
  input: DispatchInput,
): Promise<Worktree & { root: string }> {
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
  return openChecked(worktrees, dir, input.cwdRoot);
}

/**
 * A worktree branched from the repository at `dir`, resolved and checked inside `root` right
 * before (see `spawnDir`); its agent starts in the worktree's real path, which must stay
 * inside itself.
 */
async function openChecked(
  worktrees: WorktreeManager,
  dir: string,
  root: string | undefined,
): Promise<Worktree & { root: string }> {
  const repo = await spawnDir(dir, root);
  const worktree = await worktrees.create(repo);
  try {
    return { ...worktree, root: await spawnDir(worktree.path, undefined) };
  } catch (error) {
    await worktrees.finish(worktree).catch(() => {});
    throw error;
  }
}

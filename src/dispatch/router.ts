import type { Config } from "../config/mod.ts";
import { SvcError } from "../errors/mod.ts";
import type { AgentOptions, SandboxLevel } from "../schemas/mod.ts";
import type { Availability } from "./types.ts";
import { type ClaudeModelAlias, isClaudeAlias, type ModelAliases } from "./model_aliases.ts";

/** A provider as the router sees it. */
export interface RouteCandidate {
  name: string;
  kind: "fake" | "harness" | "api";
  availability: Availability;
  /** Calls running now, and the provider's cap (null: none). */
  load: { running: number; capacity: number | null };
  tags: readonly string[];
  /** USD per million input plus output tokens, when priced. */
  price: number | null;
  /** The Claude model aliases it serves, and as what (`Provider.modelAliases`). */
  modelAliases?: ModelAliases;
}

/** Where a call goes, with which model, and why: recorded with the call. */
export interface RouteDecision {
  /** The provider chosen. */
  provider: string;
  /** The model it is asked for; null for the provider's default. */
  model: string | null;
  /** Why: the profile, the provider named, or how `auto` routing chose. */
  reason: string;
  /** A sandbox level the profile asks for, used when the call names none. */
  profileSandbox?: SandboxLevel;
}

type Routing = Pick<Config, "profiles" | "routing">;

function loadRatio(candidate: RouteCandidate): number {
  return candidate.load.running / (candidate.load.capacity ?? 1000);
}

/**
 * Chooses the provider of one call. `profile` fixes provider and model; `provider` names one
 * (refused with the reason when it is unknown or unavailable); `auto` (the default) takes the
 * available providers, keeps those that can work at the admitted sandbox level (model APIs
 * cannot act on files) and, for a model named by a Claude alias (`haiku`, `sonnet`, `opus`),
 * that serve Claude models; it orders them by tag, effort, configured preference, current load
 * and price. An alias reaches the chosen provider as that provider names it; a provider named
 * for a call with an alias it does not serve is refused.
 */
export function chooseRoute(
  options: AgentOptions,
  sandbox: SandboxLevel,
  candidates: RouteCandidate[],
  routing: Routing,
): RouteDecision {
  const ask = askOf(options, routing);
  const { alias } = ask;
  const extra = ask.profileSandbox ? { profileSandbox: ask.profileSandbox } : {};
  if (ask.wanted !== "auto") {
    const candidate = namedCandidate(ask.wanted, alias, candidates);
    return { provider: ask.wanted, model: ask.modelFor(candidate), reason: ask.via, ...extra };
  }
  const { pool, notes } = eligible(candidates, sandbox, alias);
  const { ordered, why } = ranked(pool, options, routing);
  const chosen = ordered[0]!;
  return {
    provider: chosen.name,
    model: ask.modelFor(chosen),
    reason: `auto: ${chosen.name} of ${ordered.map((c) => c.name).join(", ")} (${
      [...why, ...notes].filter(Boolean).join("; ")
    })`,
    ...extra,
  };
}

/** What a call asks for: a provider (or `auto`) and a model, from its options or its profile. */
interface Ask {
  wanted: string;
  /** The Claude alias the model is, if it is one. */
  alias: ClaudeModelAlias | undefined;
  /** How the provider was chosen, when it was named. */
  via: string;
  profileSandbox: SandboxLevel | undefined;
  /** The model the chosen provider gets: an alias as that provider names it. */
  modelFor(candidate: RouteCandidate): string | null;
}

function askOf(options: AgentOptions, routing: Routing): Ask {
  let wanted = options.provider ?? "auto";
  let model = options.model ?? null;
  let via = "asked for by name";
  let profileSandbox: SandboxLevel | undefined;
  if (options.profile !== undefined) {
    const profile = routing.profiles[options.profile];
    if (!profile) {
      const known = Object.keys(routing.profiles).join(", ") || "none";
      throw new SvcError(
        "not_found",
        `Cannot route the call: no profile '${options.profile}' (configured: ${known})`,
      );
    }
    wanted = profile.provider;
    model ??= profile.model ?? null;
    via = `profile '${options.profile}'`;
    profileSandbox = profile.sandbox;
  }
  const alias = isClaudeAlias(model) ? model : undefined;
  return {
    wanted,
    alias,
    via,
    profileSandbox,
    modelFor: (c) => alias === undefined ? model : c.modelAliases![alias]!,
  };
}

/** Whether a candidate serves the call's Claude alias (every candidate does without one). */
function serves(candidate: RouteCandidate, alias: ClaudeModelAlias | undefined): boolean {
  return alias === undefined || candidate.modelAliases?.[alias] !== undefined;
}

/** The provider a call names: refused when unknown, unavailable, or not serving its alias. */
function namedCandidate(
  wanted: string,
  alias: ClaudeModelAlias | undefined,
  candidates: RouteCandidate[],
): RouteCandidate {
  const candidate = candidates.find((c) => c.name === wanted);
  if (!candidate) {
    const known = candidates.map((c) => c.name).join(", ");
    throw new SvcError(
      "not_found",
      `Cannot dispatch: unknown provider '${wanted}' (configured: ${known})`,
    );
  }
  if (!candidate.availability.available) {
    throw new SvcError(
      "unavailable",
      `Cannot dispatch to ${wanted}: it is unavailable (${candidate.availability.reason})`,
    );
  }
  if (!serves(candidate, alias)) {
    const others = candidates.filter((c) => c.kind !== "fake" && serves(c, alias))
      .map((c) => c.name);
    throw new SvcError(
      "invalid_request",
      `Cannot dispatch to ${wanted}: the model '${alias}' names a Claude model, which ${wanted} does not serve (providers that do: ${
        others.join(", ") || "none configured"
      })`,
    );
  }
  return candidate;
}

/**
 * The providers `auto` may choose from (the real ones when there are any), with a note for each
 * set aside: unavailable, serving no Claude model for an alias, or an API below `read-only`.
 */
function eligible(
  candidates: RouteCandidate[],
  sandbox: SandboxLevel,
  alias: ClaudeModelAlias | undefined,
): { pool: RouteCandidate[]; notes: string[] } {
  const notes: string[] = [];
  const real = candidates.filter((c) => c.kind !== "fake");
  let pool = real.length > 0 ? real : candidates;
  const unavailable = pool.filter((c) => !c.availability.available);
  for (const c of unavailable) notes.push(`${c.name} unavailable: ${c.availability.reason}`);
  pool = pool.filter((c) => c.availability.available);
  if (alias !== undefined) {
    const other = pool.filter((c) => !serves(c, alias));
    if (other.length > 0) {
      notes.push(`${other.map((c) => c.name).join(", ")} serve no Claude models ('${alias}')`);
    }
    pool = pool.filter((c) => serves(c, alias));
  }
  if (sandbox !== "read-only") {
    const apis = pool.filter((c) => c.kind === "api");
    if (apis.length > 0) {
      notes.push(`${apis.map((c) => c.name).join(", ")} cannot work at sandbox ${sandbox}`);
    }
    pool = pool.filter((c) => c.kind !== "api");
  }
  if (pool.length === 0) {
    throw new SvcError(
      "unavailable",
      `Cannot route the call: no provider can take it${
        notes.length ? ` (${notes.join("; ")})` : ""
      }`,
    );
  }
  return { pool, notes };
}

/**
 * The eligible providers in order (tag, effort, configured preference, load, price, name), with
 * the reasons of the first one's place.
 */
function ranked(
  pool: RouteCandidate[],
  options: AgentOptions,
  routing: Routing,
): { ordered: RouteCandidate[]; why: string[] } {
  const tagList = options.tag !== undefined ? routing.routing.tags[options.tag] : undefined;
  const effortList = options.effort !== undefined
    ? routing.routing.effort[options.effort]
    : undefined;
  const rank = (list: readonly string[] | undefined, name: string) => {
    const i = list?.indexOf(name) ?? -1;
    return i === -1 ? Number.MAX_SAFE_INTEGER : i;
  };
  const keys = (c: RouteCandidate): number[] => [
    options.tag === undefined
      ? 0
      : tagList
      ? rank(tagList, c.name)
      : c.tags.includes(options.tag)
      ? 0
      : 1,
    rank(effortList, c.name),
    rank(routing.routing.prefer, c.name),
    loadRatio(c),
    c.price ?? Number.MAX_SAFE_INTEGER,
  ];
  const ordered = [...pool].sort((a, b) => {
    const ka = keys(a);
    const kb = keys(b);
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! - kb[i]!;
    return a.name.localeCompare(b.name);
  });
  const chosen = ordered[0]!;
  const why = [
    options.tag !== undefined
      ? `tag '${options.tag}'${tagList ? ` -> ${tagList.join(", ")}` : ""}`
      : "",
    options.effort !== undefined && effortList
      ? `effort ${options.effort} -> ${effortList.join(", ")}`
      : "",
    routing.routing.prefer.length > 0 ? `preferred ${routing.routing.prefer.join(", ")}` : "",
    `load ${chosen.load.running}/${chosen.load.capacity ?? "unbounded"}`,
    chosen.price !== null ? `price ${chosen.price}/Mtok` : "",
  ];
  return { ordered, why };
}

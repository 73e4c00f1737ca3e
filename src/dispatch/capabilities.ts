/**
 * The capability report of this host's providers (`GET /api/capabilities`, `svc doctor`): per
 * configured provider, whether its tool is installed, its version and whether svc is tested
 * with it, whether its credentials or endpoint answer (a model list: no tokens spent), and the
 * sandbox levels it supports. Bounded in time: every probe has a deadline and the report comes
 * within {@linkcode CAPABILITY_DEADLINE_MS}. Owner-neutral, and it never holds a secret: keys are
 * named, never shown.
 * @module
 */
import type { Config, ProviderConfig } from "../config/mod.ts";
import type {
  CapabilityReport,
  CredentialsCapability,
  ProviderCapability,
  SandboxLevel,
  ToolCapability,
} from "../schemas/mod.ts";
import { type EndpointAnswer, EndpointProbes, type EndpointWire } from "./endpoint_probe.ts";
import {
  codexHelperReport,
  HARNESS_BASE_ENV,
  HARNESS_KEY_ENV,
  probeToolVersion,
  TESTED_VERSIONS,
} from "./harness/mod.ts";
import { svcHome } from "../config/mod.ts";
import { joinPath } from "../platform/mod.ts";

/** The bound of a whole report, in ms: probes still running then are reported as such. */
export const CAPABILITY_DEADLINE_MS = 10_000;
/** Longest an endpoint may take to answer its probe, in ms. */
export const ENDPOINT_TIMEOUT_MS = 5_000;

/** Options of {@linkcode createCapabilities}. */
export interface CapabilitiesOptions {
  /** The providers and the `full` policy. */
  config: Pick<Config, "providers" | "sandbox">;
  /** Reads a host variable (the composition root passes the platform's). */
  env(name: string): string | undefined;
  /** The bound of a report; {@linkcode CAPABILITY_DEADLINE_MS} by default. */
  deadlineMs?: number;
  /** An endpoint probe's deadline; {@linkcode ENDPOINT_TIMEOUT_MS} by default. */
  endpointTimeoutMs?: number;
}

/** The capability report of a configuration's providers. */
export interface Capabilities {
  /** Probes (or reuses recent probes of) every provider; within the deadline. */
  report(): Promise<CapabilityReport>;
}

type HarnessType = keyof typeof HARNESS_KEY_ENV;

/** Where each tool talks to when the configuration names no `base_url`. */
const TOOL_ENDPOINTS: Record<HarnessType, { wire: EndpointWire; base?: string }> = {
  claude: { wire: "anthropic", base: "https://api.anthropic.com" },
  codex: { wire: "openai", base: "https://api.openai.com/v1" },
  gemini: { wire: "gemini", base: "https://generativelanguage.googleapis.com" },
  // opencode's model provider is set in its own configuration, which svc does not read.
  opencode: { wire: "openai" },
};

/** Variables that hold a key a model list can be asked with (not logins, not directories). */
const KEY_NAME = /(?:_API_KEY|_KEY|_TOKEN)$/;
/** Login tokens that only the tool itself can use. */
const LOGIN_TOKENS = new Set(["CLAUDE_CODE_OAUTH_TOKEN"]);

/** What to probe for one provider. */
interface ProbePlan {
  kind: ProviderCapability["kind"];
  command?: string;
  keyEnv: string[];
  wire?: EndpointWire;
  base?: string;
  /** Whether the base was configured (then it is probed even without a key). */
  configured: boolean;
  fixedEnv?: Readonly<Record<string, string>>;
}

function planOf(settings: ProviderConfig): ProbePlan {
  switch (settings.type) {
    case "fake":
      return { kind: "fake", keyEnv: [], configured: false };
    case "openai":
      return {
        kind: "api",
        keyEnv: [settings.api_key_env],
        wire: "openai",
        base: settings.base_url,
        configured: true,
      };
    case "anthropic":
      return {
        kind: "api",
        keyEnv: [settings.api_key_env ?? "ANTHROPIC_API_KEY"],
        wire: "anthropic",
        base: settings.base_url ?? "https://api.anthropic.com",
        configured: settings.base_url !== undefined,
      };
    case "a2a":
      return {
        kind: "api",
        keyEnv: settings.token_env ? [settings.token_env] : [],
        wire: "a2a",
        base: settings.url,
        configured: true,
      };
    default: {
      const endpoint = TOOL_ENDPOINTS[settings.type];
      const base = settings.base_url ?? endpoint.base;
      return {
        kind: "harness",
        command: settings.command ?? settings.type,
        keyEnv: (settings.pass_env ?? HARNESS_KEY_ENV[settings.type]).filter((n) =>
          KEY_NAME.test(n)
        ),
        wire: endpoint.wire,
        ...(base !== undefined ? { base } : {}),
        configured: settings.base_url !== undefined,
        ...(settings.env ? { fixedEnv: settings.env } : {}),
      };
    }
  }
}

/** The sandbox levels a kind of provider can run calls at (the model APIs touch no files). */
function levelsOf(kind: ProviderCapability["kind"]): SandboxLevel[] {
  return kind === "api" ? ["read-only"] : ["read-only", "write", "full"];
}

/**
 * The sandbox levels of one provider, and why one is missing: a Codex provider's depend on
 * where its processes' CODEX_HOME and TMPDIR lie (the configuration's `env` over the host's
 * variables that svc passes it), as its calls find them.
 */
async function sandboxOf(
  name: string,
  settings: ProviderConfig,
  kind: ProviderCapability["kind"],
  hostEnv: (name: string) => string | undefined,
): Promise<{ levels: SandboxLevel[]; detail: string | null }> {
  if (settings.type !== "codex") return { levels: levelsOf(kind), detail: null };
  const passed = [...HARNESS_BASE_ENV, ...(settings.pass_env ?? HARNESS_KEY_ENV.codex)];
  const env: Record<string, string> = {};
  for (const variable of ["HOME", "TMPDIR", "CODEX_HOME"]) {
    const value = settings.env?.[variable] ??
      (passed.includes(variable) ? hostEnv(variable) : undefined);
    if (value !== undefined) env[variable] = value;
  }
  const report = await codexHelperReport(env, {
    fixedTmpdir: settings.env?.TMPDIR !== undefined,
    stateDir: joinPath(svcHome(), "harness", name),
  });
  return { levels: report.levels, detail: report.detail };
}

/** Builds the capability report service over a configuration. */
export function createCapabilities(options: CapabilitiesOptions): Capabilities {
  const deadlineMs = options.deadlineMs ?? CAPABILITY_DEADLINE_MS;
  const endpointTimeoutMs = Math.min(options.endpointTimeoutMs ?? ENDPOINT_TIMEOUT_MS, deadlineMs);
  const endpoints = new EndpointProbes();
  const providers: Array<[string, ProviderConfig]> = Object.entries(options.config.providers);
  if (!providers.some(([name]) => name === "fake")) providers.unshift(["fake", { type: "fake" }]);

  async function toolOf(type: string, command: string, waitMs: number): Promise<ToolCapability> {
    const probe = await probeToolVersion(command, { waitMs });
    const tested = (TESTED_VERSIONS as Record<string, { version: string } | undefined>)[type];
    const version = probe.state === "answered" ? probe.version : null;
    return {
      command,
      installed: probe.state !== "missing",
      path: probe.state === "missing" ? null : probe.path,
      version,
      probe: probe.state,
      detail: probe.state === "answered"
        ? probe.line
        : probe.state === "probing"
        ? `--version had not answered within ${waitMs} ms; it is still being probed`
        : probe.reason,
      tested_version: tested?.version ?? null,
      tested: version === null || !tested ? null : version === tested.version,
    };
  }

  async function credentialsOf(plan: ProbePlan): Promise<CredentialsCapability> {
    const base = { key_env: plan.keyEnv, key_found: null, endpoint: null };
    if (plan.kind === "fake") {
      return { ...base, state: "not_needed", detail: "the fake provider needs no credentials" };
    }
    const found = plan.keyEnv.map((name) => ({
      name,
      value: plan.fixedEnv?.[name] ?? options.env(name),
    }))
      .find((key): key is { name: string; value: string } => !!key.value);
    const usable = found && !LOGIN_TOKENS.has(found.name) ? found : undefined;
    const secrets = plan.keyEnv.map((name) => plan.fixedEnv?.[name] ?? options.env(name))
      .filter((value): value is string => !!value);
    const keyFound = found?.name ?? null;
    if (plan.base === undefined || plan.wire === undefined) {
      return {
        ...base,
        key_found: keyFound,
        state: "unchecked",
        detail: "the tool's endpoint is set in its own configuration; svc does not probe it",
      };
    }
    if (!usable && !plan.configured) {
      return {
        ...base,
        key_found: keyFound,
        state: found ? "unchecked" : plan.keyEnv.length > 0 ? "missing" : "unchecked",
        detail: found
          ? `${found.name} is a login token only the tool can use`
          : plan.keyEnv.length > 0
          ? `none of ${plan.keyEnv.join(", ")} is set${
            plan.kind === "harness" ? " (the tool may use its own login)" : ""
          }`
          : "no key variable is configured",
      };
    }
    const answer = await endpoints.probe({
      wire: plan.wire,
      base: plan.base,
      ...(usable ? { key: usable } : {}),
      timeoutMs: endpointTimeoutMs,
    });
    const said = stateOf(answer, usable === undefined && plan.keyEnv.length > 0, plan.keyEnv);
    return {
      ...base,
      key_found: keyFound,
      endpoint: answer.endpoint || null,
      state: said.state,
      detail: withoutValues(said.detail, secrets),
    };
  }

  return {
    async report() {
      const started = Date.now();
      const entries = await Promise.all(providers.map(async ([name, settings]) => {
        const plan = planOf(settings);
        const [tool, credentials, sandbox] = await Promise.all([
          plan.command !== undefined
            ? toolOf(settings.type, plan.command, Math.max(0, deadlineMs - endpointTimeoutMs))
            : Promise.resolve(null),
          credentialsOf(plan),
          sandboxOf(name, settings, plan.kind, options.env),
        ]);
        return {
          name,
          type: settings.type,
          kind: plan.kind,
          tool,
          credentials,
          sandbox_levels: sandbox.levels,
          sandbox_detail: sandbox.detail,
        };
      }));
      return {
        generated_at: new Date(started).toISOString(),
        took_ms: Date.now() - started,
        deadline_ms: deadlineMs,
        sandbox_full: options.config.sandbox.full,
        providers: entries,
      };
    },
  };
}

/**
 * `text` with every key value removed. Details are svc's own words (a status, a count, never a
 * body), so this only guards against a value that found its way in anyway.
 */
function withoutValues(text: string, secrets: readonly string[]): string {
  return secrets.reduce((out, secret) => out.replaceAll(secret, "[redacted]"), text);
}

/** A probe's answer as a credentials state: without a key, an answer that refuses is a missing key. */
function stateOf(
  answer: EndpointAnswer,
  keyMissing: boolean,
  keyEnv: readonly string[],
): Pick<CredentialsCapability, "state" | "detail"> {
  if (keyMissing && answer.state !== "ok") {
    return {
      state: "missing",
      detail: `none of ${keyEnv.join(", ")} is set; probed without a key: ${answer.detail}`,
    };
  }
  return { state: answer.state, detail: answer.detail };
}

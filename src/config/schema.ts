import * as z from "zod";
import {
  type Assert,
  type AutomationConfig,
  AutomationConfigSchema,
  boundedJson,
  CONCURRENCY_LIMIT,
  type Effort,
  EffortSchema,
  type JsonValue,
  MAX_AGENTS_LIMIT,
  RUN_CONCURRENCY_CEILING,
  type SameType,
  type Schema,
} from "../schemas/mod.ts";

const name = z.string().regex(
  /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
  "must be letters, digits, '.', '_' or '-'",
);

/** Prices in USD per million tokens, used when a provider reports no cost of its own. */
export const PriceSchema = z.strictObject({
  input_per_mtok: z.number().nonnegative(),
  output_per_mtok: z.number().nonnegative(),
});

const common = {
  /** Simultaneous calls to this provider across every run and task of the host. */
  concurrency: z.number().int().positive().optional(),
  /** Routing tags this provider is good for (matched against `agent(..., {tag})`). */
  tags: z.array(z.string().min(1)).optional(),
  price: PriceSchema.optional(),
  model: z.string().min(1).optional(),
  timeout_ms: z.number().int().positive().optional(),
  /**
   * The model this provider gets for Claude Code's aliases `haiku`, `sonnet` and `opus`; naming
   * one says the provider serves Claude models. Claude Code and the Anthropic API have defaults.
   */
  model_aliases: z.strictObject({
    haiku: z.string().min(1).optional(),
    sonnet: z.string().min(1).optional(),
    opus: z.string().min(1).optional(),
  }).optional(),
};

const envName = z.string().regex(
  /^[A-Za-z_][A-Za-z0-9_]*$/,
  "must be the NAME of an environment variable",
);

const harness = {
  ...common,
  /** The tool's binary: a name on PATH or an absolute path. */
  command: z.string().min(1).optional(),
  extra_args: z.array(z.string()).optional(),
  /**
   * Host variables the tool gets beside PATH, HOME, locale, terminal and proxies: its key
   * variables. Replaces the tool's default list (docs/PROVIDERS.md).
   */
  pass_env: z.array(envName).optional(),
  /** Fixed variables set for the tool. */
  env: z.record(envName, z.string().refine((v) => !v.includes("\0"), "must not contain NUL"))
    .optional(),
  /**
   * The model endpoint the tool talks to (a company gateway, a local server), mapped to the
   * tool's own variables and settings (docs/PROVIDERS.md).
   */
  base_url: z.url({ protocol: /^https?$/, error: "must be an http or https URL" }).optional(),
};

/** One provider of the configuration file; `type` says which kind. */
export const ProviderConfigSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("fake"),
    ...common,
    latency_ms: z.number().nonnegative().optional(),
    jitter_ms: z.number().nonnegative().optional(),
    cost_usd: z.number().nonnegative().optional(),
  }),
  z.strictObject({ type: z.literal("claude"), ...harness }),
  z.strictObject({ type: z.literal("codex"), ...harness }),
  z.strictObject({ type: z.literal("gemini"), ...harness }),
  z.strictObject({ type: z.literal("opencode"), ...harness }),
  z.strictObject({
    type: z.literal("openai"),
    ...common,
    model: z.string().min(1),
    base_url: z.url(),
    api_key_env: z.string().regex(
      /^[A-Z_][A-Z0-9_]*$/,
      "must be the NAME of an environment variable",
    ),
    stream: z.boolean().optional(),
    /** Send `effort` as `reasoning_effort` (default true; false for models without reasoning). */
    reasoning_effort: z.boolean().optional(),
  }),
  z.strictObject({
    type: z.literal("anthropic"),
    ...common,
    model: z.string().min(1),
    base_url: z.url().optional(),
    api_key_env: z.string().regex(
      /^[A-Z_][A-Z0-9_]*$/,
      "must be the NAME of an environment variable",
    ).optional(),
    stream: z.boolean().optional(),
    max_tokens: z.number().int().positive().optional(),
    /** How `effort` asks for thinking: true (by model), "adaptive", "enabled", or false (none). */
    thinking: z.union([z.boolean(), z.enum(["adaptive", "enabled"])]).optional(),
  }),
  // Agents elsewhere (issue 14): a remote A2A agent, another svc host among them.
  z.strictObject({
    type: z.literal("a2a"),
    ...common,
    url: z.url({ protocol: /^https?$/ }),
    token_env: z.string().regex(
      /^[A-Z_][A-Z0-9_]*$/,
      "must be the NAME of an environment variable",
    ).optional(),
  }),
]);

/** Prices in USD per million tokens, used when a provider reports no cost of its own. */
export interface PriceConfig {
  /** USD per million input tokens. */
  input_per_mtok: number;
  /** USD per million output tokens. */
  output_per_mtok: number;
}

/** The settings every kind of provider accepts. */
export interface ProviderSettings {
  /** Simultaneous calls to this provider across every run and task of the host. */
  concurrency?: number;
  /** Routing tags this provider is good for (matched against `agent(..., {tag})`). */
  tags?: string[];
  /** The price table that prices calls whose cost the provider does not report. */
  price?: PriceConfig;
  /** The model of calls that name none. */
  model?: string;
  /** Longest a call may run, in milliseconds. */
  timeout_ms?: number;
  /**
   * The model this provider gets for Claude Code's aliases `haiku`, `sonnet` and `opus`; naming
   * one says the provider serves Claude models. Claude Code and the Anthropic API have defaults.
   */
  model_aliases?: {
    /** The model meant by `haiku`. */
    haiku?: string;
    /** The model meant by `sonnet`. */
    sonnet?: string;
    /** The model meant by `opus`. */
    opus?: string;
  };
}

/** The fake provider: answers every call itself, for tests and dry runs. */
export interface FakeProviderConfig extends ProviderSettings {
  /** The kind of provider. */
  type: "fake";
  /** How long each call takes, in milliseconds. */
  latency_ms?: number;
  /** Up to this many milliseconds more per call, at random: calls finish in varying order. */
  jitter_ms?: number;
  /** The cost each call reports, in USD. */
  cost_usd?: number;
}

/** The coding-agent command lines svc drives: Claude Code, Codex, Gemini CLI and opencode. */
export type HarnessType = "claude" | "codex" | "gemini" | "opencode";

/** A coding-agent command line (docs/PROVIDERS.md); `T` is the tool. */
export interface HarnessProviderConfig<T extends HarnessType = HarnessType>
  extends ProviderSettings {
  /** The tool. */
  type: T;
  /** The tool's binary: a name on PATH or an absolute path. */
  command?: string;
  /** Arguments added to every call, after svc's own. */
  extra_args?: string[];
  /**
   * Host variables the tool gets beside PATH, HOME, locale, terminal and proxies: its key
   * variables. Replaces the tool's default list (docs/PROVIDERS.md).
   */
  pass_env?: string[];
  /** Fixed variables set for the tool. */
  env?: Record<string, string>;
  /** The model endpoint the tool talks to, mapped to the tool's own variables and settings. */
  base_url?: string;
}

/** An OpenAI-compatible chat completions API (docs/API_PROVIDERS.md). */
export interface OpenAIProviderConfig extends ProviderSettings {
  /** The kind of provider. */
  type: "openai";
  /** The model every call uses unless it names its own. */
  model: string;
  /** The API's base URL. */
  base_url: string;
  /** The NAME of the environment variable that holds the API key (never the key itself). */
  api_key_env: string;
  /** Read the answer as a stream of events. */
  stream?: boolean;
  /** Send `effort` as `reasoning_effort` (default true; false for models without reasoning). */
  reasoning_effort?: boolean;
}

/** The Anthropic Messages API (docs/API_PROVIDERS.md). */
export interface AnthropicProviderConfig extends ProviderSettings {
  /** The kind of provider. */
  type: "anthropic";
  /** The model every call uses unless it names its own. */
  model: string;
  /** The API's base URL, when not Anthropic's own. */
  base_url?: string;
  /** The NAME of the environment variable that holds the API key (never the key itself). */
  api_key_env?: string;
  /** Read the answer as a stream of events. */
  stream?: boolean;
  /** The most tokens an answer may have. */
  max_tokens?: number;
  /**
   * How `effort` asks for thinking: true (the default) by the model's name, `adaptive`
   * (`output_config.effort`) or `enabled` (a budget) for every model, false for none.
   */
  thinking?: boolean | "adaptive" | "enabled";
}

/** An agent elsewhere, over the A2A protocol (docs/PROVIDERS.md). */
export interface A2aProviderConfig extends ProviderSettings {
  /** The kind of provider. */
  type: "a2a";
  /** The agent's base URL: its card is at `{url}/.well-known/agent-card.json`. */
  url: string;
  /** The NAME of the environment variable holding the bearer token (never the token itself). */
  token_env?: string;
}

/** A configured provider; `type` says which kind. */
export type ProviderConfig =
  | FakeProviderConfig
  | HarnessProviderConfig<"claude">
  | HarnessProviderConfig<"codex">
  | HarnessProviderConfig<"gemini">
  | HarnessProviderConfig<"opencode">
  | OpenAIProviderConfig
  | AnthropicProviderConfig
  | A2aProviderConfig;
type _ProviderConfigMatches = Assert<
  SameType<ProviderConfig, z.infer<typeof ProviderConfigSchema>>
>;

/**
 * What the configuration says about the `full` sandbox level: never granted (`deny`: clamped
 * to `write`), granted (`allow`), or granted once a person approves the call (`ask`).
 */
export type FullSandboxPolicy = "deny" | "allow" | "ask";

/** Largest webhook body a hook may accept, in bytes. */
export const WEBHOOK_BODY_LIMIT = 25 * 1024 * 1024;

/**
 * Default replay window of a webhook (30 days): longer than GitHub lets anyone redeliver a
 * delivery (3 days), and the whole protection a GitHub-style hook has, whose signatures carry no
 * time.
 */
export const WEBHOOK_REPLAY_WINDOW_S = 30 * 24 * 3600;
/** Longest replay window a hook may set (a year). */
export const WEBHOOK_REPLAY_WINDOW_MAX_S = 366 * 24 * 3600;

/**
 * A webhook of the configuration file (`webhooks.<name>`, served at `POST /webhooks/<name>`):
 * its shared secret (the NAME of the variable holding it), its signature style, its owner, and
 * what a delivery does: run a saved workflow with the payload as `args`, or dispatch a prompt
 * rendered from `prompt_template` over the payload.
 */
export const WebhookConfigSchema = z.strictObject({
  secret_env: envName,
  style: z.enum(["github", "standard"]).default("github"),
  owner: z.string().min(1).max(128).optional(),
  workflow: name.max(64).optional(),
  prompt_template: z.string().min(1).max(8192).optional(),
  /** Dispatch options (provider, sandbox, ...) of a `prompt_template` hook. */
  options: z.record(z.string(), boundedJson()).optional(),
  fake_dispatch: z.boolean().optional(),
  max_body_bytes: z.number().int().positive().max(WEBHOOK_BODY_LIMIT).default(1024 * 1024),
  /** Standard Webhooks: how far `webhook-timestamp` may be from now, in seconds. */
  tolerance_s: z.number().int().positive().max(3600).default(300),
  /**
   * How long a delivery's replay record is kept, in seconds: a repeat within it starts nothing.
   * At least an hour, so never shorter than the largest `tolerance_s`.
   */
  replay_window_s: z.number().int().min(3600).max(WEBHOOK_REPLAY_WINDOW_MAX_S).default(
    WEBHOOK_REPLAY_WINDOW_S,
  ),
}).superRefine((hook, ctx) => {
  if ((hook.workflow === undefined) === (hook.prompt_template === undefined)) {
    ctx.addIssue({
      code: "custom",
      path: ["workflow"],
      message: "give exactly one of 'workflow' and 'prompt_template'",
    });
  }
  if (hook.options !== undefined && hook.workflow !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["options"],
      message: "goes with 'prompt_template' only",
    });
  }
});

/** A webhook of the configuration file. */
export interface WebhookConfig {
  /** The NAME of the environment variable holding the shared secret (never the secret). */
  secret_env: string;
  /** `github` (`X-Hub-Signature-256`) or `standard` (Standard Webhooks). Default github. */
  style: "github" | "standard";
  /** Whose work a delivery starts. Default `local`. */
  owner?: string | undefined;
  /** The saved workflow a delivery runs, with the payload as `args`. */
  workflow?: string | undefined;
  /** The prompt a delivery dispatches: `{{payload.a.b}}` takes a field of the payload. */
  prompt_template?: string | undefined;
  /** Dispatch options of a `prompt_template` hook. */
  options?: Record<string, JsonValue> | undefined;
  /** Send the work to the fake provider. */
  fake_dispatch?: boolean | undefined;
  /** Largest body accepted, in bytes. Default 1 MiB. */
  max_body_bytes: number;
  /** Standard Webhooks: the timestamp tolerance in seconds. Default 300. */
  tolerance_s: number;
  /** How long a delivery's replay record is kept, in seconds. Default 30 days. */
  replay_window_s: number;
}
type _WebhookConfigMatches = Assert<SameType<WebhookConfig, z.infer<typeof WebhookConfigSchema>>>;

/**
 * An outbound notification endpoint (`notifications.endpoints.<name>`): where the daemon POSTs
 * owners' notifications, signed as Standard Webhooks with the secret in the variable
 * `secret_env`. Only the operator's configuration names endpoints: a URL a remote caller could
 * supply would let it make the host send requests anywhere (docs/SECURITY.md).
 */
export const NotificationEndpointSchema = z.strictObject({
  url: z.string().max(2048).refine((text) => {
    try {
      const url = new URL(text);
      return (url.protocol === "http:" || url.protocol === "https:") && url.username === "" &&
        url.password === "";
    } catch {
      return false;
    }
  }, "must be an http(s) URL without credentials"),
  secret_env: envName,
  /** Only these kinds; every kind when absent. */
  kinds: z.array(z.enum(["failed", "limit", "approval"])).min(1).optional(),
  /** Only these owners' notifications; every owner's when absent. */
  owners: z.array(z.string().min(1).max(128)).min(1).max(1000).optional(),
});

/** An outbound notification endpoint of the configuration file. */
export interface NotificationEndpointConfig {
  /** Where to POST (http or https, no credentials in it). */
  url: string;
  /** The NAME of the variable holding the signing secret (`whsec_<base64>`, or any text). */
  secret_env: string;
  /** Only these kinds of notification; every kind when absent. */
  kinds?: ("failed" | "limit" | "approval")[] | undefined;
  /** Only these owners' notifications; every owner's when absent. */
  owners?: string[] | undefined;
}
type _EndpointMatches = Assert<
  SameType<NotificationEndpointConfig, z.infer<typeof NotificationEndpointSchema>>
>;

/** The outbound delivery of notifications (the daemon's deliverer). */
export const NotificationsConfigSchema = z.strictObject({
  /** Endpoints by name. */
  endpoints: z.record(name.max(64), NotificationEndpointSchema).default({}),
  /** Attempts of one delivery before it is given up. */
  max_attempts: z.number().int().min(1).max(20).default(8),
  /** The wait before the first retry, in seconds; each next one doubles, up to 10 minutes. */
  first_retry_s: z.number().min(0).max(600).default(5),
  /** How long one attempt may take, in seconds. */
  timeout_s: z.number().positive().max(120).default(10),
  /** A notification older than this is no longer delivered (gave up), in seconds. */
  max_age_s: z.number().int().positive().max(7 * 86_400).default(86_400),
}).default({
  endpoints: {},
  max_attempts: 8,
  first_retry_s: 5,
  timeout_s: 10,
  max_age_s: 86_400,
});

/** Default of `daemon.automations_per_owner`: a team's schedules, far below the host-wide ceiling. */
export const AUTOMATIONS_PER_OWNER = 50;
/** Default of `daemon.automations_total`: the scheduler looks at each once a second. */
export const AUTOMATIONS_TOTAL = 1000;
/** Default of `daemon.automation_min_interval_s`: once a minute, five-field cron's finest step. */
export const AUTOMATION_MIN_INTERVAL_S = 60;

/** The daemon's settings. */
export const DaemonConfigSchema = z.strictObject({
  /** Queued runs and tasks one daemon works on at once. */
  concurrency: z.number().int().positive().max(256).default(4),
  /** Whether this host's daemons run the scheduler. */
  scheduler: z.boolean().default(true),
  /** A missed slot younger than this fires once when the scheduler comes back, in seconds; 0: never. */
  catch_up_s: z.number().int().nonnegative().default(3600),
  /** Most automations one owner may make through the API (the configuration file's not counted). */
  automations_per_owner: z.number().int().nonnegative().max(100_000).default(
    AUTOMATIONS_PER_OWNER,
  ),
  /** Most automations made through the API, every owner's together: each is a timer of the leader. */
  automations_total: z.number().int().nonnegative().max(100_000).default(AUTOMATIONS_TOTAL),
  /** Shortest gap between two firings of an automation made through the API, in seconds. */
  automation_min_interval_s: z.number().int().nonnegative().max(86_400).default(
    AUTOMATION_MIN_INTERVAL_S,
  ),
}).default({
  concurrency: 4,
  scheduler: true,
  catch_up_s: 3600,
  automations_per_owner: AUTOMATIONS_PER_OWNER,
  automations_total: AUTOMATIONS_TOTAL,
  automation_min_interval_s: AUTOMATION_MIN_INTERVAL_S,
});

/**
 * Admission control (docs/SECURITY.md, "Capacity"): how many guests this host runs at once,
 * how long its queue may grow, and what one remote caller (dashboard API, MCP, A2A) may hold.
 * Sized for a 2-core, 24 GiB machine from the scale bench (docs/BENCHMARKS.md, "Scale of one
 * host"): 32 guests of up to 512 MiB of heap each.
 */
const admissionSchema = z.strictObject({
  /** Runs executing in one host process at once (every caller); more wait in the queue. */
  host_live_guests: z.number().int().positive().max(1024).default(32),
  /** Runs waiting in the queue, every owner's together; beyond it, 429. */
  host_queued_runs: z.number().int().nonnegative().max(100_000).default(200),
  /**
   * Live runs of one remote owner on every host sharing the ledger (the ledger holds the
   * count); more wait in the queue.
   */
  owner_live_runs: z.number().int().positive().max(1024).default(16),
  /** Queued runs of one remote owner in the ledger's queue; beyond it, 429. */
  owner_queued_runs: z.number().int().nonnegative().max(100_000).default(20),
  /**
   * Live (queued or running) dispatch tasks of one remote owner on every host sharing the
   * ledger; beyond it, 429.
   */
  owner_live_tasks: z.number().int().positive().max(1024).default(8),
  /** Open event streams of one remote owner in one host; beyond it, 429. */
  owner_event_streams: z.number().int().positive().max(1024).default(16),
  /** The longest run timeout a remote caller may ask for, in seconds (and what it gets without one). */
  max_remote_timeout_s: z.number().int().positive().max(7 * 24 * 3600).default(6 * 3600),
  /** The `Retry-After` of a refusal, in seconds. */
  retry_after_s: z.number().int().positive().max(3600).default(30),
  /** The most `agent()` calls a script's meta or a run's options may raise a run to. */
  max_run_agents: z.number().int().positive().max(MAX_AGENTS_LIMIT).default(MAX_AGENTS_LIMIT),
  /** The most simultaneous calls a script's meta or a run's options may raise a run to. */
  max_run_concurrency: z.number().int().positive().max(CONCURRENCY_LIMIT).default(
    RUN_CONCURRENCY_CEILING,
  ),
}).default({
  host_live_guests: 32,
  host_queued_runs: 200,
  owner_live_runs: 16,
  owner_queued_runs: 20,
  owner_live_tasks: 8,
  owner_event_streams: 16,
  max_remote_timeout_s: 6 * 3600,
  retry_after_s: 30,
  max_run_agents: MAX_AGENTS_LIMIT,
  max_run_concurrency: RUN_CONCURRENCY_CEILING,
});

/** Admission control's settings (docs/SECURITY.md, "Capacity"). */
export interface AdmissionConfig {
  /** Runs executing in one host process at once (every caller's); more queue. Default 32. */
  host_live_guests: number;
  /** Runs in the queue, every owner's together; beyond it, 429. Default 200. */
  host_queued_runs: number;
  /** Live runs of one remote owner on every host sharing the ledger; more queue. Default 16. */
  owner_live_runs: number;
  /** Queued runs of one remote owner; beyond it, 429. Default 20. */
  owner_queued_runs: number;
  /** Live dispatch tasks of one remote owner on every host sharing the ledger; beyond it, 429. Default 8. */
  owner_live_tasks: number;
  /** Open event streams of one remote owner in one host; beyond it, 429. Default 16. */
  owner_event_streams: number;
  /** The longest run timeout a remote caller may ask for, in seconds. Default 21600 (6 h). */
  max_remote_timeout_s: number;
  /** The `Retry-After` of a refusal, in seconds. Default 30. */
  retry_after_s: number;
  /**
   * The operator's ceiling of a run's `agent()` calls: a script's `meta.maxAgents` or a run's
   * `max_agents` above it is clamped to it. Default 1000 (Claude Code's own limit).
   */
  max_run_agents: number;
  /**
   * The operator's ceiling of a run's simultaneous calls: a script's `meta.concurrency` or a
   * run's `concurrency` above it is clamped to it. Default 64 (what a run could always ask for).
   */
  max_run_concurrency: number;
}
type _AdmissionConfigMatches = Assert<SameType<AdmissionConfig, z.infer<typeof admissionSchema>>>;

/** Validates the `admission` section, defaults filled in. */
export const AdmissionConfigSchema: Schema<AdmissionConfig> = admissionSchema;

/** A named profile: fixes provider and model (and so protocol and harness) at once. */
export const ProfileSchema = z.strictObject({
  provider: name,
  model: z.string().min(1).optional(),
  sandbox: z.enum(["read-only", "write", "full"]).optional(),
});

/** A directory of a workspace root: absolute, without `..` or control characters. */
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const rootPath = z.string().max(4096).refine(
  (path) => path.startsWith("/") && !CONTROL.test(path) && !path.split("/").includes(".."),
  "must be an absolute path without '..' or control characters",
);

/** Default of `progress.call_bytes`: the live output one call records (redacted, bounded). */
export const PROGRESS_CALL_BYTES = 64 * 1024;

const configSchema = z.strictObject({
  providers: z.record(name, ProviderConfigSchema).default({}),
  /** The live output of calls: how much of it the ledger keeps per call. */
  progress: z.strictObject({
    call_bytes: z.number().int().min(0).max(16 * 1024 * 1024).default(PROGRESS_CALL_BYTES),
  }).default({ call_bytes: PROGRESS_CALL_BYTES }),
  daemon: DaemonConfigSchema,
  admission: admissionSchema,
  automations: z.record(name.max(64), AutomationConfigSchema).default({}),
  webhooks: z.record(name.max(64), WebhookConfigSchema).default({}),
  notifications: NotificationsConfigSchema,
  /** Per owner: the directories its remote requests may name as workdirs. */
  workspaces: z.record(z.string().min(1).max(128), z.array(rootPath).max(64)).default({}),
  profiles: z.record(name, ProfileSchema).default({}),
  routing: z.strictObject({
    /** Providers `auto` tries first, in order. */
    prefer: z.array(name).default([]),
    /** Per tag: the providers to route it to, in order. */
    tags: z.record(z.string(), z.array(name)).default({}),
    /** Per effort: the providers to route it to, in order. */
    effort: z.partialRecord(EffortSchema, z.array(name)).default({}),
  }).default({ prefer: [], tags: {}, effort: {} }),
  sandbox: z.strictObject({
    /** Whether `full` is never granted, granted, or granted once a person approves the call. */
    full: z.enum(["deny", "allow", "ask"]).optional(),
    /** The older spelling: `true` is `full: "allow"`, `false` is `full: "deny"`. */
    allow_full: z.boolean().optional(),
  }).default({}).transform((sandbox, ctx): { full: FullSandboxPolicy } => {
    const older = sandbox.allow_full === undefined
      ? undefined
      : sandbox.allow_full
      ? "allow"
      : "deny";
    if (older !== undefined && sandbox.full !== undefined && older !== sandbox.full) {
      ctx.addIssue({
        code: "custom",
        path: ["allow_full"],
        message:
          `is the older spelling of sandbox.full and says '${older}', but sandbox.full says '${sandbox.full}': keep only sandbox.full`,
      });
      return z.NEVER;
    }
    return { full: sandbox.full ?? older ?? "deny" };
  }),
}).superRefine((config, ctx) => {
  const known = new Set(["fake", ...Object.keys(config.providers)]);
  for (const [profile, value] of Object.entries(config.profiles)) {
    if (!known.has(value.provider)) {
      ctx.addIssue({
        code: "custom",
        path: ["profiles", profile, "provider"],
        message: `names no configured provider ('${value.provider}')`,
      });
    }
  }
  const lists: Array<[PropertyKey[], string[]]> = [
    [["routing", "prefer"], config.routing.prefer],
    ...Object.entries(config.routing.tags).map((
      [tag, list],
    ): [PropertyKey[], string[]] => [["routing", "tags", tag], list]),
    ...Object.entries(config.routing.effort).map((
      [effort, list],
    ): [PropertyKey[], string[]] => [["routing", "effort", effort], list ?? []]),
  ];
  for (const [path, list] of lists) {
    list.forEach((provider, i) => {
      if (!known.has(provider)) {
        ctx.addIssue({
          code: "custom",
          path: [...path, i],
          message: `names no configured provider ('${provider}')`,
        });
      }
    });
  }
});

/** A named profile: fixes provider and model (and so protocol and harness) at once. */
export interface ProfileConfig {
  /** The configured provider (or `fake`) the profile calls. */
  provider: string;
  /** The model it asks for. */
  model?: string;
  /** The sandbox level of its calls. */
  sandbox?: "read-only" | "write" | "full";
}

/**
 * The validated configuration (`$SVC_HOME/config.json`, or the file `SVC_CONFIG` names), with
 * defaults filled in. Without a file, only the `fake` provider exists.
 */
export interface Config {
  /** The providers by name. */
  providers: Record<string, ProviderConfig>;
  /** The live output of calls (`progress` run events). */
  progress: {
    /**
     * Bytes of progress (as JSON) the ledger records per call; past it one `truncated` item,
     * nothing more; 0 records none. Default 65536.
     */
    call_bytes: number;
  };
  /** Named profiles. */
  profiles: Record<string, ProfileConfig>;
  /** Which providers `auto` routing tries, in order. */
  routing: {
    /** Providers `auto` tries first, in order. */
    prefer: string[];
    /** Per tag: the providers to route it to, in order. */
    tags: Record<string, string[]>;
    /** Per effort: the providers to route it to, in order. */
    effort: { [E in Effort]?: string[] };
  };
  /** The daemon: how much queued work it takes at once, the scheduler. */
  daemon: {
    /** Queued runs and tasks one daemon works on at once. Default 4. */
    concurrency: number;
    /** Whether this host's daemons run the scheduler. Default true. */
    scheduler: boolean;
    /** A missed slot younger than this many seconds fires once on return; 0: never. Default 3600. */
    catch_up_s: number;
    /** Most automations one owner may make through the API. Default 50. */
    automations_per_owner: number;
    /** Most automations made through the API, every owner's together. Default 1000. */
    automations_total: number;
    /** Shortest gap between firings of an automation made over the API, in s. Default 60. */
    automation_min_interval_s: number;
  };
  /** Admission control: host-wide and per-owner caps, the longest remote timeout. */
  admission: AdmissionConfig;
  /** Automations by name: saved workflows or dispatches on a cron schedule. */
  automations: Record<string, AutomationConfig>;
  /** Webhooks by name, served by the daemon at `POST /webhooks/<name>`. */
  webhooks: Record<string, WebhookConfig>;
  /** Outbound delivery of owners' notifications to the operator's endpoints (by the daemon). */
  notifications: {
    /** Endpoints by name. */
    endpoints: Record<string, NotificationEndpointConfig>;
    /** Attempts of one delivery before it is given up. Default 8. */
    max_attempts: number;
    /** Seconds before the first retry; each next doubles, up to 600. Default 5. */
    first_retry_s: number;
    /** Seconds one attempt may take. Default 10. */
    timeout_s: number;
    /** Seconds after which a notification is no longer delivered. Default 86400. */
    max_age_s: number;
  };
  /**
   * Per owner: the absolute directories (workspace roots) its remote callers (dashboard API,
   * MCP, A2A) may name as workdirs. An owner without roots works in fresh scratch directories.
   */
  workspaces: Record<string, string[]>;
  /** What sandbox levels may be granted. */
  sandbox: {
    /**
     * `full` is clamped to `write` (`deny`, the default), granted (`allow`), or granted once a
     * person approves the call (`ask`). The file may also say `allow_full: true|false`, the
     * older spelling of `allow` and `deny`.
     */
    full: FullSandboxPolicy;
  };
}
type _ConfigMatches = Assert<SameType<Config, z.infer<typeof configSchema>>>;

/**
 * Validates a configuration file's contents: unknown fields, bad values and names of providers
 * that are not configured are refused, defaults filled in.
 */
export const ConfigSchema: Schema<Config> = configSchema;

import { z } from "zod";
import { EffortSchema } from "../schemas/mod.ts";

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
};

/** One provider of the configuration file; `type` says which kind. */
export const ProviderConfigSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("fake"),
    ...common,
    latency_ms: z.number().nonnegative().optional(),
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
    /** Turn `effort` into an extended-thinking budget (default true). */
    thinking: z.boolean().optional(),
  }),
]);

/** A configured provider. */
export type ProviderConfig = z.infer<typeof ProviderConfigSchema>;

/** A named profile: fixes provider and model (and so protocol and harness) at once. */
export const ProfileSchema = z.strictObject({
  provider: name,
  model: z.string().min(1).optional(),
  sandbox: z.enum(["read-only", "write", "full"]).optional(),
});

/**
 * The configuration file (`$SVC_HOME/config.json`, or the file `SVC_CONFIG` names). Without
 * one, only the `fake` provider exists.
 */
export const ConfigSchema = z.strictObject({
  providers: z.record(name, ProviderConfigSchema).default({}),
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
    /** Whether `full` may be granted at all; otherwise it is clamped to `write`. */
    allow_full: z.boolean().default(false),
  }).default({ allow_full: false }),
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

/** The validated configuration. */
export type Config = z.infer<typeof ConfigSchema>;

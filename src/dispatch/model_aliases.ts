/**
 * Claude Code's model aliases (`haiku`, `sonnet`, `opus`): in a workflow script they mean Claude
 * models, so only a provider that serves Claude models may take a call that names one, each
 * with the model name it understands.
 * @module
 */
import type { Assert, SameType } from "../schemas/mod.ts";

/** The aliases Claude Code's scripts use for its model tiers. */
export const CLAUDE_MODEL_ALIASES = ["haiku", "sonnet", "opus"] as const;
/** One of {@linkcode CLAUDE_MODEL_ALIASES}. */
export type ClaudeModelAlias = "haiku" | "sonnet" | "opus";
type _ClaudeModelAliasMatches = Assert<
  SameType<ClaudeModelAlias, typeof CLAUDE_MODEL_ALIASES[number]>
>;

/** What a provider passes for each alias it serves; an alias it does not name, it does not serve. */
export type ModelAliases = Readonly<Partial<Record<ClaudeModelAlias, string>>>;

/** Claude Code understands the aliases itself: they pass unchanged. */
export const NATIVE_CLAUDE_ALIASES: ModelAliases = {
  haiku: "haiku",
  sonnet: "sonnet",
  opus: "opus",
};

/**
 * The model ids the Anthropic API gets for the aliases unless the configuration names others
 * (`providers.<name>.model_aliases`): the API takes no tier names, only model ids.
 */
export const ANTHROPIC_MODEL_ALIASES: ModelAliases = {
  haiku: "claude-haiku-4-5",
  sonnet: "claude-sonnet-4-5",
  opus: "claude-opus-4-5",
};

/** Whether `model` is one of Claude Code's aliases. */
export function isClaudeAlias(model: string | null | undefined): model is ClaudeModelAlias {
  return (CLAUDE_MODEL_ALIASES as readonly (string | null | undefined)[]).includes(model);
}

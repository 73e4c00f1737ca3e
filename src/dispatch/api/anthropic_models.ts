/**
 * What an Anthropic Messages request may ask of a model, by the model's name: which kind of
 * thinking it takes, and whether it must be streamed. Rules taken from Claude Code 2.1.332 and
 * `@anthropic-ai/sdk` 1.13.0, so that svc sends what they send and never what they refuse.
 * @module
 */

/** How a request asks for thinking: adaptive (`output_config.effort`) or a manual budget. */
export type AnthropicThinkingType = "adaptive" | "enabled";

/**
 * The models that take only manual extended thinking (`{type: "enabled", budget_tokens}`):
 * Claude Code's list of models without adaptive thinking. Every other model gets adaptive
 * thinking, as Claude Code sends it to current models.
 */
const BUDGET_ONLY_MODELS = new Set([
  "claude-opus-4",
  "claude-opus-4-0",
  "claude-opus-4-1",
  "claude-opus-4-5",
  "claude-sonnet-4",
  "claude-sonnet-4-0",
  "claude-sonnet-4-5",
  "claude-haiku-4-5",
]);

/**
 * A model id reduced to its family name: from `claude-` on, without a cloud's version suffix
 * (`@20250805`, `-v1:0`) or a date (`-20251001`), lower case; the id itself when it names no
 * Claude model (a gateway's own name).
 */
export function canonicalModel(model: string): string {
  const lower = model.toLowerCase();
  const at = lower.indexOf("claude-");
  if (at === -1) return lower;
  return lower.slice(at).replace(/@.*$/, "").replace(/-v\d+(:\d+)?$/, "").replace(/-\d{8}$/, "");
}

/**
 * The thinking a model takes: `enabled` (a budget) for the Claude 3 models and the 4.0, 4.1 and
 * 4.5 generations, `adaptive` for every other name, current models and gateways' names included.
 */
export function anthropicThinkingType(model: string): AnthropicThinkingType {
  const name = canonicalModel(model);
  if (/^claude-(instant|2|3)([.-]|$)/.test(name)) return "enabled";
  return BUDGET_ONLY_MODELS.has(name) ? "enabled" : "adaptive";
}

/**
 * `max_tokens` above which a request must stream: the SDK expects an answer to take up to an hour
 * per 128 000 tokens (`calculateNonstreamingTimeout`: 60 min × max_tokens / 128 000) and refuses
 * to send unstreamed what may run past its 10-minute timeout, i.e. more than 21 333 tokens.
 */
export const MAX_NONSTREAMING_TOKENS = Math.floor((10 * 128_000) / 60);

/** Lower limits for some models (the SDK's `MODEL_NONSTREAMING_TOKENS`: Opus 4 and 4.1 on clouds). */
const MODEL_NONSTREAMING_TOKENS: Readonly<Record<string, number>> = {
  "claude-opus-4@20250514": 8192,
  "anthropic.claude-opus-4-1-20250805-v1:0": 8192,
  "claude-opus-4-1@20250805": 8192,
};

/** Whether a request of `maxTokens` to `model` must stream: the SDK refuses it unstreamed. */
export function mustStream(model: string, maxTokens: number): boolean {
  const limit = Math.min(MAX_NONSTREAMING_TOKENS, MODEL_NONSTREAMING_TOKENS[model] ?? Infinity);
  return maxTokens > limit;
}

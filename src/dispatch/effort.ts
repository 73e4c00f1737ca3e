/**
 * How each provider reads a call's `effort` (Claude Code's five levels): its own reasoning
 * setting where it has one. One table per provider, so that docs/PROVIDERS.md ("Effort") and
 * the code say the same.
 * @module
 */
import type { Effort } from "../schemas/mod.ts";

/**
 * Codex's `model_reasoning_effort` (`-c model_reasoning_effort="..."`): Codex has no `max`, so
 * `max` asks for its highest, `xhigh`. A model without `xhigh` refuses it, loudly.
 */
export const CODEX_REASONING_EFFORT: Record<Effort, string> = {
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "xhigh",
  max: "xhigh",
};

/**
 * `reasoning_effort` of an OpenAI-compatible request: `low`, `medium` and `high` are what every
 * reasoning model and gateway takes, so `xhigh` and `max` ask for `high`.
 */
export const OPENAI_REASONING_EFFORT: Record<Effort, string> = {
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "high",
  max: "high",
};

/**
 * The extended-thinking budget (`thinking.budget_tokens`) of an Anthropic Messages request;
 * `low` asks for no extended thinking (the cheapest call). `max_tokens` grows by the budget,
 * which must stay below it.
 */
export const ANTHROPIC_THINKING_BUDGET: Record<Effort, number | null> = {
  low: null,
  medium: 2048,
  high: 8192,
  xhigh: 16384,
  max: 32768,
};

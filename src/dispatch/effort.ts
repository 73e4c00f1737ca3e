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
 * `reasoning_effort` of an OpenAI-compatible request: the level as it is. The API takes all five
 * (`openai` 7.57's `ReasoningEffort`: `none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`);
 * a model or gateway without a level refuses it, loudly, rather than getting a lower one.
 */
export const OPENAI_REASONING_EFFORT: Record<Effort, string> = {
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "xhigh",
  max: "max",
};

/**
 * The thinking tokens of an Anthropic Messages request, added to `max_tokens` so that the answer
 * keeps its own share (thinking counts toward `max_tokens`). With manual extended thinking
 * (`thinking: {type: "enabled"}`) it is also `budget_tokens`, and `low` asks for no thinking (the
 * cheapest call); with adaptive thinking it is the room the model may think in.
 */
export const ANTHROPIC_THINKING_BUDGET: Record<Effort, number | null> = {
  low: null,
  medium: 2048,
  high: 8192,
  xhigh: 16384,
  max: 32768,
};

/**
 * Model API providers: OpenAI-compatible chat completions and Anthropic Messages, over HTTP
 * with retries (docs/API_PROVIDERS.md).
 * @module
 */
export { anthropicProvider } from "./anthropic.ts";
export type { AnthropicOptions } from "./anthropic.ts";
export type { AnthropicThinkingType } from "./anthropic_models.ts";
export type { ApiClientOptions } from "./http.ts";
export { openaiCompatibleProvider } from "./openai_compatible.ts";
export type { OpenAICompatibleOptions } from "./openai_compatible.ts";
export { A2A_USAGE_KEY, a2aAgentProvider, usageOfReply } from "./a2a_agent.ts";
export type { A2aAgentOptions } from "./a2a_agent.ts";

/**
 * Dispatch: the one way a call reaches a provider.
 * @module
 */
export { anthropicProvider, openaiCompatibleProvider } from "./api/mod.ts";
export type { AnthropicOptions, ApiClientOptions, OpenAICompatibleOptions } from "./api/mod.ts";
export { createDispatcher } from "./dispatcher.ts";
export type { Dispatcher, DispatcherOptions } from "./dispatcher.ts";
export { createFakeProvider } from "./fake.ts";
export type { FakeProviderOptions } from "./fake.ts";
export { schemaInstance } from "./schema_instance.ts";
export type {
  Availability,
  ChatMessage,
  DispatchRequest,
  DispatchResult,
  Provider,
  Usage,
} from "./types.ts";

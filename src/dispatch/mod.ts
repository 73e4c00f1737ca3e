/**
 * Dispatch: the one way a call reaches a provider.
 * @module
 */
export { createDispatcher } from "./dispatcher.ts";
export type { Dispatcher, DispatcherOptions } from "./dispatcher.ts";
export { createFakeProvider } from "./fake.ts";
export type { FakeProviderOptions } from "./fake.ts";
export {
  claudeProvider,
  codexProvider,
  createHarnessProvider,
  DEFAULT_HARNESS_TIMEOUT_MS,
  geminiProvider,
  opencodeProvider,
} from "./harness/mod.ts";
export type { HarnessOptions, HarnessTool } from "./harness/mod.ts";
export { schemaInstance } from "./schema_instance.ts";
export type {
  Availability,
  ChatMessage,
  DispatchRequest,
  DispatchResult,
  Provider,
  Usage,
} from "./types.ts";

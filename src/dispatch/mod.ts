/**
 * Dispatch: the one way a call reaches a provider. Routing, admission (the sandbox kernel and
 * provider availability), pricing, the providers themselves (APIs, harnesses, the fake) and the
 * call history read back from the ledger.
 *
 * `structuredStep` stays here rather than in `src/structured/`: it is a dispatch with its retries
 * (it throws and sums {@linkcode ProviderError}s), and the fake provider already needs structured
 * output below it, so the step above would close a circle.
 *
 * Layer: below the engine and tasks, above structured output, worktrees and the ledger.
 * @module
 */
export {
  A2A_USAGE_KEY,
  a2aAgentProvider,
  anthropicProvider,
  openaiCompatibleProvider,
  usageOfReply,
} from "./api/mod.ts";
export type {
  A2aAgentOptions,
  AnthropicOptions,
  AnthropicThinkingType,
  ApiClientOptions,
  OpenAICompatibleOptions,
} from "./api/mod.ts";
export { createDispatcher, ProviderError, UnpricedCallError } from "./dispatcher.ts";
export type {
  DispatchContext,
  Dispatcher,
  DispatcherOptions,
  DispatchInput,
  DispatchOutcome,
  ProviderStatus,
} from "./dispatcher.ts";
export { AvailabilityTracker } from "./availability.ts";
export type { AvailabilityOptions } from "./availability.ts";
export { admitSandbox } from "./kernel.ts";
export type { SandboxAdmission } from "./kernel.ts";
export { chooseRoute } from "./router.ts";
export type { RouteCandidate, RouteDecision } from "./router.ts";
export { createFakeProvider } from "./fake.ts";
export {
  ANTHROPIC_MODEL_ALIASES,
  CLAUDE_MODEL_ALIASES,
  type ClaudeModelAlias,
  isClaudeAlias,
  type ModelAliases,
  NATIVE_CLAUDE_ALIASES,
} from "./model_aliases.ts";
export type { FakeProviderOptions } from "./fake.ts";
export {
  claudeProvider,
  codexProvider,
  createHarnessProvider,
  DEFAULT_HARNESS_TIMEOUT_MS,
  geminiProvider,
  HARNESS_BASE_ENV,
  HARNESS_KEY_ENV,
  opencodeProvider,
} from "./harness/mod.ts";
export type { HarnessOptions, HarnessTool } from "./harness/mod.ts";
export { SpentFailure } from "./types.ts";
export type {
  Availability,
  ChatMessage,
  DispatchRequest,
  DispatchResult,
  ProbeRequest,
  Provider,
  Usage,
} from "./types.ts";
export { StopReason, type StopState } from "./stop.ts";
export { dispatcherFromConfig, hasHarnessProvider, providerFromConfig } from "./from_config.ts";
export { type SwappableDispatcher, swappableDispatcher } from "./swappable.ts";
export { dispatchHistory, summarizeCalls } from "./history.ts";
export {
  addCall,
  callKind,
  callRow,
  emptyTally,
  NO_PROVIDER_ROW,
  REPLAYED_ROW,
  roundUsd,
  tallyCalls,
} from "./call_counts.ts";
export type { CallKind, CallTally } from "./call_counts.ts";
export type { DayStats, ProviderStats, UsageSummary } from "./history.ts";
export { stepCost, structuredStep } from "./structured_step.ts";
export type { StepResult, StepSpent, StructuredStepOptions } from "./structured_step.ts";
export {
  type Capabilities,
  type CapabilitiesOptions,
  CAPABILITY_DEADLINE_MS,
  createCapabilities,
  ENDPOINT_TIMEOUT_MS,
} from "./capabilities.ts";
export { remoteCapabilityReport, remoteProviderStatus, withoutHostPaths } from "./remote_view.ts";
export {
  type ProgressChannel,
  progressChannel,
  type ProgressChannelOptions,
  type ProgressListener,
} from "./progress.ts";
export {
  DEFAULT_PROGRESS_BYTES,
  PROGRESS_INTERVAL_MS,
  ProgressRecorder,
  type ProgressRecorderOptions,
  relayProgress,
} from "./progress_recorder.ts";
export { redactSecrets } from "./redaction.ts";

/**
 * Dispatch: the one way a call reaches a provider.
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
  AGENT_TYPE_LIMITS,
  type AgentDefinition,
  type AgentFolder,
  agentFolders,
  AgentTypeRegistry,
  applyAgentType,
  BUILT_IN_AGENT_TYPES,
  parseAgentFile,
  WRITING_TOOLS,
} from "./agent_types.ts";
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
export { INSTANCE_LIMITS, schemaInstance } from "./schema_instance.ts";
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
export { SessionStore } from "./sessions.ts";
export type { SessionDetail } from "./sessions.ts";
export { StopReason, type StopState } from "./stop.ts";
export { TaskManager } from "./tasks.ts";
export type { TaskManagerOptions } from "./tasks.ts";
export { dispatcherFromConfig, providerFromConfig } from "./from_config.ts";
export { dispatchHistory, summarizeCalls } from "./history.ts";
export type { DayStats, ProviderStats, UsageSummary } from "./history.ts";
export { WorktreeManager } from "./worktrees.ts";
export { type GitPlace, type GitResult, safeGit } from "./safe_git.ts";
export type { StaleWorktree, Worktree, WorktreeResult } from "./worktrees.ts";
export {
  PATTERN_LIMITS,
  SCHEMA_LIMITS,
  SchemaError,
  type SchemaFolder,
  SchemaRegistry,
  schemaRegistryFor,
  structuredValue,
  VALIDATION_LIMITS,
} from "./structured_output.ts";
export { SUBSCHEMA_KEYWORDS } from "./schema_limits.ts";
export type { CompiledSchema } from "./structured_output.ts";
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

/**
 * The library API of svc: open the services of a data directory (`openServices`), start and
 * follow workflow runs, dispatch calls, check scripts. Runtime-neutral: under Node, import the npm package's entry (`src/node.ts`), which
 * installs the Node platform first.
 * @module
 */
export { ConfigSchema, defaultConfig, loadConfig, svcHome } from "./config/mod.ts";
export type { Config, ProviderConfig } from "./config/mod.ts";
export {
  anthropicProvider,
  claudeProvider,
  codexProvider,
  createDispatcher,
  createFakeProvider,
  dispatcherFromConfig,
  dispatchHistory,
  geminiProvider,
  openaiCompatibleProvider,
  opencodeProvider,
  ProviderError,
  schemaInstance,
  SessionStore,
  TaskManager,
  WorktreeManager,
} from "./dispatch/mod.ts";
export type {
  Availability,
  Dispatcher,
  DispatcherOptions,
  DispatchOutcome,
  DispatchRequest,
  DispatchResult,
  FakeProviderOptions,
  HarnessOptions,
  Provider,
  ProviderStatus,
  Usage,
  UsageSummary,
} from "./dispatch/mod.ts";
export { checkScript, isTerminal, RunManager, TERMINAL_STATES } from "./engine/mod.ts";
export type {
  CallCounts,
  CheckedScript,
  NarrationEntry,
  RunCondition,
  RunError,
  RunEvent,
  RunEventsOptions,
  RunManagerOptions,
  RunState,
  RunStatus,
  ScriptMeta,
  SecurityEvent,
  UsageTotals,
} from "./engine/mod.ts";
export { SvcError, toSvcError } from "./errors/mod.ts";
export { callerOf, HostLease, openLedger } from "./ledger/mod.ts";
export type {
  Caller,
  EventStream,
  FeedItem,
  JournalEntry,
  JournalSummary,
  Ledger,
  TaskEvent,
  TaskState,
  TaskStatus,
} from "./ledger/mod.ts";
export { EventFeed, openServices } from "./services/mod.ts";
export type { FeedFollowOptions, RunSettings, Services, ServicesOptions } from "./services/mod.ts";
export type { ErrorCode } from "./errors/mod.ts";
export {
  createMicrovmBackend,
  createUnsafeLocalBackend,
  defaultIsolationBackends,
} from "./isolation/mod.ts";
export type {
  GuestHandle,
  GuestSpawnRequest,
  IsolationBackend,
  IsolationBackends,
  UnsafeLocalOptions,
} from "./isolation/mod.ts";
export { platform, setPlatform } from "./platform/mod.ts";
export type {
  ChildProcess,
  ExitStatus,
  FileInfo,
  HttpServer,
  Platform,
  ServeOptions,
  SpawnOptions,
} from "./platform/mod.ts";
export { WorkflowRunRequestSchema } from "./schemas/mod.ts";
export type { JsonValue, WorkflowRunRequest } from "./schemas/mod.ts";

/**
 * The library API of svc: open the services of a data directory (`openServices`), start and
 * follow workflow runs, dispatch calls, check scripts. Runtime-neutral: under Node, import the npm package's entry (`src/node.ts`), which
 * installs the Node platform first.
 * @module
 */
export { Board, openBoard } from "./board/mod.ts";
export type {
  BoardAction,
  BoardCard,
  BoardChange,
  BoardChangesOptions,
  BoardListOptions,
  BoardListResult,
  BoardLogEntry,
  BoardMode,
  BoardRunLink,
  BoardWriteRequest,
  BoardWriteResult,
  CardState,
  OpenBoardOptions,
} from "./board/mod.ts";
export { ApprovalQueue } from "./approvals/mod.ts";
export type {
  ApprovalAction,
  ApprovalDecideOptions,
  ApprovalListOptions,
} from "./approvals/mod.ts";
export { ConfigSchema, defaultConfig, loadConfig, svcHome } from "./config/mod.ts";
export type {
  A2aProviderConfig,
  AdmissionConfig,
  AnthropicProviderConfig,
  Config,
  FakeProviderConfig,
  FullSandboxPolicy,
  HarnessProviderConfig,
  HarnessType,
  LoadedConfig,
  NotificationEndpointConfig,
  OpenAIProviderConfig,
  PriceConfig,
  ProfileConfig,
  ProviderConfig,
  ProviderSettings,
  WebhookConfig,
} from "./config/mod.ts";
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
} from "./dispatch/mod.ts";
export { schemaInstance } from "./structured/mod.ts";
export { SessionStore, TaskManager } from "./tasks/mod.ts";
export type { TurnContext } from "./tasks/mod.ts";
export { WorktreeManager } from "./worktrees/mod.ts";
export type {
  AnthropicOptions,
  AnthropicThinkingType,
  ApiClientOptions,
  Availability,
  AvailabilityOptions,
  Capabilities,
  CapabilitiesOptions,
  ChatMessage,
  ClaudeModelAlias,
  DayStats,
  DispatchContext,
  Dispatcher,
  DispatcherOptions,
  DispatchInput,
  DispatchOutcome,
  DispatchRequest,
  DispatchResult,
  FakeProviderOptions,
  HarnessOptions,
  ModelAliases,
  OpenAICompatibleOptions,
  ProbeRequest,
  ProgressListener,
  Provider,
  ProviderStats,
  ProviderStatus,
  RouteDecision,
  SandboxAdmission,
  Usage,
  UsageSummary,
} from "./dispatch/mod.ts";
export type { SessionDetail } from "./tasks/mod.ts";
export type { StaleWorktree, Worktree, WorktreeResult } from "./worktrees/mod.ts";
export { checkScript, isTerminal, RunManager, TERMINAL_STATES } from "./engine/mod.ts";
export {
  type AdmissionReads,
  DEFAULT_RUN_ADMISSION,
  fairOrder,
  type Placement,
  RunAdmission,
  type RunAdmissionLimits,
  type RunAdmissionSnapshot,
} from "./engine/mod.ts";
export type {
  CallCounts,
  CheckedScript,
  MetaPhase,
  NarrationEntry,
  RunCondition,
  RunError,
  RunEvent,
  RunEventsOptions,
  RunManagerLedger,
  RunManagerOptions,
  RunState,
  RunStatus,
  ScriptMeta,
  SecurityEvent,
  UsageTotals,
} from "./engine/mod.ts";
export { SvcError, toSvcError } from "./errors/mod.ts";
export {
  LEGACY_CHAIN_JSON_SCHEMA,
  LEGACY_DEPRECATION,
  legacyRunRequest,
  legacyToScript,
  parseLegacyChain,
} from "./legacy/mod.ts";
export type {
  LegacyChain,
  LegacyRunRequest,
  LegacyRunRequestOptions,
  LegacyStep,
  LegacyWorkflowBody,
  ParseLegacyChainOptions,
} from "./legacy/mod.ts";
export { callCursor, callerOf, HostLease, openLedger } from "./ledger/mod.ts";
export type {
  A2aTaskLedger,
  A2aTaskListOptions,
  A2aTaskPage,
  A2aTaskRecord,
  ActiveRunCounts,
  ActivityItem,
  ApprovalDecided,
  ApprovalDecision,
  ApprovalLedger,
  ApprovalRecord,
  ApprovalState,
  AutomationAction,
  AutomationQuota,
  AutomationRecord,
  AutomationRefusal,
  BudgetAxis,
  BudgetFigures,
  Caller,
  CallLedger,
  CallOutcome,
  CallRecord,
  ClaimOutcome,
  CollaborationLedger,
  CollaborationRecord,
  CollaborationState,
  DaemonLedger,
  EventStream,
  FailureCause,
  FailureCounts,
  FeedItem,
  FeedLedger,
  FiredSlot,
  GuestSandbox,
  HostInfo,
  HostLedger,
  HostRef,
  JournalEntry,
  JournalSummary,
  LeaseState,
  Ledger,
  LedgerCore,
  LedgerOp,
  ListApprovalsOptions,
  ListNotificationsOptions,
  ListOptions,
  ListRunsOptions,
  MarkRead,
  NotificationDelivery,
  NotificationKind,
  NotificationLedger,
  NotificationPage,
  NotificationRecord,
  NotificationView,
  OpenLedgerOptions,
  Page,
  PageOptions,
  QueueItem,
  QueueLedger,
  ReviewLedger,
  ReviewRecord,
  RunEventAt,
  RunInput,
  RunLedger,
  ScriptErrorRecord,
  SessionLedger,
  SessionRecord,
  StartedBy,
  StartSurface,
  TaskApprovalNote,
  TaskEvent,
  TaskLedger,
  TaskState,
  TaskStatus,
  WebhookDelivery,
  WorkTrigger,
} from "./ledger/mod.ts";
export { CollaborationLog } from "./collaborations/mod.ts";
export type { CollaborationInput, CollaborationUpdate } from "./collaborations/mod.ts";
export { MemorySearch } from "./memory/mod.ts";
export type {
  CardSource,
  MemoryCard,
  MemoryHit,
  MemoryKind,
  MemorySearchOptions,
  MemorySearchRequest,
} from "./memory/mod.ts";
export { ReviewService } from "./reviews/mod.ts";
export {
  type WorkdirOptions,
  type WorkspaceCaller,
  WorkspacePolicy,
  type WorkspacePolicyOptions,
} from "./workspace/mod.ts";
export type {
  Finding,
  ReviewDetail,
  ReviewServiceOptions,
  ReviewStartRequest,
  ReviewSummary,
} from "./reviews/mod.ts";
export { daemonAlive, EventFeed, openServices, submitRun, submitTask } from "./services/mod.ts";
export { Admission, type AdmissionSnapshot } from "./services/mod.ts";
export { RunGraph } from "./services/mod.ts";
export type { DagNode, DagNodeKind, DagState, RunDag } from "./schemas/mod.ts";
export {
  type PulseLedger,
  type PulseOptions,
  PulseService,
  type PulseSources,
} from "./services/mod.ts";
export type { Pulse, PulseFailure, PulseProvider, PulseSpend, PulseWork } from "./schemas/mod.ts";
export type { CallsReplayedEvent, ReplayedCallNote } from "./schemas/mod.ts";
export {
  type AdmittedStream,
  type FeedOpening,
  type FeedOpenOptions,
  type GeneralItem,
  type GeneralOptions,
  type StreamPositions,
  Streams,
  type StreamsOptions,
} from "./services/mod.ts";
export { type NotificationListOptions, Notifications } from "./services/mod.ts";
export {
  ConfigReload,
  type ConfigReloadOptions,
  type ConfigReloadOutcome,
  type ReloadTrigger,
} from "./services/mod.ts";
export type { ConfigState } from "./schemas/mod.ts";
export { Automations, type AutomationView } from "./automations/mod.ts";
export type { AutomationConfig, AutomationConfigFields, AutomationRequest } from "./schemas/mod.ts";
export type {
  FeedFollowOptions,
  RunSettings,
  Services,
  ServicesOptions,
  SpawnWorker,
  SubmitOptions,
} from "./services/mod.ts";
export type { ErrorCode } from "./errors/mod.ts";
export {
  createMicrovmBackend,
  createUnsafeLocalBackend,
  defaultIsolationBackends,
} from "./isolation/mod.ts";
export type {
  EnvReader,
  GuestHandle,
  GuestSpawnRequest,
  IsolationBackend,
  IsolationBackends,
  IsolationReport,
  MicrovmBackendName,
  MicrovmOptions,
  MicrovmSettings,
  QemuAccelSetting,
  UnsafeLocalOptions,
} from "./isolation/mod.ts";
export { MicrovmSlots } from "./isolation/mod.ts";
export {
  authSettingsFromEnv,
  DASHBOARD_HOST,
  DASHBOARD_PORT,
  dashboardApp,
  generateToken,
  serveDashboard,
} from "./http/mod.ts";
export type {
  ApiErrorBody,
  AuthSettings,
  DashboardApp,
  DashboardAppOptions,
  DashboardServer,
  ServeDashboardOptions,
  TokenBinding,
} from "./http/mod.ts";
export { mcpHttpHandler, serveMcpStdio } from "./mcp/mod.ts";
export type { McpHttpHandler, McpHttpOptions, McpStdioOptions } from "./mcp/mod.ts";
export { platform, setPlatform } from "./platform/mod.ts";
export type {
  ChildProcess,
  ExitStatus,
  FileIdentity,
  FileInfo,
  HttpServer,
  KvAtomic,
  KvCommitOptions,
  KvEntry,
  KvKey,
  KvKeyPart,
  KvStore,
  OpenFile,
  Platform,
  ServeOptions,
  SpawnOptions,
} from "./platform/mod.ts";
export {
  MAX_ARGS_BYTES,
  WorkflowResumeRequestSchema,
  WorkflowRunRequestSchema,
} from "./schemas/mod.ts";
export type {
  AgentOptions,
  CallEventsResult,
  CallProgress,
  CallProgressEvent,
  CapabilityReport,
  CredentialsCapability,
  Effort,
  IsolationTier,
  JsonValue,
  ProviderCapability,
  SandboxLevel,
  Schema,
  SchemaIssue,
  SchemaResult,
  ToolCapability,
  WorkflowResumeRequest,
  WorkflowRunRequest,
} from "./schemas/mod.ts";

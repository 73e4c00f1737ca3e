/**
 * The zod schemas of every request shape, shared by the command line, HTTP and the tool protocol.
 * @module
 */
export {
  type AgentCall,
  AgentCallSchema,
  type AgentOptions,
  AgentOptionsSchema,
  type Effort,
  EffortSchema,
  EstimateSchema,
  parseAgentCall,
  type ParsedAgentCall,
  sandboxAbove,
  type SandboxLevel,
  SandboxLevelSchema,
} from "./agent_options.ts";
export {
  bashCommandClampProblem,
  clampWithoutBashProblem,
  disallowedToolsProblem,
  NARROWING_LIMITS,
  notPlainDataMessage,
  parsePermissionRule,
} from "./narrowing.ts";
export {
  boundedJson,
  BoundedJsonSchema,
  jsonByteLength,
  jsonProblem,
  type JsonValue,
  MAX_JSON_DEPTH,
} from "./json.ts";
export {
  CONCURRENCY_LIMIT,
  DEFAULT_RUN_TIMEOUT_S,
  IsolationSchema,
  type IsolationTier,
  MAX_AGENTS_LIMIT,
  MAX_ARGS_BYTES,
  RUN_CONCURRENCY_CEILING,
  RUN_DESCRIPTION_LIMIT,
  RUN_TITLE_LIMIT,
  WorkflowResumeBodySchema,
  type WorkflowResumeRequest,
  WorkflowResumeRequestSchema,
  WorkflowRunBodySchema,
  type WorkflowRunRequest,
  WorkflowRunRequestSchema,
  WorkflowRunToolSchema,
} from "./workflow_run.ts";
export {
  DispatchRequestSchema,
  type DispatchTaskRequest,
  type SessionCreateRequest,
  SessionCreateSchema,
} from "./dispatch.ts";
export { SESSION_NAME_LIMIT, SessionNameSchema } from "./session_name.ts";
export {
  BOARD_ACTIONS,
  type BoardAction,
  BoardActionSchema,
  type BoardCard,
  BoardCardSchema,
  type BoardChange,
  BoardChangeSchema,
  type BoardListResult,
  BoardListResultSchema,
  type BoardLogEntry,
  BoardLogEntrySchema,
  type BoardMode,
  BoardModeSchema,
  type BoardRunLink,
  BoardRunLinkSchema,
  type BoardWriteRequest,
  BoardWriteRequestSchema,
  type BoardWriteResult,
  BoardWriteResultSchema,
  BoardWriteToolSchema,
  BY_LIMIT,
  CARD_NUMBER_DIGITS,
  CARD_STATES,
  type CardState,
  CardStateSchema,
  DESC_LIMIT,
  EVIDENCE_BYTES,
  isCardNumber,
  LABEL_LIMIT,
  LABELS_LIMIT,
  MESSAGE_LIMIT,
  NAME_LIMIT,
  NEXT_LIMIT,
  refuseBoardDir,
  TITLE_LIMIT,
} from "./board.ts";
export { describeIssue } from "./issues.ts";
export type { Assert, SameType } from "./same_type.ts";
export type { Schema, SchemaIssue, SchemaResult } from "./schema.ts";
export {
  AUTOMATION_ARGS_BYTES,
  type AutomationConfig,
  type AutomationConfigFields,
  AutomationConfigSchema,
  type AutomationRequest,
  AutomationRequestSchema,
  cronProblem,
} from "./automation.ts";
export {
  type CapabilityReport,
  CapabilityReportSchema,
  type CredentialsCapability,
  CredentialsCapabilitySchema,
  type ProviderCapability,
  ProviderCapabilitySchema,
  type ToolCapability,
  ToolCapabilitySchema,
} from "./capabilities.ts";
export {
  DAG_MAX_CALLS,
  type DagNode,
  type DagNodeKind,
  DagNodeKindSchema,
  DagNodeSchema,
  type DagState,
  DagStateSchema,
  type RunDag,
  RunDagSchema,
} from "./run_dag.ts";
export {
  type Pulse,
  PULSE_FAILURES,
  PULSE_MESSAGE_CHARS,
  type PulseFailure,
  type PulseProvider,
  PulseSchema,
  type PulseSpend,
  type PulseWork,
} from "./pulse.ts";
export {
  type CallEventsResult,
  CallEventsResultSchema,
  type CallProgress,
  type CallProgressEvent,
  CallProgressEventSchema,
  CallProgressSchema,
  PROGRESS_FIELD_LIMIT,
  PROGRESS_TEXT_LIMIT,
} from "./progress.ts";
export { MARK_READ_IDS, type MarkReadRequest, MarkReadRequestSchema } from "./notification.ts";
export { CONFIG_ERROR_CHARS, type ConfigState, ConfigStateSchema } from "./config_state.ts";
export {
  type CallsReplayedEvent,
  CallsReplayedEventSchema,
  REPLAYED_LABEL_CHARS,
  type ReplayedCallNote,
} from "./replayed_event.ts";

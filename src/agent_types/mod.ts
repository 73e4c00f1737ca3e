/**
 * Agent types: named agent definitions (`agent(prompt, {agentType})`, a task's `agent_type`)
 * read from `.claude/agents/` folders or built in, and applied to a call's options.
 *
 * Layer: beside the configuration, below the engine and tasks (both resolve agent types); it
 * imports only the platform, the shared schemas and the error table.
 * @module
 */
export {
  AGENT_TYPE_LIMITS,
  type AgentDefinition,
  type AgentFolder,
  agentFolders,
  agentTypeNarrowingProblem,
  AgentTypeRegistry,
  applyAgentType,
  BUILT_IN_AGENT_TYPES,
  parseAgentFile,
  WRITING_TOOLS,
} from "./agent_types.ts";

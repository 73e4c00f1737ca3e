/**
 * One `agent()` call of a run, as a pipeline of named stages: place, admit, replay or approve,
 * dispatch under permits, validate, record, reply. {@linkcode handleAgentCall} reads as that
 * sequence; each stage takes the call's state and returns the next.
 * @module
 */
export { handleAgentCall } from "./agent_call.ts";
export { recordReplayedCalls } from "./replay.ts";
export type { AgentCallDeps } from "./types.ts";

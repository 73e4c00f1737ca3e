/**
 * The agent-to-agent (A2A) server: `svc a2a-server` serves this host's dispatches and named
 * workflows to other agents over the A2A protocol (1.0, and 0.3 for older clients), on the
 * `@a2a-js/sdk` request handler with a task store in the ledger.
 * @module
 */
export { type A2aApp, a2aApp, type A2aAppOptions } from "./app.ts";
export { A2A_HOST, A2A_PORT, type A2aServer, serveA2a, type ServeA2aOptions } from "./serve.ts";
export { JSON_RPC_PATH, PROTOCOL_VERSION } from "./agent_card.ts";
export { ANSWER_LIMIT, COLLABORATION_KEY, RUN_ID_KEY, TASK_ID_KEY, USAGE_KEY } from "./executor.ts";
export {
  ARGS_KEY,
  ARGS_LIMIT,
  DESCRIPTION_KEY,
  FAKE_KEY,
  PROMPT_LIMIT,
  SCRIPT_PATH_KEY,
  TITLE_KEY,
  WORKFLOW_KEY,
} from "./message_input.ts";
export { BODY_LIMIT, DEPTH_LIMIT, PART_LIMIT, PARTS_LIMIT } from "./json_rpc.ts";
export { A2A_STATE_OF } from "./state_map.ts";
export { MAX_WORKFLOW_SKILLS, SKILL_TEXT_LIMIT } from "./workflow_skills.ts";

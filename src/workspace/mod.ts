/**
 * The workspace policy: which directories a remote caller (dashboard API, MCP, A2A, automations
 * such a caller made) may make the host work in. The command line keeps its free choice.
 * @module
 */
export {
  type WorkdirOptions,
  type WorkspaceCaller,
  WorkspacePolicy,
  type WorkspacePolicyOptions,
} from "./policy.ts";
export { within } from "./within.ts";

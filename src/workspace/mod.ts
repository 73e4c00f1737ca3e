/**
 * The workspace policy: which directories a remote caller (dashboard API, MCP, A2A, automations
 * such a caller made) may make the host work in. The command line keeps its free choice. And
 * the read of a checked file from one open handle, so that a swap after the check cannot win.
 * @module
 */
export {
  type WorkdirOptions,
  type WorkspaceCaller,
  WorkspacePolicy,
  type WorkspacePolicyOptions,
} from "./policy.ts";
export { within } from "./within.ts";
export { type CheckedReadOptions, readCheckedFile } from "./checked_read.ts";

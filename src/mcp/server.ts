/**
 * One tool-protocol server instance for one caller: the `McpServer` with svc's tools. The
 * transports build one per connection (stdio) or per request (HTTP), so the caller an instance
 * acts for never changes under it.
 * @module
 */
import { McpServer } from "@modelcontextprotocol/server";
import { VERSION } from "../version.ts";
import { registerTools, type ToolContext } from "./tools.ts";

/** What a client reads about svc when it connects. */
const INSTRUCTIONS = "svc dispatches work to coding agents. Start a workflow script with " +
  "svc_workflow (or one task with svc_dispatch); each returns a handle at once. Follow it " +
  "with svc_task_status (wait_seconds waits for the end), stop it with svc_task_cancel. " +
  "svc_board_write keeps the team's board.";

/** A server instance with svc's tools, acting for `context.caller`. */
export function svcMcpServer(context: ToolContext): McpServer {
  const server = new McpServer(
    { name: "svc", title: "svc", version: VERSION },
    { capabilities: { tools: {}, logging: {} }, instructions: INSTRUCTIONS },
  );
  registerTools(server, context);
  return server;
}

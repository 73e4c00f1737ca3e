/**
 * The tool-protocol (MCP) surface: svc's tools (`svc_workflow`, `svc_task_status`,
 * `svc_dispatch`, `svc_task_cancel`, `svc_board_write`, `svc_workflow_legacy`) over stdio
 * (`svc mcp`) and over Streamable HTTP (the dashboard's `/mcp`).
 * @module
 */
export { MAX_WAIT_SECONDS } from "./follow.ts";
export { type McpHttpHandler, mcpHttpHandler, type McpHttpOptions } from "./http.ts";
export {
  type HandleResult,
  HandleResultSchema,
  type StatusResult,
  StatusResultSchema,
} from "./results.ts";
export { svcMcpServer } from "./server.ts";
export { type McpStdioOptions, serveMcpStdio } from "./stdio.ts";
export type { ToolContext } from "./tools.ts";

/**
 * The tool protocol over standard input and output (`svc mcp`), for a coding agent that starts
 * svc as its MCP server. Standard output carries protocol frames and nothing else: the CLI sends
 * every other line to standard error before this starts.
 * @module
 */
import process from "node:process";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import type { Caller } from "../ledger/mod.ts";
import type { Services } from "../services/mod.ts";
import { svcMcpServer } from "./server.ts";

/** Options of {@linkcode serveMcpStdio}. */
export interface McpStdioOptions {
  /** Where internal errors are reported (standard error). Default: dropped. */
  logError?: (message: string) => void;
  /** Stops serving (the process is asked to stop). */
  signal?: AbortSignal;
}

/**
 * Serves svc's tools over this process's stdin and stdout as `caller` until the client closes
 * standard input (the stdio binding's signal to exit) or `signal` aborts.
 */
export async function serveMcpStdio(
  services: Services,
  caller: Caller,
  options: McpStdioOptions = {},
): Promise<void> {
  const { logError, signal } = options;
  // Not Promise.withResolvers(): the npm package runs on Node 20, which lacks it.
  let end = () => {};
  const ended = new Promise<void>((resolve) => end = resolve);
  process.stdin.once("end", end);
  process.stdin.once("close", end);
  signal?.addEventListener("abort", end, { once: true });
  const handle = serveStdio(
    () => svcMcpServer({ services, caller, ...(logError ? { logError } : {}) }),
    logError ? { onerror: (error: Error) => logError(`svc mcp: ${error.message}`) } : {},
  );
  try {
    await ended;
  } finally {
    process.stdin.off("end", end);
    process.stdin.off("close", end);
    signal?.removeEventListener("abort", end);
    await handle.close();
  }
}

/**
 * The tool protocol over standard input and output (`svc mcp`), for a coding agent that starts
 * svc as its MCP server. Standard output carries protocol frames and nothing else: the CLI sends
 * every other line to standard error before this starts.
 * @module
 */
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import type { Caller } from "../services/mod.ts";
import type { Services, SpawnWorker } from "../services/mod.ts";
import { svcMcpServer } from "./server.ts";

/** Options of {@linkcode serveMcpStdio}. */
export interface McpStdioOptions {
  /** Where internal errors are reported (standard error). Default: dropped. */
  logError?: (message: string) => void;
  /** Stops serving (the process is asked to stop). */
  signal?: AbortSignal;
  /**
   * Hands each run and task to a worker process (no daemon alive), so that it goes on when the
   * client hangs up and this process ends. Default: work runs in this process.
   */
  spawnWorker?: SpawnWorker;
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
  const { logError, signal, spawnWorker } = options;
  // Not Promise.withResolvers(): the npm package runs on Node 20, which lacks it.
  let end = () => {};
  const ended = new Promise<void>((resolve) => end = resolve);
  signal?.addEventListener("abort", end, { once: true });
  const transport = new StdioServerTransport();
  const handle = serveStdio(
    () =>
      svcMcpServer({
        services,
        caller,
        ...(logError ? { logError } : {}),
        ...(spawnWorker ? { spawnWorker } : {}),
      }),
    {
      transport,
      ...(logError ? { onerror: (error: Error) => logError(`svc mcp: ${error.message}`) } : {}),
    },
  );
  // The transport closes itself when standard input ends (the client hung up); serveStdio
  // has set its own close handler, which keeps running first.
  const closed = transport.onclose;
  transport.onclose = () => {
    closed?.();
    end();
  };
  try {
    await ended;
  } finally {
    signal?.removeEventListener("abort", end);
    await handle.close();
  }
}

/**
 * `svc mcp`: serves svc's tools over the tool protocol (MCP) on standard input and output, for
 * a coding agent that starts svc as its MCP server. It acts as the command line's owner
 * (`SVC_OWNER`, else `local`) and ends when the client closes standard input, or on Ctrl-C.
 * Runs and tasks it starts go to a live daemon, else to worker processes of their own: they
 * never run in this process, whose client may hang up (and, per the protocol, send SIGTERM and
 * SIGKILL after it) while they work.
 * @module
 */
import type { Command } from "commander";
import { platform } from "../src/platform/mod.ts";
import { callerOf } from "../src/services/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { EXIT } from "./exit_status.ts";
import { cliCaller } from "./host.ts";
import { printLine } from "./terminal.ts";
import { spawnWorker } from "./worker.ts";

/**
 * Sends every console line to standard error: in stdio mode standard output carries protocol
 * frames only, and a stray line from any module would break the client's reader.
 */
function consoleToStderr(): void {
  const toStderr = (...parts: unknown[]) => console.error(...parts);
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
}

/** Serves the tools until the client hangs up or the process is stopped. */
export async function mcpStdio(): Promise<number> {
  consoleToStderr();
  // Loaded here, not at the top: the SDK would slow every other command's start.
  const { serveMcpStdio } = await import("../src/mcp/mod.ts");
  // An agent drives this server, not the person at the terminal: its paths and runs go
  // through the workspace policy and admission control as any remote caller's.
  const caller = callerOf(cliCaller().owner, { remote: true });
  // The agent launched this server in its project: workdirs inside it stay reachable to an
  // owner the configuration gives no workspace roots (never svc's own data or source). No
  // guest is started ahead of need: runs go to workers, not to this process.
  const services = await openServices({ fallbackRoots: [platform().cwd()] });
  const stop = new AbortController();
  const remove = platform().onStop(() => stop.abort());
  try {
    await serveMcpStdio(services, caller, {
      logError: printLine,
      signal: stop.signal,
      spawnWorker,
    });
  } finally {
    remove();
    await services.close();
  }
  return EXIT.ok;
}

/** Adds `mcp` to the program; `run` sets the exit status. */
export function addMcpCommand(
  program: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  program
    .command("mcp")
    .description(
      "Serve svc's tools over the tool protocol (MCP) on stdin/stdout, for a coding agent's MCP client",
    )
    .action(() => run(mcpStdio));
}

/**
 * The `svc` command line. Nothing runs on import; `main()` takes the arguments and returns
 * the exit status.
 * @module
 */
import type { Command } from "commander";
import { platform } from "../src/platform/mod.ts";
import { VERSION } from "../src/version.ts";
import { addDashboardCommand } from "./dashboard.ts";
import { addDaemonCommands } from "./daemon.ts";
import { addA2aServerCommand } from "./a2a_server.ts";
import { addMcpCommand } from "./mcp.ts";
import { addBoardCommands } from "./board_commands.ts";
import { addLedgerCommands } from "./ledger_commands.ts";
import { addNotificationCommands } from "./notification_commands.ts";
import { addDispatchCommands } from "./dispatch_commands.ts";
import { addDoctorCommand } from "./doctor.ts";
import { addRunCommands } from "./run_commands.ts";
import { addStatusCommand } from "./status_command.ts";
import { addLegacyCommand } from "./workflow_legacy.ts";
import { runProgram, type Wrap } from "./program.ts";
import { addWorkflowRunCommands } from "./workflow_commands.ts";

export { VERSION };

/** Every command of `svc`. */
function addAllCommands(program: Command, workflow: Command, wrap: Wrap): void {
  addWorkflowRunCommands(workflow, wrap);
  addLegacyCommand(workflow, wrap);
  addRunCommands(workflow, wrap);
  addDispatchCommands(program, wrap);
  addDoctorCommand(program, wrap);
  addDashboardCommand(program, wrap);
  addA2aServerCommand(program, wrap);
  addMcpCommand(program, wrap);
  addBoardCommands(program, wrap);
  addLedgerCommands(program, wrap);
  addDaemonCommands(program, wrap);
  addStatusCommand(program, wrap);
  addNotificationCommands(program, wrap);
}

/** Runs the command line with `argv` (arguments after the program name); resolves to the exit status. */
export function main(argv: string[]): Promise<number> {
  return runProgram(argv, addAllCommands);
}

if (import.meta.main) {
  platform().exit(await main(platform().args()));
}

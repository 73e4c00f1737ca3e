/**
 * The lean `svc` program that the launcher starts for `svc workflow run` and `svc workflow
 * resume`: the same two commands as `cli/main.ts` (`cli/workflow_commands.ts`), without the
 * others, so that a run loads no server, dashboard, MCP or board command module. Nothing runs
 * on import.
 * @module
 */
import type { Command } from "commander";
import { platform } from "../src/platform/mod.ts";
import { runProgram, type Wrap } from "./program.ts";
import { addWorkflowRunCommands } from "./workflow_commands.ts";

/** The commands of this program: `workflow run` and `workflow resume`. */
function addRunCommands(_program: Command, workflow: Command, wrap: Wrap): void {
  addWorkflowRunCommands(workflow, wrap);
}

/**
 * Runs `svc workflow run|resume ...` with `argv` (arguments after the program name); resolves
 * to the exit status.
 */
export function main(argv: string[]): Promise<number> {
  return runProgram(argv, addRunCommands);
}

if (import.meta.main) {
  platform().exit(await main(platform().args()));
}

/**
 * The lean `svc` program that the launcher starts for `svc workflow run`, `resume` and `work`:
 * the same commands as `cli/main.ts` (`cli/workflow_commands.ts`), without the others, so that
 * a run loads no server, dashboard, MCP or board command module. A plain `workflow run` or
 * `workflow work` is read without commander (`cli/quick_workflow_args.ts`); commander, loaded
 * only then, reads anything else. Nothing runs on import.
 * @module
 */
import type { Command } from "commander";
import { platform } from "../src/platform/mod.ts";
import { commandFailure } from "./command_failure.ts";
import { type QuickCommand, quickWorkflowArgs } from "./quick_workflow_args.ts";
import type { Wrap } from "./program.ts";
import { workflowRun, workflowWork } from "./workflow_run.ts";

/** Runs a command read by `quickWorkflowArgs` as commander would run it; the exit status. */
async function runQuick(command: QuickCommand): Promise<number> {
  try {
    return command.command === "run"
      ? await workflowRun(command.script, command.flags)
      : await workflowWork(command.runId);
  } catch (error) {
    return commandFailure(error);
  }
}

/**
 * Runs `svc workflow run|resume|work ...` with `argv` (arguments after the program name);
 * resolves to the exit status.
 */
export async function main(argv: string[]): Promise<number> {
  const quick = quickWorkflowArgs(argv);
  if (quick !== undefined) return await runQuick(quick);
  const [{ runProgram }, { addWorkflowRunCommands }] = await Promise.all([
    import("./program.ts"),
    import("./workflow_commands.ts"),
  ]);
  return await runProgram(argv, (_program: Command, workflow: Command, wrap: Wrap) => {
    addWorkflowRunCommands(workflow, wrap);
  });
}

if (import.meta.main) {
  platform().exit(await main(platform().args()));
}

/**
 * The lean `svc` program that the launcher starts for `svc workflow run`, `resume` and `work`:
 * the same commands as `cli/main.ts` (`cli/workflow_commands.ts`), without the others, so that
 * a run loads no server, dashboard, MCP or board command module. A plain `workflow run` or
 * `workflow work` is read without commander (`cli/quick_workflow_args.ts`); commander, loaded
 * only then, reads anything else. Nothing runs on import.
 *
 * What this module imports up front is only what reads the arguments and starts a run's guest
 * (no schema, no engine, no ledger): a plain `workflow run` spawns its guest first
 * ({@linkcode startEarlyGuest}), then loads the rest of the host (`import()`), so that the
 * guest boots while the host loads, reads its configuration and opens its ledger.
 * @module
 */
import type { Command } from "commander";
import { startEarlyGuest } from "../src/engine/early_guest.ts";
import { svcHome } from "../src/host_env/mod.ts";
import type { PrestartedBackend } from "../src/isolation/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { type QuickCommand, quickWorkflowArgs } from "./quick_workflow_args.ts";
import type { Wrap } from "./program.ts";
import type { WorkflowRunFlags } from "./workflow_run.ts";

/**
 * The guest a plain `workflow run` starts ahead, for the settings its run asks for by default:
 * none for another isolation tier, or a timeout the run will refuse (it reports that itself).
 */
async function earlyGuestOf(flags: WorkflowRunFlags): Promise<PrestartedBackend | undefined> {
  if ((flags.isolation ?? "unsafe-local") !== "unsafe-local") return undefined;
  const timeout = Number(flags.timeout);
  if (!/^\d+$/.test(flags.timeout ?? "") || !Number.isSafeInteger(timeout) || timeout < 1) {
    return undefined;
  }
  const { backend, spawned } = startEarlyGuest({ home: svcHome(), timeout });
  // Its few file-system calls go before the rest of the host loads: once the modules load and
  // evaluate (some 50 ms of one turn), they would wait behind them.
  await spawned;
  return backend;
}

/** The modules that run a quick command, loaded after the lean program's own. */
function loadRunModules() {
  return Promise.all([import("./workflow_run.ts"), import("./command_failure.ts")]);
}

/** Runs a command read by `quickWorkflowArgs` as commander would run it; the exit status. */
async function runQuick(command: QuickCommand): Promise<number> {
  // The guest boots while the rest of the host loads and opens.
  const earlyGuest = command.command === "run" ? await earlyGuestOf(command.flags) : undefined;
  try {
    const [{ workflowRun, workflowWork }, { commandFailure }] = await loadRunModules();
    try {
      return command.command === "run"
        ? await workflowRun(command.script, command.flags, earlyGuest ? { earlyGuest } : {})
        : await workflowWork(command.runId);
    } catch (error) {
      return commandFailure(error);
    }
  } finally {
    await earlyGuest?.[Symbol.asyncDispose]();
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

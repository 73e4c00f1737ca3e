/**
 * The `svc` command line. Nothing runs on import; `main()` takes the arguments and returns
 * the exit status.
 * @module
 */
import { Command, CommanderError, Option } from "commander";
import { SvcError } from "../src/errors/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { VERSION } from "../src/version.ts";
import { printLine } from "./terminal.ts";
import { addDashboardCommand } from "./dashboard.ts";
import { addDaemonCommands } from "./daemon.ts";
import { addA2aServerCommand } from "./a2a_server.ts";
import { addMcpCommand } from "./mcp.ts";
import { addBoardCommands } from "./board_commands.ts";
import { addDispatchCommands } from "./dispatch_commands.ts";
import { addRunCommands } from "./run_commands.ts";
import { EXIT, exitStatusOfError } from "./exit_status.ts";
import { UsageError, workflowResume, workflowRun } from "./workflow_run.ts";
import { addLegacyCommand } from "./workflow_legacy.ts";

export { VERSION };

/** What one invocation shares with its commands: the exit status, and output still being written. */
interface Invocation {
  exitCode: number;
  /** Writes commander started (help, version): awaited before the process may exit. */
  writes: Promise<void>[];
}

function buildProgram(run: Invocation): Command {
  const p = platform();
  const program = new Command("svc")
    .description("Dispatch tasks to coding agents and orchestrate them with workflow scripts.")
    .version(VERSION)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => void run.writes.push(p.writeStdout(text)),
      writeErr: (text) => p.writeStderr(text),
    })
    .showSuggestionAfterError(true);

  const workflow = program.command("workflow").description(
    "Run workflow scripts, and list, read, follow and cancel runs",
  ).exitOverride();
  workflow
    .command("run")
    .description("Run a workflow script and print its returned value as JSON")
    .argument(
      "<script.js>",
      "path of the script, - for standard input, or the name of a saved workflow (.claude/workflows/, workflows/)",
    )
    .option(
      "--args <json>",
      "JSON value passed to the script as `args` (text that is not JSON is passed as a string; @file reads a file)",
    )
    .option(
      "--fake-dispatch",
      "send every agent() call to the deterministic fake provider (no quota used)",
    )
    .option("--timeout <seconds>", "wall-clock limit of the whole run", "3600")
    .addOption(
      new Option("--isolation <tier>", "where the script runs").choices(["unsafe-local", "microvm"])
        .default("unsafe-local"),
    )
    .addOption(
      new Option("--sandbox-default <level>", "default sandbox level of calls")
        .choices(["read-only", "write", "full"])
        .default("read-only"),
    )
    .addOption(
      new Option(
        "--sandbox-max <level>",
        "highest sandbox level any call may get (default: the --sandbox-default level)",
      ).choices(["read-only", "write", "full"]),
    )
    .option("--workdir <dir>", "working directory of the run's calls")
    .option("--budget-tokens <n>", "stop starting calls once this many tokens are committed")
    .option("--budget-usd <n>", "stop starting calls once this much currency is committed")
    .option(
      "--max-agents <n>",
      "agent() calls the run may make; later ones return null (default 200, at most 1000)",
    )
    .option(
      "--concurrency <n>",
      "agent() calls of the run that may run at once; more queue (default 8, at most 64)",
    )
    .option(
      "--resume-from <run_id>",
      "replay the unchanged leading calls of an earlier run from its journal",
    )
    .option("--json", "print the whole run status object instead of the returned value")
    .exitOverride()
    .action(async (script: string, flags) => {
      run.exitCode = await workflowRun(script, flags);
    });
  workflow
    .command("resume")
    .description(
      "Run an ended run again from the script and args it recorded, replaying its journaled calls",
    )
    .argument("<run_id>", "the run to resume: one that has ended")
    .option("--fake-dispatch", "send every agent() call to the fake provider this time")
    .option("--no-fake-dispatch", "send calls to the real providers this time")
    .option("--timeout <seconds>", "wall-clock limit of the new run (default: the run's)")
    .option("--budget-tokens <n>", "the new run's token budget (default: the run's)")
    .option("--budget-usd <n>", "the new run's currency budget (default: the run's)")
    .option("--json", "print the whole run status object instead of the returned value")
    .exitOverride()
    .action(async (runId: string, flags) => {
      run.exitCode = await workflowResume(runId, flags);
    });
  addLegacyCommand(workflow, async (action) => {
    run.exitCode = await action();
  });
  addRunCommands(workflow, async (action) => {
    run.exitCode = await action();
  });
  addDispatchCommands(program, async (action) => {
    run.exitCode = await action();
  });
  addDashboardCommand(program, async (action) => {
    run.exitCode = await action();
  });
  addA2aServerCommand(program, async (action) => {
    run.exitCode = await action();
  });
  addMcpCommand(program, async (action) => {
    run.exitCode = await action();
  });
  addBoardCommands(program, async (action) => {
    run.exitCode = await action();
  });
  addDaemonCommands(program, async (action) => {
    run.exitCode = await action();
  });
  return program;
}

/** Runs the command line with `argv` (arguments after the program name); resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  const run: Invocation = { exitCode: EXIT.ok, writes: [] };
  const program = buildProgram(run);
  try {
    if (argv.length === 0) {
      program.outputHelp();
      return EXIT.usage;
    }
    return await parse(program, argv, run);
  } finally {
    await Promise.allSettled(run.writes);
  }
}

/**
 * Parses and runs one command; maps what it throws to one line on stderr and the exit status
 * of its error code (`cli/exit_status.ts`).
 */
async function parse(program: Command, argv: string[], run: Invocation): Promise<number> {
  const p = platform();
  try {
    await program.parseAsync(argv, { from: "user" });
    return run.exitCode;
  } catch (error) {
    // Commander has printed its own message (or the help, or the version).
    if (error instanceof CommanderError) return exitStatusOfError(error);
    if (error instanceof UsageError || error instanceof SvcError) {
      printLine(`svc: ${error.message}`);
      return exitStatusOfError(error);
    }
    // The runtime refused an operation: the host was started without a grant it needs.
    const grant = p.missingGrant(error);
    if (grant !== undefined) {
      printLine(`svc: Cannot continue: svc needs ${grant} (see "Permissions" in the README)`);
      // As a run whose guest could not start for the same reason (guest_failed).
      return EXIT.failed;
    }
    p.writeStderr("svc: internal error (this is a bug in svc; please report it)\n");
    return exitStatusOfError(error);
  }
}

if (import.meta.main) {
  platform().exit(await main(platform().args()));
}

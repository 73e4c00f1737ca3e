/**
 * The frame of the `svc` program: the root command (version, help, suggestions) and the
 * `workflow` group, how an invocation records its exit status, and how what a command throws
 * becomes one line on stderr and an exit status. `cli/main.ts` adds every command to it;
 * `cli/workflow_main.ts` only `workflow run` and `workflow resume`.
 * @module
 */
import { Command, CommanderError } from "commander";
import { platform } from "../src/platform/mod.ts";
import { VERSION } from "../src/version.ts";
import { EXIT, exitStatusOfError } from "./exit_status.ts";
import { commandFailure } from "./command_failure.ts";

/** Runs a command's action and records its exit status as the invocation's. */
export type Wrap = (action: () => Promise<number>) => Promise<void>;

/** Adds commands to the root command and to its `workflow` group. */
export type AddCommands = (program: Command, workflow: Command, wrap: Wrap) => void;

/** What one invocation shares with its commands: the exit status, and output still being written. */
interface Invocation {
  exitCode: number;
  /** Writes commander started (help, version): awaited before the process may exit. */
  writes: Promise<void>[];
}

function buildProgram(run: Invocation, add: AddCommands): Command {
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
  add(program, workflow, async (action) => {
    run.exitCode = await action();
  });
  return program;
}

/**
 * Runs the program made of the commands `add` adds with `argv` (arguments after the program
 * name); resolves to the exit status.
 */
export async function runProgram(argv: string[], add: AddCommands): Promise<number> {
  const run: Invocation = { exitCode: EXIT.ok, writes: [] };
  const program = buildProgram(run, add);
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
  try {
    await program.parseAsync(argv, { from: "user" });
    return run.exitCode;
  } catch (error) {
    // Commander has printed its own message (or the help, or the version).
    if (error instanceof CommanderError) return exitStatusOfError(error);
    return commandFailure(error);
  }
}

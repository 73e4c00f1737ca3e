/**
 * The command line's exit statuses, from two things only: the state a run or task ended in,
 * and the code of the error a command failed with (through the one error table,
 * `src/errors/codes.ts`). Every command goes through here, so the same case exits the same way
 * whichever command met it (docs/CLI.md, "Exit statuses").
 * @module
 */
import { EXIT_STATUS, exitStatusOf, SvcError } from "../src/errors/mod.ts";
import type { RunState, TaskState } from "../src/services/mod.ts";
import { UsageError } from "./workflow_input.ts";

/** Exit statuses of the command line, by name. */
export const EXIT: typeof EXIT_STATUS = EXIT_STATUS;

/**
 * The exit status of a command that waited for a run or task to end (`workflow run`,
 * `dispatch --wait`, `task work`): 0 succeeded, 124 timeout, 1 for any other state (failed,
 * cancelled, interrupted, or one that has not ended).
 */
export function exitStatusOfState(state: RunState | TaskState): number {
  switch (state) {
    case "succeeded":
      return EXIT.ok;
    case "timeout":
      return EXIT.timeout;
    default:
      return EXIT.failed;
  }
}

/** Commander's codes for help and version: they end the command, but are no errors. */
const NOT_ERRORS = new Set(["commander.helpDisplayed", "commander.help", "commander.version"]);

/**
 * Commander's `CommanderError` (and its subclasses), known by its `commander.` code rather than
 * by `instanceof`: importing commander here would load it, and Deno's Node layer with it, in
 * the lean program of every run (`cli/quick_workflow_args.ts`).
 */
function commanderCode(error: unknown): string | undefined {
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" && code.startsWith("commander.") ? code : undefined;
}

/**
 * The exit status of a command that threw `error`: an `SvcError` by its code, a usage error of
 * the command line (commander's, or svc's own `UsageError`) as `invalid_argument`, anything
 * else as `internal`.
 */
export function exitStatusOfError(error: unknown): number {
  const commander = commanderCode(error);
  if (commander !== undefined) {
    return NOT_ERRORS.has(commander) ? EXIT.ok : exitStatusOf("invalid_argument");
  }
  if (error instanceof UsageError) return exitStatusOf("invalid_argument");
  if (error instanceof SvcError) return exitStatusOf(error.code);
  return exitStatusOf("internal");
}

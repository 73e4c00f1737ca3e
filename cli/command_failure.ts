/**
 * What a command threw, as the user sees it: one line on standard error and the exit status
 * of its error code (`cli/exit_status.ts`). Shared by the commander program (`cli/program.ts`)
 * and the lean program's plain `workflow run` (`cli/workflow_main.ts`), which loads no
 * commander.
 * @module
 */
import { SvcError } from "../src/errors/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { printLine } from "./terminal.ts";
import { EXIT, exitStatusOfError } from "./exit_status.ts";
import { UsageError } from "./workflow_input.ts";

/** Reports `error`, which a command threw, and returns the exit status it ends the command with. */
export function commandFailure(error: unknown): number {
  if (error instanceof UsageError || error instanceof SvcError) {
    printLine(`svc: ${error.message}`);
    return exitStatusOfError(error);
  }
  // The runtime refused an operation: the host was started without a grant it needs.
  const grant = platform().missingGrant(error);
  if (grant !== undefined) {
    printLine(`svc: Cannot continue: svc needs ${grant} (see docs/PERMISSIONS.md)`);
    // As a run whose guest could not start for the same reason (guest_failed).
    return EXIT.failed;
  }
  platform().writeStderr("svc: internal error (this is a bug in svc; please report it)\n");
  return exitStatusOfError(error);
}

/**
 * `svc workflow legacy <file>`: runs a deprecated version-1 chain (YAML or JSON) as its
 * equivalent version-2 script, exactly as `svc workflow run` runs that script; `--to-script`
 * prints the script and runs nothing. The deprecation notice goes to standard error.
 * @module
 */
import { type Command, Option } from "commander";
import { SvcError } from "../src/errors/mod.ts";
import { LEGACY_DEPRECATION, legacyRunRequest } from "../src/legacy/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { EXIT } from "./exit_status.ts";
import { printLine } from "./terminal.ts";
import { readScriptSource, UsageError, workdirOption } from "./workflow_input.ts";
import { runAndFollow, runOptionsOf, type WorkflowRunFlags } from "./workflow_run.ts";

/** Options of `svc workflow legacy`, as commander hands them over. */
export interface WorkflowLegacyFlags extends WorkflowRunFlags {
  input?: string;
  toScript?: boolean;
}

/** Runs `action` and records its exit status (main.ts's wrapper). */
type Wrap = (action: () => Promise<number>) => Promise<void>;

/**
 * `svc workflow legacy <file>`: reads the chain, prints the deprecation notice, then either
 * prints the equivalent script (`--to-script`) or runs it to its end like `svc workflow run`.
 * A bad file exits 2 with the message naming the step and the field.
 */
export async function workflowLegacy(ref: string, flags: WorkflowLegacyFlags): Promise<number> {
  const source = await readScriptSource(ref).catch((error) => {
    throw error instanceof UsageError
      ? new UsageError(error.message.replace(/^Cannot read (the )?script/, "Cannot read the chain"))
      : error;
  });
  const filename = ref === "-" ? "stdin.yaml" : source.filename;
  let legacy;
  try {
    if (flags.toScript) {
      legacy = legacyRunRequest({ chain: source.script }, { filename });
    } else {
      const workdir = await workdirOption(flags.workdir);
      const options = runOptionsOf(flags);
      const body: Record<string, unknown> = { chain: source.script };
      for (const [key, value] of Object.entries({ ...options, workdir })) {
        if (value !== undefined) body[key] = value;
      }
      if (flags.input !== undefined) body.input = flags.input;
      legacy = legacyRunRequest(body as { chain: string }, { filename });
    }
  } catch (error) {
    // A bad file is a usage problem: exit 2 with the message that names the step and field.
    if (error instanceof SvcError && error.code === "invalid_request") {
      throw new UsageError(error.message);
    }
    throw error;
  }
  if (flags.toScript) {
    printLine(`svc: deprecated: ${LEGACY_DEPRECATION}`);
    await platform().writeStdout(legacy.script);
    return EXIT.ok;
  }
  printLine(`svc: deprecated: ${legacy.notice}`);
  return await runAndFollow(legacy.request, { json: flags.json });
}

/** Adds `svc workflow legacy` to the `workflow` command. */
export function addLegacyCommand(workflow: Command, wrap: Wrap): void {
  workflow
    .command("legacy")
    .description(
      "Run a deprecated version-1 chain (YAML or JSON) as its equivalent workflow script",
    )
    .argument("<file>", "the chain file (YAML or JSON), - for standard input")
    .option("--input <text>", "the text of {{input}} in the steps' prompts (default: empty)")
    .option("--to-script", "print the equivalent version-2 script and run nothing")
    .option("--fake-dispatch", "send every step to the deterministic fake provider")
    .option("--timeout <seconds>", "wall-clock limit of the whole run", "3600")
    .addOption(
      new Option("--isolation <tier>", "where the script runs").choices(["unsafe-local", "microvm"])
        .default("unsafe-local"),
    )
    .addOption(
      new Option("--sandbox-default <level>", "sandbox level of a step that names none")
        .choices(["read-only", "write", "full"])
        .default("read-only"),
    )
    .addOption(
      new Option(
        "--sandbox-max <level>",
        "highest sandbox level any step may get (default: the --sandbox-default level)",
      ).choices(["read-only", "write", "full"]),
    )
    .option("--workdir <dir>", "working directory of the steps' calls")
    .option("--budget-tokens <n>", "stop starting steps once this many tokens are committed")
    .option("--budget-usd <n>", "stop starting steps once this much currency is committed")
    .option("--max-agents <n>", "agent() calls the run may make (default 200, at most 1000)")
    .option("--concurrency <n>", "agent() calls that may run at once (default 8, at most 64)")
    .option(
      "--resume-from <run_id>",
      "replay the unchanged leading steps of an earlier run of the chain from its journal",
    )
    .option("--json", "print the whole run status object instead of the returned value")
    .exitOverride()
    .action(async (file: string, flags: WorkflowLegacyFlags) => {
      await wrap(() => workflowLegacy(file, flags));
    });
}

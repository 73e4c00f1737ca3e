/**
 * The `svc workflow run` and `svc workflow resume` commands: their options and actions, shared
 * by the whole program (`cli/main.ts`) and the lean one that only runs workflows
 * (`cli/workflow_main.ts`), so that both parse them alike.
 * @module
 */
import { type Command, Option } from "commander";
import { workflowResume, workflowRun, workflowWork } from "./workflow_run.ts";

/** Runs `action` and records its exit status (the program's wrapper). */
type Wrap = (action: () => Promise<number>) => Promise<void>;

/** Adds `run`, `resume` and the hidden `work` (a worker's) to the `workflow` command. */
export function addWorkflowRunCommands(workflow: Command, wrap: Wrap): void {
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
      "agent() calls the run may make; later ones return null (default 200 or the script's meta.maxAgents; clamped to the configuration's admission.max_run_agents, 1000)",
    )
    .option(
      "--concurrency <n>",
      "agent() calls of the run that may run at once; more queue (default 8 or the script's meta.concurrency; clamped to the configuration's admission.max_run_concurrency, 64)",
    )
    .option(
      "--resume-from <run_id>",
      "replay the unchanged leading calls of an earlier run from its journal",
    )
    .option("--title <text>", "what the run is for, in a line: recorded and shown with the run")
    .option("--description <text>", "a longer description, recorded and shown with the run")
    .option("--json", "print the whole run status object instead of the returned value")
    .option(
      "--output <level>",
      "calls' live output on standard error: none (the default), tools (tool uses, files, errors) or all (text too)",
    )
    .exitOverride()
    .action(async (script: string, flags) => {
      await wrap(() => workflowRun(script, flags));
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
    .option(
      "--output <level>",
      "calls' live output on standard error: none (the default), tools (tool uses, files, errors) or all (text too)",
    )
    .exitOverride()
    .action(async (runId: string, flags) => {
      await wrap(() => workflowResume(runId, flags));
    });
  workflow.command("work", { hidden: true }).argument("<run_id>").exitOverride()
    .action(async (runId: string) => {
      await wrap(() => workflowWork(runId));
    });
}

import { svcHome } from "../src/config/mod.ts";
import { findWorkflow, type RunStatus } from "../src/engine/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { CONCURRENCY_LIMIT, MAX_AGENTS_LIMIT } from "../src/schemas/mod.ts";
import { type Host, type HostOptions, openHost } from "./host.ts";
import { EXIT, exitStatusOfState } from "./exit_status.ts";
import { narrateRun, printerFor, reportEnd } from "./run_report.ts";
import { type OutputLevel, parseOutputLevel } from "./progress_lines.ts";
import { type RerunFlags, resumeCommand } from "./resume_hint.ts";
import { printLine } from "./terminal.ts";
import { parseArgsOption, readScriptSource, UsageError, workdirOption } from "./workflow_input.ts";

/** Options of `svc workflow run`, as commander hands them over. */
export interface WorkflowRunFlags extends RerunFlags {
  resumeFrom?: string;
  json?: boolean;
  /** Calls' live output on standard error: `none` (the default), `tools` or `all`. */
  output?: string;
  /** `--title`: what the run is for, recorded with it. */
  title?: string;
  /** `--description`: a longer description, recorded with it. */
  description?: string;
}

/** Options of `svc workflow resume`, as commander hands them over. */
export interface WorkflowResumeFlags {
  /** `--fake-dispatch` true, `--no-fake-dispatch` false, neither: the source run's. */
  fakeDispatch?: boolean;
  timeout?: string;
  budgetTokens?: string;
  budgetUsd?: string;
  json?: boolean;
  /** Calls' live output on standard error: `none` (the default), `tools` or `all`. */
  output?: string;
}

export { UsageError };
/** Exit statuses of the command line: they live in `cli/exit_status.ts` (docs/CLI.md, "Exit statuses"). */
export { EXIT } from "./exit_status.ts";

function parseTimeout(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < 1) {
    throw new UsageError(
      `Cannot use --timeout '${raw}': it must be a whole number of seconds, at least 1`,
    );
  }
  return value;
}

function parseNumber(flag: string, raw: string | undefined, whole: boolean): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  const ok = whole
    ? /^\d+$/.test(raw) && Number.isSafeInteger(value) && value > 0
    : Number.isFinite(value) && value > 0;
  if (!ok) {
    throw new UsageError(
      `Cannot use ${flag} '${raw}': it must be a ${whole ? "whole number" : "number"} above 0`,
    );
  }
  return value;
}

/** A whole-number limit flag, from 1 to `max`. */
function parseLimit(flag: string, raw: string | undefined, max: number): number | undefined {
  const value = parseNumber(flag, raw, true);
  if (value !== undefined && value > max) {
    throw new UsageError(`Cannot use ${flag} '${raw}': it must be a whole number from 1 to ${max}`);
  }
  return value;
}

/**
 * `svc workflow run <script>`: runs the script to its end, narrates on standard error and
 * prints the product (or with --json the status object) on standard output.
 */
export async function workflowRun(
  scriptRef: string,
  flags: WorkflowRunFlags,
  start: Pick<FollowOptions, "earlyGuest"> = {},
): Promise<number> {
  const workdir = await workdirOption(flags.workdir);
  const source = await readScriptSource(await scriptPathOf(scriptRef, workdir));
  const args = await parseArgsOption(flags.args);
  const output = parseOutputLevel(flags.output, "none");
  const request: Record<string, unknown> = {
    script: source.script,
    filename: source.filename,
    // The real folder of the script: the relative refs of its workflow() calls start there.
    ...(source.dir !== undefined ? { script_dir: source.dir } : {}),
    args: args.value,
    ...runOptionsOf(flags),
    workdir,
  };
  if (args.asString) {
    printLine("svc: --args is not JSON: the script gets it as a string");
  }
  return await runAndFollow(request, {
    json: flags.json,
    flags,
    ref: source.ref,
    output,
    ...(start.earlyGuest ? { earlyGuest: start.earlyGuest } : {}),
  });
}

/**
 * The run options of `svc workflow run` as request fields (`workdir` aside: it needs a file
 * system check, {@linkcode workdirOption}); malformed numbers are {@linkcode UsageError}s.
 */
export function runOptionsOf(flags: WorkflowRunFlags): Record<string, unknown> {
  return {
    timeout: parseTimeout(flags.timeout),
    isolation: flags.isolation,
    sandbox_default: flags.sandboxDefault,
    sandbox_max: flags.sandboxMax,
    fake_dispatch: flags.fakeDispatch ?? false,
    budget_tokens: parseNumber("--budget-tokens", flags.budgetTokens, true),
    budget_usd: parseNumber("--budget-usd", flags.budgetUsd, false),
    resume_from: flags.resumeFrom,
    max_agents: parseLimit("--max-agents", flags.maxAgents, MAX_AGENTS_LIMIT),
    concurrency: parseLimit("--concurrency", flags.concurrency, CONCURRENCY_LIMIT),
    title: flags.title,
    description: flags.description,
  };
}

/** How a started run is followed and reported. */
interface FollowOptions {
  json?: boolean | undefined;
  /** The flags of a run of a script file, repeated by the resume hint. */
  flags?: WorkflowRunFlags;
  ref?: string;
  /** Calls' live output in the narration. @default "none" */
  output?: OutputLevel;
  /** The guest started for the run before the services opened (`startEarlyGuest`). */
  earlyGuest?: HostOptions["earlyGuest"];
}

/**
 * Starts a run of `request` in this process, narrates it to its end and reports it as
 * `svc workflow run` does; resolves to the exit status. With `flags` and `ref` (a script file),
 * the resume hint repeats them; without, it is `svc workflow resume <run_id>`.
 */
export async function runAndFollow(
  request: Record<string, unknown>,
  options: FollowOptions = {},
): Promise<number> {
  await using host = await openHost(
    options.earlyGuest ? { earlyGuest: options.earlyGuest } : {},
  );
  await reportInterrupted(host);
  return await follow(host, () => host.runs.start(request, host.caller, { via: "cli" }), options);
}

/**
 * The file a script reference names: a path (or `-`) as it is; a bare name that is no file is
 * a saved workflow, looked up as `workflow(name)` looks it up (docs/SCRIPTS.md).
 */
async function scriptPathOf(ref: string, workdir: string | undefined): Promise<string> {
  const p = platform();
  if (ref === "-" || ref.includes("/") || ref.endsWith(".js")) return ref;
  if (await p.stat(ref).then(() => true, () => false)) return ref;
  const userHome = p.homeDir();
  try {
    return await findWorkflow(ref, {
      projectDir: workdir ?? p.cwd(),
      home: svcHome(),
      ...(userHome !== undefined ? { userHome } : {}),
    });
  } catch (error) {
    if (!(error instanceof SvcError)) throw error;
    throw new UsageError(
      `Cannot read script '${ref}': no such file, and no saved workflow of that name (${error.message})`,
    );
  }
}

/** Says which runs the start-up found left behind by a host that died, and how to resume them. */
async function reportInterrupted(host: Host): Promise<void> {
  for (const runId of host.recovered.runs) {
    const status = await host.runs.get(runId, host.caller);
    if (!status) continue;
    printLine(
      `svc: run ${runId} (${status.filename}) was interrupted: its host stopped before it ended`,
    );
    printLine(`svc: resume it with: ${resumeCommand(status)}`);
  }
}

/**
 * `svc workflow work <run_id>` (hidden): claims a queued run and runs it in this process to
 * its end, for a worker started by a process that may not outlive the run (`svc mcp`). A run
 * another worker claimed first, or one no longer queued, is left alone.
 */
export async function workflowWork(runId: string): Promise<number> {
  await using host = await openHost();
  const started = await host.runs.work(runId);
  if (!started) return EXIT.ok;
  const ended = await host.runs.wait(runId, { owner: started.owner });
  return exitStatusOfState(ended.state);
}

/**
 * `svc workflow resume <run_id>`: runs an ended run again from the script and args the ledger
 * recorded, replaying its journaled calls; narrates and prints as `svc workflow run` does.
 */
export async function workflowResume(runId: string, flags: WorkflowResumeFlags): Promise<number> {
  const output = parseOutputLevel(flags.output, "none");
  const changes: Record<string, unknown> = {
    ...(flags.fakeDispatch !== undefined ? { fake_dispatch: flags.fakeDispatch } : {}),
    timeout: parseTimeout(flags.timeout),
    budget_tokens: parseNumber("--budget-tokens", flags.budgetTokens, true),
    budget_usd: parseNumber("--budget-usd", flags.budgetUsd, false),
  };
  await using host = await openHost();
  await reportInterrupted(host);
  return await follow(host, () => host.runs.resume(runId, host.caller, changes, { via: "cli" }), {
    json: flags.json,
    output,
  });
}

/**
 * Starts a run with `start`, narrates it to its end and reports it; Ctrl-C cancels it (twice:
 * quits). With `flags` and `ref` (a run of a script file), the resume hint repeats them.
 */
async function follow(
  host: Host,
  start: () => Promise<RunStatus>,
  options: FollowOptions,
): Promise<number> {
  const { runs: manager, caller } = host;
  const p = platform();
  // A refusal (a bad script, an unknown run to resume) exits by its error code, as anywhere.
  const started = await start();
  const runId = started.run_id;
  printLine(
    `svc: run ${runId} started (${started.filename}${started.name ? `, "${started.name}"` : ""}${
      started.resumed_from ? `, resuming ${started.resumed_from}` : ""
    })`,
  );
  if (started.fake_provider_only) {
    printLine(
      "svc: warning: no provider is configured, so every agent() call goes to the fake provider " +
        "and gets a made-up answer (configure providers in $SVC_HOME/config.json, or pass " +
        "--fake-dispatch to say that this is what you want)",
    );
  }

  let interrupts = 0;
  const removeInterrupt = p.onInterrupt(() => {
    interrupts++;
    if (interrupts === 1) {
      printLine("svc: cancelling the run (press Ctrl-C again to quit at once)");
      manager.cancel(runId, caller).catch(() => {});
    } else {
      printLine("svc: quitting");
      p.exit(130);
    }
  });
  let status: RunStatus;
  try {
    // The narration comes from the run's event feed, as `svc workflow watch` reads it.
    await narrateRun(manager, runId, { caller, printer: printerFor(options.output) });
    status = await manager.wait(runId, caller);
  } finally {
    removeInterrupt();
  }
  await reportEnd(status, {
    json: options.json,
    ...(options.ref !== undefined ? { ref: options.ref } : {}),
    ...(options.flags !== undefined ? { flags: options.flags } : {}),
  });
  return exitStatusOfState(status.state);
}

import { svcHome } from "../src/config/mod.ts";
import { describeItemError, findWorkflow, RunManager, type RunStatus } from "../src/engine/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { CONCURRENCY_LIMIT, MAX_AGENTS_LIMIT } from "../src/schemas/mod.ts";
import { openHost } from "./host.ts";
import { exitStatusOfState } from "./exit_status.ts";
import { createNarrationPrinter, type NarrationPrinter } from "./narration.ts";
import { type RerunFlags, resumeCommand } from "./resume_hint.ts";
import { printJson, printLine, visible } from "./terminal.ts";
import { parseArgsOption, readScriptSource, UsageError, workdirOption } from "./workflow_input.ts";

/** Options of `svc workflow run`, as commander hands them over. */
export interface WorkflowRunFlags extends RerunFlags {
  resumeFrom?: string;
  json?: boolean;
}

export { UsageError };
/** Exit statuses of the command line: they live in `cli/exit_status.ts` (README, "Exit statuses"). */
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
export async function workflowRun(scriptRef: string, flags: WorkflowRunFlags): Promise<number> {
  const workdir = await workdirOption(flags.workdir);
  const source = await readScriptSource(await scriptPathOf(scriptRef, workdir));
  const args = await parseArgsOption(flags.args);
  const request: Record<string, unknown> = {
    script: source.script,
    filename: source.filename,
    // The real folder of the script: the relative refs of its workflow() calls start there.
    ...(source.dir !== undefined ? { script_dir: source.dir } : {}),
    args: args.value,
    timeout: parseTimeout(flags.timeout),
    isolation: flags.isolation,
    sandbox_default: flags.sandboxDefault,
    sandbox_max: flags.sandboxMax,
    workdir,
    fake_dispatch: flags.fakeDispatch ?? false,
  };
  request.budget_tokens = parseNumber("--budget-tokens", flags.budgetTokens, true);
  request.budget_usd = parseNumber("--budget-usd", flags.budgetUsd, false);
  request.resume_from = flags.resumeFrom;
  request.max_agents = parseLimit("--max-agents", flags.maxAgents, MAX_AGENTS_LIMIT);
  request.concurrency = parseLimit("--concurrency", flags.concurrency, CONCURRENCY_LIMIT);
  if (args.asString) {
    printLine("svc: --args is not JSON: the script gets it as a string");
  }
  await using host = await openHost();
  const manager = await host.runs();
  await reportInterrupted(manager, host.home);
  return await follow(manager, request, { flags, ref: source.ref, home: host.home });
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
async function reportInterrupted(manager: RunManager, home: string): Promise<void> {
  for (const runId of manager.recovered) {
    const status = await manager.get(runId, { owner: "local" });
    if (!status) continue;
    printLine(
      `svc: run ${runId} (${status.filename}) was interrupted: its host stopped before it ended`,
    );
    printLine(`svc: resume it with: ${resumeCommand(status, { home })}`);
  }
}

/** How the narration printer draws: a status line on a terminal, counts lines elsewhere. */
function printerFor(): NarrationPrinter {
  const p = platform();
  const columns = p.stderrColumns();
  return createNarrationPrinter({
    line: printLine,
    visible,
    ...(columns !== undefined
      ? {
        terminal: {
          write: (raw: string) => p.writeStderr(raw),
          columns: () => p.stderrColumns() ?? columns,
        },
      }
      : {}),
  });
}

async function follow(
  manager: RunManager,
  request: Record<string, unknown>,
  options: { flags: WorkflowRunFlags; ref: string; home: string },
): Promise<number> {
  const { flags } = options;
  const p = platform();
  // A refusal (a bad script, an unknown run to resume) exits by its error code, as anywhere.
  const started = await manager.start(request);
  const runId = started.run_id;
  const printer = printerFor();
  const unsubscribe = manager.subscribe(runId, printer.onEvent);
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
      manager.cancel(runId);
    } else {
      printLine("svc: quitting");
      p.exit(130);
    }
  });
  let status: RunStatus;
  try {
    status = await manager.wait(runId);
  } finally {
    removeInterrupt();
    unsubscribe();
    printer.flush();
  }

  const { journal } = status;
  const calls = journal.calls === 0
    ? ""
    : ` (${journal.calls} calls: ${journal.live} live, ${journal.replayed} replayed` +
      `${journal.failed ? `, ${journal.failed} failed` : ""}${
        journal.skipped ? `, ${journal.skipped} skipped` : ""
      })`;
  for (const condition of status.conditions) {
    printLine(`! ${condition.type}: ${condition.message}`);
  }
  if (status.state === "succeeded") {
    printLine(`svc: run ${runId} succeeded${calls}`);
  } else {
    printLine(
      `svc: run ${runId} ${status.state}: ${status.error?.message ?? "no reason recorded"}`,
    );
    printLine(`svc: resume it with: ${resumeCommand(status, options)}`);
  }
  for (const line of failureLines(status)) printLine(line);
  if (flags.json) await printJson(status, 2);
  else if (status.state === "succeeded") {
    await printJson(status.result ?? null);
  }
  return exitStatusOfState(status.state);
}

const REFUSALS = new Set(["agent_limit", "budget", "unpriced"]);

/**
 * What went wrong without failing the run, below its end line: calls that failed and calls
 * that were refused, by cause, and items of parallel()/pipeline() that threw. Nothing when
 * nothing did.
 */
function failureLines(status: RunStatus): string[] {
  const lines: string[] = [];
  const entries = Object.entries(status.failures).filter(([, n]) => n !== undefined && n > 0)
    .sort(([a, x], [b, y]) => y! - x! || a.localeCompare(b));
  for (const [refused, verb] of [[false, "failed"], [true, "were refused"]] as const) {
    const causes = entries.filter(([cause]) => REFUSALS.has(cause) === refused);
    const total = causes.reduce((sum, [, n]) => sum + n!, 0);
    if (total === 0) continue;
    lines.push(
      `svc: ${total} agent() ${total === 1 ? "call" : "calls"} ${verb}: ${
        causes.map(([cause, n]) => `${cause} ${n}`).join(", ")
      }`,
    );
  }
  const thrown = status.script_errors.length + status.script_errors_dropped;
  const first = status.script_errors[0];
  if (thrown > 0) {
    lines.push(
      `svc: ${thrown} ${thrown === 1 ? "item" : "items"} of parallel()/pipeline() threw ` +
        `and became null${first ? `; the first: ${describeItemError(first)}` : ""}`,
    );
  }
  return lines;
}

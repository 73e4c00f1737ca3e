import { RunManager, type RunStatus } from "../src/engine/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { jsonProblem, type JsonValue } from "../src/schemas/mod.ts";
import { openHost } from "./host.ts";
import { createNarrationPrinter } from "./narration.ts";
import { printJson, printLine } from "./terminal.ts";

/** Options of `svc workflow run`, as commander hands them over. */
export interface WorkflowRunFlags {
  args?: string;
  fakeDispatch?: boolean;
  timeout?: string;
  isolation?: string;
  sandboxDefault?: string;
  sandboxMax?: string;
  workdir?: string;
  budgetTokens?: string;
  budgetUsd?: string;
  resumeFrom?: string;
  json?: boolean;
}

/** Exit statuses of the command line (docs/CLI.md). */
export const EXIT = { ok: 0, failed: 1, usage: 2, timeout: 124 } as const;

/** A problem with what the user typed: printed as is, exit status 2. */
export class UsageError extends Error {}

/** The reason a script file cannot be read, for people. */
function unreadable(path: string, error: unknown): UsageError {
  const grant = platform().missingGrant(error);
  const name = error instanceof Error ? error.name : "";
  const reason = grant !== undefined
    ? `svc may not read it (it needs ${grant})`
    : name === "NotFound"
    ? "no such file"
    : name === "PermissionDenied"
    ? "permission denied"
    : "it cannot be read";
  return new UsageError(`Cannot read script '${path}': ${reason}`);
}

async function readScript(path: string): Promise<string> {
  const p = platform();
  let info;
  try {
    info = await p.stat(path);
  } catch (error) {
    throw unreadable(path, error);
  }
  if (info.isDirectory) throw new UsageError(`Cannot read script '${path}': it is a directory`);
  try {
    return await p.readTextFile(path);
  } catch (error) {
    throw unreadable(path, error);
  }
}

function parseArgs(raw: string | undefined): JsonValue | undefined {
  if (raw === undefined) return undefined;
  let value: JsonValue;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    const reason = error instanceof Error ? error.message : "invalid JSON";
    throw new UsageError(`Cannot parse --args: it must be JSON (${reason})`);
  }
  const problem = jsonProblem(value);
  if (problem !== undefined) throw new UsageError(`Cannot use --args: it ${problem}`);
  return value;
}

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

function basename(path: string): string {
  return path.split("/").filter(Boolean).at(-1) ?? path;
}

function exitStatus(status: RunStatus): number {
  switch (status.state) {
    case "succeeded":
      return EXIT.ok;
    case "timeout":
      return EXIT.timeout;
    default:
      return EXIT.failed;
  }
}

/**
 * `svc workflow run <script>`: runs the script to its end, narrates on standard error and
 * prints the product (or with --json the status object) on standard output.
 */
export async function workflowRun(scriptPath: string, flags: WorkflowRunFlags): Promise<number> {
  const script = await readScript(scriptPath);
  // The real folder of the script: the relative refs of its workflow() calls start there.
  const real = await platform().realPath(scriptPath);
  const request: Record<string, unknown> = {
    script,
    filename: basename(scriptPath),
    script_dir: real.slice(0, real.lastIndexOf("/")) || "/",
    args: parseArgs(flags.args),
    timeout: parseTimeout(flags.timeout),
    isolation: flags.isolation,
    sandbox_default: flags.sandboxDefault,
    sandbox_max: flags.sandboxMax,
    workdir: flags.workdir,
    fake_dispatch: flags.fakeDispatch ?? false,
  };
  request.budget_tokens = parseNumber("--budget-tokens", flags.budgetTokens, true);
  request.budget_usd = parseNumber("--budget-usd", flags.budgetUsd, false);
  request.resume_from = flags.resumeFrom;
  await using host = await openHost();
  return await follow(await host.runs(), request, flags);
}

async function follow(
  manager: RunManager,
  request: Record<string, unknown>,
  flags: WorkflowRunFlags,
): Promise<number> {
  const p = platform();
  let started: RunStatus;
  try {
    started = await manager.start(request);
  } catch (error) {
    // Refusals of what the user asked for (bad script, unknown run to resume) are usage errors.
    if (error instanceof SvcError && [400, 404, 409].includes(error.status)) {
      throw new UsageError(error.message);
    }
    throw error;
  }
  const runId = started.run_id;
  const printer = createNarrationPrinter({ line: printLine });
  const unsubscribe = manager.subscribe(runId, printer.onEvent);
  printLine(
    `svc: run ${runId} started (${started.filename}${started.name ? `, "${started.name}"` : ""}${
      started.resumed_from ? `, resuming ${started.resumed_from}` : ""
    })`,
  );

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
  }
  if (flags.json) await printJson(status, 2);
  else if (status.state === "succeeded") {
    await printJson(status.result ?? null);
  }
  return exitStatus(status);
}

import { describeItemError, RunManager, type RunStatus } from "../src/engine/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { platform } from "../src/platform/mod.ts";
import {
  CONCURRENCY_LIMIT,
  jsonProblem,
  type JsonValue,
  MAX_AGENTS_LIMIT,
} from "../src/schemas/mod.ts";
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
  maxAgents?: string;
  concurrency?: string;
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

/** A whole-number limit flag, from 1 to `max`. */
function parseLimit(flag: string, raw: string | undefined, max: number): number | undefined {
  const value = parseNumber(flag, raw, true);
  if (value !== undefined && value > max) {
    throw new UsageError(`Cannot use ${flag} '${raw}': it must be a whole number from 1 to ${max}`);
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
  const request: Record<string, unknown> = {
    script,
    filename: basename(scriptPath),
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
  request.max_agents = parseLimit("--max-agents", flags.maxAgents, MAX_AGENTS_LIMIT);
  request.concurrency = parseLimit("--concurrency", flags.concurrency, CONCURRENCY_LIMIT);
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
  }
  for (const line of failureLines(status)) printLine(line);
  if (flags.json) await printJson(status, 2);
  else if (status.state === "succeeded") {
    await printJson(status.result ?? null);
  }
  return exitStatus(status);
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

/**
 * Run management on the command line: `svc workflow list|status|journal|watch|cancel`. Every
 * command goes through the services as the local caller, so a run started in any process (or
 * terminal) on the same `SVC_HOME` can be listed, read, followed and stopped.
 * @module
 */
import type { Command } from "commander";
import { TERMINAL_STATES } from "../src/engine/mod.ts";
import type { JournalEntry, RunState, RunStatus } from "../src/services/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { EXIT, exitStatusOfState } from "./exit_status.ts";
import { openHost } from "./host.ts";
import { endingText, narrateRun, printerFor, reportEnd } from "./run_report.ts";
import { parseOutputLevel } from "./progress_lines.ts";
import { formatAge, formatCost, renderTable, type TableColumn } from "./table.ts";
import { printJson, printLine, printOut } from "./terminal.ts";
import { UsageError } from "./workflow_input.ts";

const RUN_STATES: readonly RunState[] = ["queued", "running", ...TERMINAL_STATES];
/** Longest result preview in `workflow journal`, in characters. */
const PREVIEW = 60;

/** `--state a,b`: known states only. */
function parseStates(raw: string | undefined): RunState[] | undefined {
  if (raw === undefined) return undefined;
  const states = raw.split(",").map((s) => s.trim()).filter(Boolean);
  for (const state of states) {
    if (!(RUN_STATES as readonly string[]).includes(state)) {
      throw new UsageError(
        `Cannot use --state '${raw.slice(0, 100)}': '${state.slice(0, 40)}' is no run state (${
          RUN_STATES.join(", ")
        })`,
      );
    }
  }
  return states as RunState[];
}

function parseWhole(flag: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(
      `Cannot use ${flag} '${raw.slice(0, 40)}': it must be a whole number, at least ${min}`,
    );
  }
  return value;
}

function callsDone(status: RunStatus): number {
  const { calls } = status;
  return calls.succeeded + calls.failed + calls.replayed + calls.skipped;
}

const RUN_COLUMNS: TableColumn<RunStatus>[] = [
  { header: "ID", value: (r) => r.run_id },
  { header: "NAME", value: (r) => r.name ?? r.filename },
  { header: "STATE", value: (r) => r.state },
  { header: "CALLS", value: (r) => String(callsDone(r)), align: "right" },
  { header: "COST", value: (r) => formatCost(r.journal.usage.cost_usd), align: "right" },
  { header: "AGE", value: (r) => formatAge(r.created_at), align: "right" },
];

async function workflowList(
  flags: { state?: string; limit?: string; json?: boolean },
): Promise<number> {
  const states = parseStates(flags.state);
  const limit = parseWhole("--limit", flags.limit, 1) ?? 20;
  await using host = await openHost();
  const runs = await host.runs.list(host.caller, {
    limit: Math.min(limit, 1000),
    ...(states ? { states } : {}),
  });
  if (flags.json) await printJson(runs, 2);
  else await printOut(renderTable(RUN_COLUMNS, runs, { empty: "No runs." }));
  return EXIT.ok;
}

/** The tier a run got, and what confined its guest: `unsafe-local (bubblewrap)`. */
function isolationOf(status: RunStatus): string {
  const sandbox = status.guest_sandbox;
  if (!sandbox) return `${status.isolation} (guest not started)`;
  if (sandbox.hardened) return `${status.isolation} (${sandbox.kind})`;
  return `${status.isolation} (no OS sandbox: ${sandbox.note ?? "none"})`;
}

/** A run's status for people: what it is, where it stands, what it cost, how it ended. */
export function statusLines(status: RunStatus, now: number = Date.now()): string[] {
  const { calls, journal, budget } = status;
  const lines = [
    `run       ${status.run_id}${status.name ? ` "${status.name}"` : ""} (${status.filename})`,
    `state     ${status.error ? endingText(status) : status.state}`,
    `owner     ${status.owner}`,
    ...(status.started_by ? [`started   by ${status.started_by.text}`] : []),
    `isolation ${isolationOf(status)}`,
    `created   ${status.created_at} (${formatAge(status.created_at, now)} ago)`,
  ];
  if (status.started_at) {
    const end = status.ended_at ? Date.parse(status.ended_at) : now;
    lines.push(`duration  ${((end - Date.parse(status.started_at)) / 1000).toFixed(1)} s`);
  }
  if (status.resumed_from) lines.push(`resumed   from ${status.resumed_from}`);
  lines.push(
    `calls     ${calls.total} (${calls.running} running, ${calls.queued} queued, ` +
      `${calls.succeeded} succeeded, ${calls.failed} failed, ${calls.replayed} replayed, ` +
      `${calls.skipped} skipped)`,
    `usage     ${journal.usage.input_tokens} tokens in, ${journal.usage.output_tokens} out, ` +
      `cost ${formatCost(journal.usage.cost_usd)}`,
  );
  if (budget.total !== null) {
    lines.push(`budget    ${budget.spent} of ${budget.total} ${budget.unit}`);
  }
  for (const condition of status.conditions) {
    lines.push(`condition ${condition.type}: ${condition.message}`);
  }
  const phases = status.narration.filter((e) => e.kind === "phase").map((e) => e.text);
  if (phases.length > 0) lines.push(`phases    ${phases.join(" → ")}`);
  if (status.state === "succeeded") {
    lines.push(`result    ${preview(JSON.stringify(status.result ?? null), 200)}`);
  }
  return lines;
}

function preview(text: string, max: number = PREVIEW): string {
  const flat = text.replace(/\s+/g, " ");
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

async function workflowStatus(runId: string, flags: { json?: boolean }): Promise<number> {
  await using host = await openHost();
  const status = await host.runs.get(runId, host.caller);
  if (!status) throw notFound(runId);
  if (flags.json) await printJson(status, 2);
  else await printOut(statusLines(status));
  return EXIT.ok;
}

const JOURNAL_COLUMNS: TableColumn<JournalEntry>[] = [
  { header: "SEQ", value: (e) => String(e.seq), align: "right" },
  { header: "LABEL", value: (e) => e.label ?? "", maxWidth: 24 },
  { header: "PHASE", value: (e) => e.phase ?? "", maxWidth: 20 },
  { header: "PROVIDER", value: (e) => e.provider ?? "-", maxWidth: 16 },
  { header: "OUTCOME", value: (e) => e.outcome },
  {
    header: "TOKENS",
    value: (e) => String(e.usage.input_tokens + e.usage.output_tokens),
    align: "right",
  },
  { header: "COST", value: (e) => formatCost(e.cost_usd), align: "right" },
  {
    header: "RESULT",
    value: (e) =>
      e.result === undefined
        ? (e.reason ?? "")
        : preview(typeof e.result === "string" ? e.result : JSON.stringify(e.result)),
    maxWidth: PREVIEW,
  },
];

async function workflowJournal(runId: string, flags: { json?: boolean }): Promise<number> {
  await using host = await openHost();
  const journal = await host.runs.journal(runId, host.caller);
  if (flags.json) await printJson(journal, 2);
  else await printOut(renderTable(JOURNAL_COLUMNS, journal, { empty: "No calls." }));
  return EXIT.ok;
}

/**
 * Follows a run started anywhere with the narration of `workflow run`, from its first event
 * or after `--after`; Ctrl-C stops watching (the run goes on) and says how to resume.
 */
async function workflowWatch(
  runId: string,
  flags: { after?: string; json?: boolean; output?: string },
): Promise<number> {
  const after = parseWhole("--after", flags.after, 0);
  const output = parseOutputLevel(flags.output, "tools");
  await using host = await openHost();
  const p = platform();
  const known = await host.runs.get(runId, host.caller);
  if (!known) throw notFound(runId);
  printLine(`svc: watching run ${runId} (${known.filename}), ${known.state}`);
  const stop = new AbortController();
  const removeInterrupt = p.onInterrupt(() => stop.abort());
  let last: number;
  try {
    last = await narrateRun(host.runs, runId, {
      caller: host.caller,
      printer: printerFor(output),
      ...(after !== undefined ? { after } : {}),
      signal: stop.signal,
    });
  } finally {
    removeInterrupt();
  }
  if (stop.signal.aborted) {
    printLine(
      `svc: stopped watching after event ${last}; the run goes on. ` +
        `Resume with: svc workflow watch ${runId} --after ${last}`,
    );
    return EXIT.interrupted;
  }
  const status = await host.runs.wait(runId, host.caller);
  await reportEnd(status, { json: flags.json });
  return exitStatusOfState(status.state);
}

/** Cancels a run wherever it runs, and (unless --no-wait) waits until it has stopped. */
async function workflowCancel(runId: string, flags: { wait?: boolean }): Promise<number> {
  await using host = await openHost();
  const asked = await host.runs.cancel(runId, host.caller);
  if (TERMINAL_STATES.has(asked.state)) {
    printLine(`svc: run ${runId} had already ended: ${asked.state}`);
    return EXIT.ok;
  }
  if (flags.wait === false) {
    printLine(`svc: asked run ${runId} to stop`);
    return EXIT.ok;
  }
  const status = await host.runs.wait(runId, host.caller);
  printLine(`svc: run ${runId} ${status.state}`);
  return EXIT.ok;
}

function notFound(runId: string): SvcError {
  return new SvcError("not_found", `Cannot find run '${runId}': no such run`);
}

/** Adds `list`, `status`, `journal`, `watch` and `cancel` to `svc workflow`. */
export function addRunCommands(
  workflow: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  workflow.command("list").description("Your recent runs: id, name, state, calls, cost, age")
    .option("--state <states>", "only runs in these states (comma-separated)")
    .option("--limit <n>", "how many runs (default 20)")
    .option("--json", "print the run statuses as JSON")
    .exitOverride()
    .action((flags) => run(() => workflowList(flags)));
  workflow.command("status").argument("<run_id>")
    .description("A run's status and a readable summary (--json: the whole status object)")
    .option("--json", "print the status object")
    .exitOverride()
    .action((id: string, flags) => run(() => workflowStatus(id, flags)));
  workflow.command("journal").argument("<run_id>")
    .description("One line per agent() call: seq, label, phase, provider, outcome, tokens, cost")
    .option("--json", "print every journal entry whole")
    .exitOverride()
    .action((id: string, flags) => run(() => workflowJournal(id, flags)));
  workflow.command("watch").argument("<run_id>")
    .description("Follow a run started anywhere, with the narration of `workflow run`")
    .option("--after <seq>", "start after this event (from the hint a stopped watch prints)")
    .option(
      "--output <level>",
      "calls' live output: none, tools (tool uses, files, errors; the default) or all (text too)",
    )
    .option("--json", "at the end, print the status object instead of the result")
    .exitOverride()
    .action((id: string, flags) => run(() => workflowWatch(id, flags)));
  workflow.command("cancel").argument("<run_id>")
    .description("Stop a run wherever it runs (idempotent); waits until it has stopped")
    .option("--no-wait", "return once the cancel is asked for")
    .exitOverride()
    .action((id: string, flags) => run(() => workflowCancel(id, flags)));
}

import { describeItemError, type RunManager, type RunStatus } from "../src/engine/mod.ts";
import type { Caller } from "../src/services/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { createNarrationPrinter, type NarrationPrinter } from "./narration.ts";
import type { OutputLevel } from "./progress_lines.ts";
import { type RerunFlags, resumeCommand } from "./resume_hint.ts";
import { printJson, printLine, visible } from "./terminal.ts";

/**
 * How the narration printer draws: a status line on a terminal, counts lines elsewhere; calls'
 * live output at `output` (none by default).
 */
export function printerFor(output: OutputLevel = "none"): NarrationPrinter {
  const p = platform();
  const columns = p.stderrColumns();
  return createNarrationPrinter({
    line: printLine,
    visible,
    output,
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

/**
 * Narrates a run from its event feed, wherever it runs, from after position `after` until its
 * end (or `signal`). Returns the last position printed, for a later `--after`.
 */
export async function narrateRun(
  runs: RunManager,
  runId: string,
  options: { caller: Caller; printer: NarrationPrinter; after?: number; signal?: AbortSignal },
): Promise<number> {
  let last = options.after ?? -1;
  try {
    for await (
      const item of runs.events(runId, options.caller, {
        ...(options.after !== undefined ? { after: options.after } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      })
    ) {
      last = item.seq;
      options.printer.onEvent(item.event);
    }
  } finally {
    options.printer.flush();
  }
  return last;
}

/**
 * How a run ended, in a few words: `cancelled by alice`, `timeout: the run exceeded its timeout
 * of 90 s`. A message that already starts with the state (a cancel's) is not prefixed with it
 * again, so that the state is said once.
 */
export function endingText(status: Pick<RunStatus, "state" | "error">): string {
  const message = status.error?.message ?? "no reason recorded";
  return message.startsWith(status.state) ? message : `${status.state}: ${message}`;
}

/**
 * The end of a run as `workflow run` and `workflow watch` print it: conditions, the end line
 * (with how to resume a run that did not succeed), what failed along the way, then the product
 * (or with `json` the whole status) on standard output.
 */
export async function reportEnd(
  status: RunStatus,
  options: { json?: boolean; ref?: string; flags?: RerunFlags } = {},
): Promise<void> {
  const runId = status.run_id;
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
    printLine(`svc: run ${runId} ${endingText(status)}`);
    printLine(
      `svc: resume it with: ${
        resumeCommand(status, {
          ...(options.ref ? { ref: options.ref } : {}),
          ...(options.flags ? { flags: options.flags } : {}),
        })
      }`,
    );
  }
  for (const line of failureLines(status)) printLine(line);
  if (options.json) await printJson(status, 2);
  else if (status.state === "succeeded") await printJson(status.result ?? null);
}

const REFUSALS = new Set(["agent_limit", "budget", "unpriced"]);

/**
 * What went wrong without failing the run, below its end line: calls that failed and calls
 * that were refused, by cause, and items of parallel()/pipeline() that threw. Nothing when
 * nothing did.
 */
export function failureLines(status: RunStatus): string[] {
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

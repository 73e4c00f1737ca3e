import type { CallCounts, RunEvent, UsageTotals } from "../src/engine/mod.ts";
import { type OutputLevel, progressLines } from "./progress_lines.ts";

/** Where a terminal's status line is drawn. */
export interface StatusLineTerminal {
  /** Writes svc's own control sequences and text as they are (the text is already safe). */
  write(raw: string): void;
  /** Columns of the terminal now. */
  columns(): number;
}

/** Options of {@linkcode createNarrationPrinter}. */
export interface NarrationPrinterOptions {
  /** Prints one line (without its newline); the caller makes it safe for a terminal. */
  line: (text: string) => void;
  /**
   * When standard error is a terminal: the call counts live in one status line, redrawn in
   * place, and everything else prints above it. Without it, counts print as lines, at most one
   * a second.
   */
  terminal?: StatusLineTerminal;
  /** Makes a status line's text safe (control characters shown); identity when absent. */
  visible?: (text: string) => string;
  /** The clock, in ms (tests). Default `Date.now`. */
  now?: () => number;
  /** The least time between two counts lines without a terminal, in ms. Default 1000. */
  countsIntervalMs?: number;
  /** How much of the calls' live output to print (`progress` events). @default "none" */
  output?: OutputLevel;
}

/** What {@linkcode createNarrationPrinter} returns. */
export interface NarrationPrinter {
  onEvent: (event: RunEvent) => void;
  /** Prints what is still waiting and takes the status line away; the run has ended. */
  flush: () => void;
}

const CLEAR_LINE = "\r\x1b[K";
/** How long the first counts wait after the first change, in ms. */
const FIRST_SETTLE_MS = 100;
/** The least time between two redraws of the status line, in ms. */
const TERMINAL_INTERVAL_MS = 100;

/** `12 s`, `3 min 5 s`, `1 h 2 min`. */
function elapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function countsText(calls: CallCounts): string {
  const done = calls.succeeded + calls.failed + calls.replayed + calls.skipped;
  const details = [
    calls.replayed > 0 ? `${calls.replayed} replayed` : "",
    calls.failed > 0 ? `${calls.failed} failed` : "",
    calls.skipped > 0 ? `${calls.skipped} skipped` : "",
  ].filter(Boolean);
  return `calls: ${calls.running} running, ${calls.queued} queued, ${done} done` +
    (details.length > 0 ? ` (${details.join(", ")})` : "");
}

function usageText(usage: UsageTotals | undefined): string {
  if (!usage) return "";
  const tokens = usage.input_tokens + usage.output_tokens;
  const parts = tokens > 0 ? [`${tokens.toLocaleString("en-US")} tokens`] : [];
  if (usage.cost_usd === null) parts.push("cost unknown");
  else if (usage.cost_usd > 0) parts.push(`$${usage.cost_usd.toFixed(4)}`);
  return parts.join(", ");
}

/** The line printed above the status for a run event; undefined for one that prints none. */
function eventLine(event: RunEvent): string | undefined {
  switch (event.type) {
    case "narration": {
      const { entry } = event;
      if (entry.kind === "phase") return `== ${entry.text}`;
      if (entry.kind === "log") return entry.text;
      if (entry.kind === "call") return `! ${entry.text}`;
      if (entry.kind === "warning") return `warning: ${entry.text}`;
      return `[script ${entry.stream ?? "output"}] ${entry.text}`;
    }
    case "security":
      return `! dropped from the guest (${event.event.kind}): ${event.event.detail}`;
    case "approval": {
      // The label comes from the script: the same terminal-safe path as narration prints it.
      const call = `agent call #${event.seq}${event.label ? ` (${event.label})` : ""}`;
      return event.state === "pending"
        ? `? ${call} waits for a person to approve its full sandbox: approval ${event.approval_id}`
        : `? ${call}: approval ${event.approval_id} ${event.state}`;
    }
    default:
      return undefined;
  }
}

/**
 * Turns run events into what the command line prints on standard error: phase titles, log
 * lines, stray output, failed calls, and the progress of the calls. On a terminal the progress
 * is one status line updated in place (phase, calls running/queued/done/failed, elapsed time,
 * tokens and cost so far) with everything else printed above it; elsewhere a counts line is
 * printed only when the counts changed, at most one a second, and once more at the end.
 */
export function createNarrationPrinter(options: NarrationPrinterOptions): NarrationPrinter {
  const { terminal } = options;
  const now = options.now ?? Date.now;
  const interval = options.countsIntervalMs ?? 1000;
  const visible = options.visible ?? ((text: string) => text);
  const started = now();
  let phase: string | undefined;
  let calls: CallCounts | undefined;
  let usage: UsageTotals | undefined;
  // Without a terminal: the last counts line printed, when, and a timer for a pending one.
  let printed = "";
  let printedAt = -Infinity;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // On a terminal: whether the status line is on screen, and its clock.
  let shown = false;
  let drawnAt = -Infinity;
  let ticker: ReturnType<typeof setInterval> | undefined;

  function statusText(): string {
    const parts = [
      calls ? countsText(calls) : "starting",
      elapsed(now() - started),
      usageText(usage),
    ].filter(Boolean);
    return `${phase !== undefined ? `[${phase}] ` : ""}${parts.join(" · ")}`;
  }

  function draw(): void {
    if (!terminal) return;
    const width = Math.max(20, terminal.columns() - 1);
    const text = visible(statusText());
    const clipped = text.length > width ? `${text.slice(0, width - 1)}…` : text;
    terminal.write(`${CLEAR_LINE}${clipped}`);
    shown = true;
    drawnAt = now();
    ticker ??= setInterval(draw, 1000);
  }

  function printAbove(text: string): void {
    if (terminal && shown) terminal.write(CLEAR_LINE);
    options.line(text);
    if (terminal && calls) draw();
  }

  function printCounts(): void {
    if (!calls) return;
    const line = countsText(calls);
    if (line === printed) return;
    printed = line;
    printedAt = now();
    options.line(line);
  }

  /**
   * A burst of changes (a wave of calls starting) settles within one task: print or draw after
   * it, and then no more often than the interval (a tenth of a second for the status line).
   */
  function countsChanged(): void {
    if (timer !== undefined) return;
    const [last, gap, act] = terminal
      ? [drawnAt, TERMINAL_INTERVAL_MS, draw]
      : [printedAt, interval, printCounts];
    // The first counts line waits a moment, so that it shows the opening wave of calls whole.
    const first = last === -Infinity && !terminal;
    const wait = first ? FIRST_SETTLE_MS : Math.max(0, last + gap - now());
    timer = setTimeout(() => {
      timer = undefined;
      act();
    }, wait);
  }

  const progress = progressLines(options.output ?? "none");
  // A replayed prefix is one line however many events report it (the guest reports it in
  // batches, cut by the script's own log lines): printed before the next call of this run.
  let replayed: { count: number; from: string } | undefined;

  function printReplayed(): void {
    if (!replayed) return;
    const { count, from } = replayed;
    replayed = undefined;
    printAbove(`replayed ${count} ${count === 1 ? "call" : "calls"} from run ${from}`);
  }

  function onEvent(event: RunEvent): void {
    if (event.type === "calls_replayed") {
      if (replayed && replayed.from !== event.from) printReplayed();
      replayed = { count: (replayed?.count ?? 0) + event.count, from: event.from };
      return;
    }
    if (event.type !== "narration" && event.type !== "calls") printReplayed();
    if (event.type === "progress") {
      for (const line of progress.lines(event.seq, event.items)) printAbove(line);
      return;
    }
    if (event.type === "call") { for (const line of progress.end(event.seq)) printAbove(line); }
    if (event.type === "calls") {
      calls = event.calls;
      usage = event.usage;
      countsChanged();
      return;
    }
    if (event.type === "narration" && event.entry.kind === "phase") phase = event.entry.text;
    const line = eventLine(event);
    if (line !== undefined) printAbove(line);
  }

  function flush(): void {
    printReplayed();
    if (ticker !== undefined) clearInterval(ticker);
    if (timer !== undefined) clearTimeout(timer);
    ticker = timer = undefined;
    if (terminal) {
      if (shown) terminal.write(CLEAR_LINE);
      shown = false;
      if (calls) options.line(countsText(calls));
      return;
    }
    printCounts();
  }

  return { onEvent, flush };
}

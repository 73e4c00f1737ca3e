import type { CallCounts, RunEvent } from "../src/engine/mod.ts";

/** Options of {@linkcode createNarrationPrinter}. */
export interface NarrationPrinterOptions {
  /** Prints one line (without its newline); the caller makes it safe for a terminal. */
  line: (text: string) => void;
}

/** What {@linkcode createNarrationPrinter} returns. */
export interface NarrationPrinter {
  onEvent: (event: RunEvent) => void;
  /** Prints call counts still waiting for their turn. */
  flush: () => void;
}

/**
 * Turns run events into the human narration the command line prints on standard error:
 * phase titles, log lines, stray output, failed calls, and calls running/queued/done.
 * Call counts are coalesced: a burst of changes within one task prints one line.
 */
export function createNarrationPrinter(options: NarrationPrinterOptions): NarrationPrinter {
  const { line: write } = options;
  let pending: CallCounts | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let printed = "";

  function flush(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (!pending) return;
    const calls = pending;
    pending = undefined;
    const done = calls.succeeded + calls.failed + calls.replayed + calls.skipped;
    const details = [
      calls.replayed > 0 ? `${calls.replayed} replayed` : "",
      calls.failed > 0 ? `${calls.failed} failed` : "",
      calls.skipped > 0 ? `${calls.skipped} skipped` : "",
    ].filter(Boolean);
    const line = `calls: ${calls.running} running, ${calls.queued} queued, ${done} done` +
      (details.length > 0 ? ` (${details.join(", ")})` : "");
    if (line === printed) return;
    printed = line;
    write(line);
  }

  function onEvent(event: RunEvent): void {
    if (event.type !== "calls") flush();
    switch (event.type) {
      case "narration": {
        const { entry } = event;
        if (entry.kind === "phase") write(`== ${entry.text}`);
        else if (entry.kind === "log") write(entry.text);
        else if (entry.kind === "call") write(`! ${entry.text}`);
        else if (entry.kind === "warning") write(`warning: ${entry.text}`);
        else write(`[script ${entry.stream ?? "output"}] ${entry.text}`);
        return;
      }
      case "security":
        write(`! dropped from the guest (${event.event.kind}): ${event.event.detail}`);
        return;
      case "calls":
        pending = event.calls;
        timer ??= setTimeout(flush, 0);
        return;
      case "state":
      case "end":
        return;
    }
  }

  return { onEvent, flush };
}

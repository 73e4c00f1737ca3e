import type { CallCounts, RunEvent } from "../src/engine/mod.ts";

/** Options of {@linkcode createNarrationPrinter}. */
export interface NarrationPrinterOptions {
  write: (text: string) => void;
  /** Least time between two call-count lines, in ms; the last counts are always printed. Default 250. */
  callsEveryMs?: number;
}

/**
 * Turns run events into the human narration the command line prints on standard error:
 * phase titles, log lines, stray output, failed calls, and calls running/queued/done.
 */
export function createNarrationPrinter(options: NarrationPrinterOptions): {
  onEvent: (event: RunEvent) => void;
  flush: () => void;
} {
  const { write } = options;
  const every = options.callsEveryMs ?? 250;
  let last = 0;
  let pending: CallCounts | undefined;
  let printed = "";

  function printCalls(calls: CallCounts): void {
    const done = calls.succeeded + calls.failed;
    const line = `calls: ${calls.running} running, ${calls.queued} queued, ${done} done` +
      (calls.failed > 0 ? ` (${calls.failed} failed)` : "");
    if (line === printed) return;
    printed = line;
    last = Date.now();
    pending = undefined;
    write(`${line}\n`);
  }

  function onEvent(event: RunEvent): void {
    switch (event.type) {
      case "narration": {
        const { entry } = event;
        if (entry.kind === "phase") write(`== ${entry.text}\n`);
        else if (entry.kind === "log") write(`${entry.text}\n`);
        else if (entry.kind === "call") write(`! ${entry.text}\n`);
        else write(`[script ${entry.stream ?? "output"}] ${entry.text}\n`);
        return;
      }
      case "security":
        write(`! dropped from the guest (${event.event.kind}): ${event.event.detail}\n`);
        return;
      case "calls":
        if (Date.now() - last >= every) printCalls(event.calls);
        else pending = event.calls;
        return;
      case "state":
        return;
      case "end":
        flush();
        return;
    }
  }

  function flush(): void {
    if (pending) printCalls(pending);
  }

  return { onEvent, flush };
}

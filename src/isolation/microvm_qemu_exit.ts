/**
 * The guest's end, as a `qemu` VM tells it: QEMU exits 0 whatever the guest did, so the VM's
 * init writes `<token> <status>` as the last line of the guest's stderr port. This wrapper takes
 * that line out of the stderr the host sees and makes it the process's exit status; a VM that
 * stopped without it (killed, crashed, its kernel panicked) ends with a line that says so.
 * @module
 */
import type { ChildProcess, ExitStatus } from "../platform/mod.ts";
import { guestExit } from "./bubblewrap.ts";

/** How long the status waits, after QEMU ended, for the rest of its stderr. */
const DRAIN_MS = 2_000;
const NEWLINE = 0x0a;

/** What a VM that ended without its init's exit line reports on stderr. */
export function vmStoppedLine(status: ExitStatus): string {
  const how = status.signal
    ? `QEMU was killed by ${status.signal}`
    : `QEMU exited with ${status.code}`;
  return `svc: the micro-VM stopped before its guest ended (${how})`;
}

/** `child` (a QEMU) as the guest inside it: its stderr without the exit line, its status the guest's. */
export function withVmExit(child: ChildProcess, token: string): ChildProcess {
  const pattern = new RegExp(`^${token} ([0-9]{1,3})\r?$`);
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let code: number | undefined;
  let partial = new Uint8Array(0);
  let drained!: () => void;
  const ended = new Promise<void>((resolve) => (drained = resolve));
  let qemuStatus: ExitStatus | undefined;
  // A VM the host killed (the run ended, timed out, was cancelled) stopped as it was told.
  let killed = false;
  /** Complete lines pass at once (all but the exit line); a partial one waits for its end. */
  function lines(chunk: Uint8Array, controller: TransformStreamDefaultController<Uint8Array>) {
    const bytes = new Uint8Array(partial.length + chunk.length);
    bytes.set(partial);
    bytes.set(chunk, partial.length);
    let start = 0;
    for (let i = bytes.indexOf(NEWLINE); i >= 0; i = bytes.indexOf(NEWLINE, start)) {
      const line = bytes.subarray(start, i + 1);
      const match = line.length < 80 ? pattern.exec(decoder.decode(line.subarray(0, -1))) : null;
      if (match) code = Number(match[1]);
      else controller.enqueue(line.slice());
      start = i + 1;
    }
    partial = bytes.slice(start);
  }
  const stderr = child.stderr.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>(
      {
        transform: lines,
        async flush(controller) {
          const status = qemuStatus ?? await child.status;
          const stopped = code === undefined && !killed ? `${vmStoppedLine(status)}\n` : "";
          const line = partial.length > 0 ? `${decoder.decode(partial)}\n${stopped}` : stopped;
          if (line !== "") controller.enqueue(encoder.encode(line));
          drained();
        },
      },
      undefined,
      { highWaterMark: 256 },
    ),
  );
  const status = child.status.then(async (status): Promise<ExitStatus> => {
    qemuStatus = status;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      ended,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, DRAIN_MS))),
    ]);
    clearTimeout(timer);
    if (code !== undefined) return guestExit({ code, signal: null });
    // No exit line: the VM itself stopped; a QEMU that exited "cleanly" still failed the guest.
    return status.signal !== null
      ? status
      : { code: status.code === 0 ? 1 : status.code, signal: null };
  });
  return {
    pid: child.pid,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr,
    status,
    kill(signal) {
      killed = true;
      child.kill(signal);
    },
  };
}

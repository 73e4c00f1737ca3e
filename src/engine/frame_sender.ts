/**
 * The host's writes to a guest's stdin, one frame a line. The frames sent in one turn of the
 * event loop (the answers of calls that end together) go to the pipe in one write, at the end
 * of that turn: a wave of answers costs one system call and one wake-up of the guest, not one
 * each, and the write (which wakes the guest's process, the costliest system call of a step)
 * comes after the turn's own work, the ledger commit of the answers' entries issued first.
 * @module
 */

/** Sends frames to a guest; {@linkcode FrameSender.close} when the session ends. */
export interface FrameSender {
  /** Sends one frame; resolves once the write that carries it is done (never rejects). */
  send(message: unknown): Promise<void>;
  /** Writes what is pending now and stops: later frames are dropped. */
  close(): void;
}

/**
 * A {@linkcode FrameSender} over `writer`, in order: frames are never reordered or split.
 * `beforeWrite` runs just before each write: what the guest may see from then on.
 */
export function frameSender(
  writer: WritableStreamDefaultWriter<Uint8Array>,
  beforeWrite: () => void = () => {},
): FrameSender {
  const encoder = new TextEncoder();
  // A message to oneself runs after the current turn's microtasks, without a timer's delay.
  const { port1, port2 } = new MessageChannel();
  let pending = "";
  let closed = false;
  let written: Promise<void> = Promise.resolve();
  let done: (() => void) | undefined;
  const flush = () => {
    const text = pending;
    const settle = done;
    pending = "";
    done = undefined;
    if (text === "") return;
    beforeWrite();
    writer.write(encoder.encode(text)).catch(() => {}).then(settle);
  };
  port2.onmessage = flush;
  return {
    send(message) {
      if (closed) return Promise.resolve();
      if (pending === "") {
        written = new Promise((resolve) => (done = resolve));
        port1.postMessage(null);
      }
      pending += `${JSON.stringify(message)}\n`;
      return written;
    },
    close() {
      if (closed) return;
      closed = true;
      flush();
      port1.close();
      port2.close();
    },
  };
}

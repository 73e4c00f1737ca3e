/**
 * The host's writes to a guest's stdin, one frame a line. The frames sent in one turn of the
 * event loop (the answers of calls that end together) go to the pipe in one write: a wave of
 * answers costs one system call and one wake-up of the guest, not one each.
 * @module
 */

/** Sends one frame; resolves once the write that carries it is done (never rejects). */
export type FrameSend = (message: unknown) => Promise<void>;

/** A {@linkcode FrameSend} over `writer`, in order: frames are never reordered or split. */
export function frameSender(writer: WritableStreamDefaultWriter<Uint8Array>): FrameSend {
  const encoder = new TextEncoder();
  let pending = "";
  let written: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    const text = pending;
    pending = "";
    return writer.write(encoder.encode(text)).catch(() => {});
  };
  return (message) => {
    if (pending === "") written = Promise.resolve().then(flush);
    pending += `${JSON.stringify(message)}\n`;
    return written;
  };
}

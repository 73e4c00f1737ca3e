/**
 * Bounded reads: a byte stream, or the body of a message (a request, a webhook delivery),
 * kept to a size limit so that an endless or oversized input costs nothing more. Every
 * surface that reads a body reads it here.
 * @module
 */

/**
 * Reads a byte stream to its end, keeping at most `maxBytes`: the stream is cancelled and a
 * `RangeError` thrown as soon as it holds more, so an endless input costs nothing more.
 */
export async function readBounded(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        throw new RangeError(`the input is larger than ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/** A message with a body: a `Request`, or anything shaped like one (a webhook delivery). */
export interface BodySource {
  /** Its headers: a declared `Content-Length` over the limit is refused before reading. */
  readonly headers: Headers;
  /** Its body, or null for none. */
  readonly body: ReadableStream<Uint8Array> | null;
}

/**
 * The body of `message`, at most `maxBytes`, or undefined when it is larger: by its declared
 * `Content-Length` before anything is read, or while reading. No body reads as no bytes.
 * Errors of the stream itself are thrown.
 */
export async function readBody(
  message: BodySource,
  maxBytes: number,
): Promise<Uint8Array | undefined> {
  if (Number(message.headers.get("content-length") ?? "0") > maxBytes) return undefined;
  if (!message.body) return new Uint8Array();
  try {
    return await readBounded(message.body, maxBytes);
  } catch (error) {
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}

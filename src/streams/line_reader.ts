/** One line read from a stream: its text, or how many bytes were dropped because it was too long. */
export type ReadLine = { kind: "line"; text: string } | { kind: "oversize"; bytes: number };

function concat(chunks: Uint8Array[], length: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/**
 * Splits a byte stream into newline-terminated lines without ever holding more than
 * `maxBytes` of one line: a longer line is skipped to its end and reported as oversize.
 * A final line without a newline is yielded too.
 */
export async function* readLines(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<ReadLine> {
  const decoder = new TextDecoder();
  let chunks: Uint8Array[] = [];
  let length = 0;
  let dropped = 0;
  for await (const chunk of stream) {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(10, start);
      const end = newline === -1 ? chunk.length : newline;
      const piece = chunk.subarray(start, end);
      if (dropped > 0 || length + piece.length > maxBytes) {
        dropped += length + piece.length;
        chunks = [];
        length = 0;
      } else if (piece.length > 0) {
        chunks.push(piece.slice());
        length += piece.length;
      }
      if (newline === -1) break;
      if (dropped > 0) {
        yield { kind: "oversize", bytes: dropped };
        dropped = 0;
      } else {
        yield { kind: "line", text: decoder.decode(concat(chunks, length)) };
        chunks = [];
        length = 0;
      }
      start = newline + 1;
    }
  }
  if (dropped > 0) yield { kind: "oversize", bytes: dropped };
  else if (length > 0) yield { kind: "line", text: decoder.decode(concat(chunks, length)) };
}

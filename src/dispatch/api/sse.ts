/**
 * A reader of server-sent events (the `text/event-stream` framing both model APIs stream in).
 * @module
 */

/** One server-sent event: its `event:` name ("message" when absent) and its `data:` lines joined. */
export interface SseEvent {
  event: string;
  data: string;
}

/** Longest event (and line) accepted: a stream that sends more is broken or hostile. */
const MAX_EVENT_CHARS = 8 * 1024 * 1024;

/** Thrown when a stream breaks the framing; providers treat it as a failed answer. */
export class SseFramingError extends Error {}

/**
 * Reads the events of `body` in order. Lines may end in LF, CRLF or CR and may be split across
 * network chunks anywhere (inside a UTF-8 character too); comment lines (`:`) and fields other
 * than `event` and `data` are skipped; an event is dispatched at its blank line, and an
 * unterminated event at the end of the stream is dropped, as the specification says. Leaving the
 * loop early (or an error) cancels the body.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let dataChars = 0;
  let finished = false;
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) {
        buffer += decoder.decode();
        finished = true;
      } else buffer += decoder.decode(value, { stream: true });
      let start = 0;
      while (start < buffer.length) {
        const lf = buffer.indexOf("\n", start);
        const cr = buffer.indexOf("\r", start);
        let end: number;
        if (cr !== -1 && (lf === -1 || cr < lf)) end = cr;
        else if (lf !== -1) end = lf;
        else break;
        // A CR at the very end may be the first half of a CRLF still in flight.
        if (end === cr && end === buffer.length - 1 && !finished) break;
        const line = buffer.slice(start, end);
        start = end + (end === cr && buffer[end + 1] === "\n" ? 2 : 1);
        if (line === "") {
          if (data.length > 0) yield { event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
          dataChars = 0;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        let text = colon === -1 ? "" : line.slice(colon + 1);
        if (text.startsWith(" ")) text = text.slice(1);
        if (field === "event") event = text;
        else if (field === "data") {
          dataChars += text.length;
          if (dataChars > MAX_EVENT_CHARS) {
            throw new SseFramingError("an event of the stream exceeds 8 MiB");
          }
          data.push(text);
        }
      }
      buffer = buffer.slice(start);
      if (buffer.length > MAX_EVENT_CHARS) {
        throw new SseFramingError("a line of the stream exceeds 8 MiB");
      }
      if (finished) return;
    }
  } finally {
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

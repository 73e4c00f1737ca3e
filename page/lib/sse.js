/**
 * Server-sent events over `fetch`: a browser's EventSource cannot send an `Authorization`
 * header, and a token must never go into a URL. Reconnects after a lost connection (a server
 * restart included) with `Last-Event-ID`, so the server continues after the last event seen;
 * an event id that is not newer than the last one is a repeat and is dropped.
 */
import { errorOf } from "./api.js";

const MAX_DELAY_MS = 15_000;

/**
 * Whether event id `id` comes after `last`. Ids are numbers (a run's or task's feed) or
 * dot-separated numbers (`/api/events`: one position per source, each event moves one).
 */
export function isNewer(id, last) {
  if (last === undefined) return true;
  const a = id.split(".").map(Number);
  const b = last.split(".").map(Number);
  if (a.length !== b.length || a.some(Number.isNaN) || b.some(Number.isNaN)) return true;
  return a.some((n, i) => n > b[i]);
}

/**
 * Splits a stream of SSE text into events, as the specification's parser does.
 * @param {(event: {id?: string, event: string, data: string}) => void} emit
 * @returns {{push(text: string): void, retry(): number | undefined}}
 */
export function sseParser(emit) {
  let buffer = "";
  let data = [];
  let name = "";
  let id;
  let retry;
  const line = (text) => {
    if (text === "") {
      if (data.length > 0) emit({ id, event: name || "message", data: data.join("\n") });
      data = [];
      name = "";
      id = undefined;
      return;
    }
    if (text.startsWith(":")) return;
    const colon = text.indexOf(":");
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") name = value;
    else if (field === "id" && !value.includes("\0")) id = value;
    else if (field === "retry" && /^\d+$/.test(value)) retry = Number(value);
  };
  return {
    push(text) {
      buffer += text;
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop() ?? "";
      for (const text of lines) line(text);
    },
    retry: () => retry,
  };
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/**
 * Follows `path` until `signal` aborts, the stream ends for good (204) or the server refuses
 * (401, 403, 404). Events reach `onEvent` with their data parsed; `onStatus` hears
 * `connecting`, `connected`, `reconnecting` (with the attempt and the delay), `ended` and
 * `failed` (with the API error).
 * @param {string} path
 * @param {{
 *   api: import("./api.js").Api,
 *   signal: AbortSignal,
 *   lastEventId?: string,
 *   onEvent: (event: {id?: string, event: string, data: unknown}) => void,
 *   onStatus?: (status: string, detail?: unknown) => void,
 * }} options
 */
export async function followEvents(path, options) {
  const { api, signal, onEvent } = options;
  const onStatus = options.onStatus ?? (() => {});
  let last = options.lastEventId;
  let delay = 2000;
  let failures = 0;
  onStatus("connecting");
  while (!signal.aborted) {
    let reached = false;
    try {
      const headers = api.headers({ accept: "text/event-stream" });
      if (last !== undefined) headers["last-event-id"] = last;
      const response = await fetch(path, { headers, signal, cache: "no-store" });
      if (response.status === 204) {
        onStatus("ended");
        return;
      }
      if ([400, 401, 403, 404].includes(response.status)) {
        onStatus("failed", await errorOf(response));
        return;
      }
      if (!response.ok || response.body === null) throw new Error(`HTTP ${response.status}`);
      reached = true;
      failures = 0;
      onStatus("connected");
      const parser = sseParser((raw) => {
        if (raw.id !== undefined && raw.id !== "") {
          if (!isNewer(raw.id, last)) return;
          last = raw.id;
        }
        if (raw.event === "reset") last = undefined;
        let data;
        try {
          data = JSON.parse(raw.data);
        } catch {
          data = raw.data;
        }
        onEvent({ id: raw.id, event: raw.event, data });
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.push(value);
        }
      } finally {
        reader.releaseLock();
      }
      delay = parser.retry() ?? delay;
    } catch {
      if (signal.aborted) return;
    }
    if (signal.aborted) return;
    // A stream the server closed cleanly is asked again soon (it answers 204 when the feed has
    // ended); a failure waits, longer each time.
    if (reached) {
      await sleep(250, signal);
      continue;
    }
    failures++;
    const wait = Math.min(delay * 2 ** Math.min(failures - 1, 4), MAX_DELAY_MS);
    onStatus("reconnecting", { attempt: failures, ms: wait });
    await sleep(wait, signal);
  }
}

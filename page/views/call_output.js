/**
 * A call's live output on the run page, as a CI page shows a step's log: the `progress` events
 * of the run's feed turned into lines (tool uses, files changed, errors, the agent's text a
 * line at a time), bounded in the DOM (the last MAX_LINES lines of a call, each clipped), the
 * log kept scrolled to its end unless the reader scrolled up. Every value is text, never markup.
 */
import { html, useEffect, useRef } from "../lib/html.js";

/** Lines kept per call; older ones are dropped (and counted). */
export const MAX_LINES = 200;
/** Longest line kept, in characters. */
const LINE_LIMIT = 400;

const clip = (text) => (text.length > LINE_LIMIT ? `${text.slice(0, LINE_LIMIT - 1)}…` : text);

/** One call's output so far: `{lines, partial, dropped}` (a fresh one when `output` is absent). */
function emptyOutput() {
  return { lines: [], partial: "", dropped: 0 };
}

/** The line of a progress item that is not text. */
function itemLine(item) {
  switch (item.kind) {
    case "tool":
      return { kind: "tool", text: `→ ${item.name}${item.target ? `: ${item.target}` : ""}` };
    case "file":
      return { kind: "file", text: `✎ ${item.path}${item.change ? ` (${item.change})` : ""}` };
    case "error":
      return { kind: "error", text: `! ${item.message}` };
    case "truncated":
      return { kind: "truncated", text: "… output truncated (the call's budget is spent)" };
    default:
      return undefined;
  }
}

/** `output` with a batch of progress items added (a new object; the old one is unchanged). */
export function addProgress(output, items) {
  const next = { ...(output ?? emptyOutput()) };
  const lines = [...next.lines];
  for (const item of items ?? []) {
    if (item.kind === "text") {
      const parts = `${next.partial}${item.text}`.split("\n");
      next.partial = parts.pop() ?? "";
      for (const part of parts) lines.push({ kind: "text", text: clip(part) });
    } else {
      const line = itemLine(item);
      if (line) lines.push({ ...line, text: clip(line.text) });
    }
  }
  if (next.partial.length > LINE_LIMIT) {
    lines.push({ kind: "text", text: clip(next.partial) });
    next.partial = "";
  }
  const over = lines.length - MAX_LINES;
  next.dropped += Math.max(0, over);
  next.lines = over > 0 ? lines.slice(over) : lines;
  return next;
}

/** The live log of call `seq`. */
export function CallOutput({ seq, output, running }) {
  const box = useRef();
  const pinned = useRef(true);
  const count = output.lines.length + (output.partial ? 1 : 0);
  useEffect(() => {
    const el = box.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, [count, output.partial]);
  const onScroll = () => {
    const el = box.current;
    if (el) pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
  };
  return html`
    <div class=${`call-output${running ? " running" : ""}`} data-call=${seq}>
      <div class="call-output-head">
        ${running ? html`<span class="spinner" aria-hidden="true"></span>` : null}
        <span>call #${seq}${running ? " running" : ""}</span>
        ${output.dropped > 0
          ? html`<span class="muted small">${output.dropped} earlier lines not shown</span>`
          : null}
      </div>
      <pre class="call-log" ref=${box} onScroll=${onScroll}
        aria-live="polite">${output.lines.map((
          line,
          i,
        ) => html`<span key=${i} class=${`log-${line.kind}`}>${line.text}</span>`)}${output.partial
          ? html`<span class="log-text">${clip(output.partial)}</span>`
          : null}</pre>
    </div>
  `;
}

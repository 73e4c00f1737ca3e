/**
 * An ended call's recorded output, on demand under its row of the run page: read from
 * `/api/workflow/<id>/calls/<seq>/events` a page at a time until the call's output is `done`,
 * and shown with the live log's component (its last MAX_LINES lines, the rest counted).
 */
import { html, useState } from "../lib/html.js";
import { useResource } from "../lib/live.js";
import { seg } from "../lib/format.js";
import { ErrorBox } from "../lib/ui.js";
import { addProgress, CallOutput } from "./call_output.js";

/** Pages read at most: a call's recorded output is bounded by the server, this bounds the reader. */
const MAX_PAGES = 20;

/** Call `seq`'s recorded output as CallOutput takes it, and whether all of it was read. */
export async function readCallOutput(api, runId, seq, signal) {
  let output = addProgress(undefined, []);
  let after;
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = after === undefined ? "" : `?after=${after}`;
    const answer = await api.json(`/api/workflow/${seg(runId)}/calls/${seq}/events${query}`, {
      signal,
    });
    for (const event of answer.events) output = addProgress(output, event.items);
    if (answer.done || answer.events.length === 0) return { output, complete: answer.done };
    after = answer.events[answer.events.length - 1].feed_seq;
  }
  return { output, complete: false };
}

/** What was read, once the reader asked for it. */
function Recorded({ api, runId, seq }) {
  const read = useResource((signal) => readCallOutput(api, runId, seq, signal), [runId, seq]);
  if (read.error) return html`<${ErrorBox} error=${read.error} title="Cannot read the output" />`;
  if (!read.data) return html`<p class="muted small">Reading the output…</p>`;
  const { output, complete } = read.data;
  if (output.lines.length === 0 && !output.partial) {
    return html`<p class="muted small no-output">No output was recorded for this call.</p>`;
  }
  return html`
    <${CallOutput} seq=${seq} output=${output} running=${false} />
    ${complete
      ? null
      : html`<p class="muted small">Not all of the output was read: it has more batches than the page reads.</p>`}
  `;
}

/** The "output" toggle of journaled call `seq` and, once opened, its recorded output. */
export function RecordedOutput({ api, runId, seq }) {
  const [open, setOpen] = useState(false);
  return html`
    <div class="recorded-output">
      <button type="button" class="link output-toggle" aria-expanded=${open ? "true" : "false"}
        onClick=${() => setOpen(!open)}>${open ? "hide output" : "output"}</button>
      ${open ? html`<${Recorded} api=${api} runId=${runId} seq=${seq} />` : null}
    </div>
  `;
}

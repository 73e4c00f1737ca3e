/**
 * A run's event history: every event of its feed as it arrives, newest last, filtered by type
 * and by call. The page keeps the newest {@linkcode HISTORY_LIMIT} events; the feed itself
 * keeps them all.
 */
import { html, useState } from "../lib/html.js";
import { clock } from "../lib/format.js";

/** Most events the page keeps of one run. */
export const HISTORY_LIMIT = 2000;

/** Adds `item` (`{id, event, data}`) to `list`, keeping the newest {@linkcode HISTORY_LIMIT}. */
export function remember(list, item) {
  const next = list.length >= HISTORY_LIMIT ? list.slice(1 - HISTORY_LIMIT) : list.slice();
  next.push(item);
  return next;
}

/** What an event says, in one line. */
function describe({ event, data }) {
  switch (event) {
    case "state":
      return `run ${data.state}`;
    case "narration":
      return `${data.entry?.kind ?? ""}: ${data.entry?.text ?? ""}`;
    case "calls":
      return `${data.calls?.running ?? 0} running · ${data.calls?.queued ?? 0} queued · ${
        data.calls?.total ?? 0
      } calls`;
    case "call_started":
      return `call #${data.seq} ${data.label ?? "(no label)"} started${
        data.phase ? ` in ${data.phase}` : ""
      }${data.position ? ` at ${data.position.join(".")}` : ""}`;
    case "call":
      return `call #${data.seq} ${data.label ?? "(no label)"} ${data.outcome}`;
    case "calls_replayed":
      return data.count === 1
        ? `1 call #${data.first_seq} replayed from ${data.from}`
        : `${data.count} calls #${data.first_seq}–#${data.last_seq} replayed from ${data.from}`;
    case "progress": {
      const tools = (data.items ?? []).filter((item) => item.kind === "tool").length;
      return `call #${data.seq} output: ${data.items?.length ?? 0} items${
        tools ? `, ${tools} tool uses` : ""
      }`;
    }
    case "approval":
      return `call #${data.seq} approval ${data.approval_id} ${data.state}`;
    case "condition":
      return `${data.condition?.type}: ${data.condition?.message}`;
    case "security":
      return `${data.event?.kind}: ${data.event?.detail}`;
    default:
      return typeof data === "object" && data !== null ? JSON.stringify(data).slice(0, 200) : "";
  }
}

/** Whether event `e` is about call `seq`: its own, or a batch of replayed calls holding it. */
function ofCall(e, seq) {
  if (e.event === "calls_replayed") return seq >= e.data?.first_seq && seq <= e.data?.last_seq;
  return e.data?.seq === seq;
}

/** The history list with its filters. */
export function RunHistory({ events }) {
  const [type, setType] = useState("all");
  const [call, setCall] = useState("");
  const types = ["all", ...new Set(events.map((e) => e.event))];
  const seqs = [
    ...new Set(
      events.flatMap((e) =>
        e.event === "calls_replayed" ? (e.data?.calls ?? []).map((c) => c?.seq) : [e.data?.seq]
      ).filter((s) => typeof s === "number"),
    ),
  ].sort((a, b) => a - b);
  const shown = events.filter((e) =>
    (type === "all" || e.event === type) && (call === "" || ofCall(e, Number(call)))
  );
  return html`
    <div class="history">
      <div class="history-filters">
        <div class="filters" role="group" aria-label="event type">${types.map((t) =>
          html`
            <button class=${type === t ? "chip on" : "chip"} aria-pressed=${type === t}
              onClick=${() => setType(t)}>${t}</button>
          `
        )}</div>
        <label>call <select aria-label="only the events of call" value=${call}
          onChange=${(e) => setCall(e.currentTarget.value)}>
          <option value="">every call</option>
          ${seqs.map((s) => html`<option value=${String(s)}>#${s}</option>`)}
        </select></label>
      </div>
      ${shown.length === 0
        ? html`<p class="empty">No events${type === "all" && call === "" ? " yet" : " match"}.</p>`
        : html`<ol class="history-list">${
          shown.map((e, i) =>
            html`<li key=${e.id ?? i} class=${`hist-item hist-${e.event}`} data-type=${e.event}>
            <time>${clock(e.data?.at)}</time><span class="kind">${e.event}</span>
            <span class="text">${describe(e)}</span></li>`
          )
        }</ol>`}
    </div>
  `;
}

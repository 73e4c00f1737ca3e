/**
 * The calls of a run that wait for a person's approval, in its "Calls by phase" panel: such a
 * call is neither running nor journaled yet, so without these rows the panel would say that
 * the run has no calls while it waits on one. Each row links to its approval on the same page.
 */
import { html } from "../lib/html.js";
import { seg } from "../lib/format.js";

/**
 * The pending approvals (the newest `approval` event of each, by approval id) whose calls are
 * neither journaled nor running, in call order.
 */
export function waitingCalls(approvals, journal, running) {
  const seen = new Set([...journal.map((e) => e.seq), ...running.map((c) => c.seq)]);
  return Object.values(approvals)
    .filter((a) => a.state === "pending" && !seen.has(a.seq))
    .sort((a, b) => a.seq - b.seq);
}

/** Brings the approval panel's entry of `approvalId` into view. */
function showApproval(event, approvalId) {
  event.preventDefault();
  const entry = [...document.querySelectorAll(".run-approval")]
    .find((el) => el.dataset.approval === approvalId);
  entry?.scrollIntoView({ block: "center", behavior: "smooth" });
  entry?.querySelector("input, textarea, button")?.focus({ preventScroll: true });
}

/** The rows of the calls in `waiting` (from waitingCalls) of run `runId`. */
export function WaitingCalls({ runId, waiting }) {
  if (waiting.length === 0) return null;
  return html`
    <ul class="calls waiting-calls">${waiting.map((a) =>
      html`
        <li key=${a.approval_id} class="call waiting" data-seq=${a.seq}>
          <div class="waiting-line">
            <span class="seq mono">#${a.seq}</span>
            <span class="label">${a.label ?? "(no label)"}</span>
            <a class="badge attention waiting-link" href=${`#/runs/${seg(runId)}`}
              title="the call asks for the full sandbox: decide above"
              onClick=${(event) => showApproval(event, a.approval_id)}>waiting for approval</a>
          </div>
        </li>
      `
    )}</ul>
  `;
}

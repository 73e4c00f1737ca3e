/**
 * Approving or denying in place: the reason field and the two buttons a call or dispatch waiting
 * for a person shows where it is (the run page, the task page), and how a decision reads after.
 */
import { html, useState } from "../lib/html.js";
import { useAction } from "../lib/action.js";
import { clock, seg } from "../lib/format.js";
import { ErrorBox } from "../lib/ui.js";

/** Approve and deny, with an optional reason; `onDecided(record)` gets the stored approval. */
export function DecideForm({ api, approvalId, onDecided }) {
  const [reason, setReason] = useState("");
  const { busy, error, run } = useAction();
  const decide = (action) =>
    run(async () => {
      const body = reason.trim() === "" ? {} : { reason: reason.trim() };
      onDecided?.(await api.json(`/api/tasks/${seg(approvalId)}/${action}`, { body }));
    });
  return html`
    <div class="decide">
      <label>Reason (optional)<input name="reason" value=${reason} maxlength="1000"
          onInput=${(e) => setReason(e.currentTarget.value)} /></label>
      <div class="actions">
        <button class="primary" disabled=${busy} onClick=${() => decide("approve")}>Approve</button>
        <button class="danger" disabled=${busy} onClick=${() => decide("deny")}>Deny</button>
      </div>
      <${ErrorBox} error=${error} title="Cannot decide" />
    </div>
  `;
}

const VERB = { approved: "approved", denied: "denied", cancelled: "stopped waiting" };

/** "approved by alice at 12:03:04 — “release day”", from an approval event or record. */
export function Decision({ decision }) {
  const by = decision.decided_by && decision.state !== "cancelled"
    ? ` by ${decision.decided_by}`
    : "";
  const at = decision.decided_at ?? decision.at;
  // Spaces as strings: the template trims those at its own edges.
  return html`
    <span
      class=${`decision decision-${decision.state}`}><span class=${`badge approval-${decision.state}`}>${VERB[
        decision.state
      ] ?? decision.state}</span>${by}${at ? " at " : ""}${at
        ? html`<time datetime=${at}>${clock(at)}</time>`
        : null}${decision.reason ? " — " : ""}${decision.reason
        ? html`<q class="reason">${decision.reason}</q>`
        : null}</span>
  `;
}

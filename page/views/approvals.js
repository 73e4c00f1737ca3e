/** Calls and dispatches waiting for a person: approve or deny each, with a reason. */
import { html, useState } from "../lib/html.js";
import { useAction } from "../lib/action.js";
import { useResource } from "../lib/live.js";
import { age, seg } from "../lib/format.js";
import { Empty, ErrorBox, Section, TextBlock } from "../lib/ui.js";

function Approval({ api, item, onDecided }) {
  const [reason, setReason] = useState("");
  const { busy, error, run } = useAction();
  const decide = (action) =>
    run(async () => {
      const body = reason.trim() === "" ? {} : { reason: reason.trim() };
      await api.json(`/api/tasks/${seg(item.approval_id)}/${action}`, { body });
      onDecided();
    });
  const where = item.kind === "call"
    ? html`call #${item.call_seq} of run <a href=${`#/runs/${seg(item.run_id)}`}>${item.run_id}</a>`
    : html`dispatch <a href=${`#/tasks/${seg(item.task_id)}`}>${item.task_id}</a>`;
  return html`
    <li class="panel approval">
      <p><b>${item.label ?? "A call"}</b> asks for the <b>${item.sandbox}</b> sandbox: ${where}
          ${item.provider ? ` on ${item.provider}` : ""} <span class="muted">(${age(
            item.asked_at,
          )} ago)</span></p>
      <${TextBlock} text=${item.prompt_preview} label="prompt" />
      <label>Reason (optional)<input value=${reason} maxlength="1000" onInput=${(e) =>
        setReason(e.currentTarget.value)} /></label>
      <${ErrorBox} error=${error} title="Cannot decide" />
      <div class="actions">
        <button class="primary" disabled=${busy} onClick=${() => decide("approve")}>Approve</button>
        <button class="danger" disabled=${busy} onClick=${() => decide("deny")}>Deny</button>
      </div>
    </li>
  `;
}

/** `#/approvals`. */
export function ApprovalsView({ api }) {
  const approvals = useResource(
    (signal) => api.json("/api/approvals?state=pending&limit=100", { signal }),
    [],
    // A run's call that asks for approval changes no run state: look again now and then too.
    { kinds: ["task", "run"], every: 3000 },
  );
  const list = approvals.data?.approvals ?? [];
  return html`<${Section} title="Waiting for approval">
    <${ErrorBox} error=${approvals.error} title="Cannot list the approvals" />
    ${
    list.length === 0 && !approvals.loading
      ? html`<${Empty}>Nothing is waiting for a person.<//>`
      : html`<ul class="approvals">${
        list.map((item) =>
          html`<${Approval} key=${item.approval_id} api=${api} item=${item} onDecided=${approvals.reload} />`
        )
      }</ul>`
  }
  <//>`;
}

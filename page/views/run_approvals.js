/**
 * A run's approvals where the run is: each call that asked for the `full` sandbox, waiting (with
 * its prompt's start, approve and deny in place) or decided (who, when and why), from the
 * run's `approval` events; the waiting ones' prompts come from `/api/approvals`.
 */
import { html } from "../lib/html.js";
import { useResource } from "../lib/live.js";
import { Section, TextBlock } from "../lib/ui.js";
import { DecideForm, Decision } from "./decide.js";

/** The approvals of the run: `approvals` maps an approval id to its newest event. */
export function RunApprovals({ api, approvals, onDecided }) {
  const list = Object.values(approvals).sort((a, b) => a.seq - b.seq);
  const waiting = list.filter((a) => a.state === "pending").map((a) => a.approval_id);
  const records = useResource(
    (signal) =>
      waiting.length === 0
        ? Promise.resolve(undefined)
        : api.json("/api/approvals?state=pending&limit=500", { signal }),
    [waiting.join(",")],
  );
  if (list.length === 0) return null;
  const byId = new Map((records.data?.approvals ?? []).map((r) => [r.approval_id, r]));
  return html`
    <${Section} title=${waiting.length > 0 ? "Waiting for your approval" : "Approvals"}>
      <ul class="run-approvals">${list.map((a) => {
        const record = byId.get(a.approval_id);
        return html`
          <li key=${a.approval_id} class=${`run-approval approval-${a.state}`}
            data-approval=${a.approval_id}>
                  <p><span class="seq mono">#${a.seq}</span> <b>${a.label ??
                    "(no label)"}</b>${" asks for the "}<b>full</b> sandbox${record?.provider
                    ? ` on ${record.provider}`
                    : ""}: ${a.state === "pending"
                    ? html`<span class="badge attention">waiting for a person</span>`
                    : html`<${Decision} decision=${a} />`}</p>
                  ${a.state === "pending"
                    ? html`${
                      record
                        ? html`<${TextBlock} text=${record.prompt_preview} label="prompt" />`
                        : null
                    }<${DecideForm} api=${api} approvalId=${a.approval_id} onDecided=${onDecided} />`
                    : null}
                </li>
        `;
      })}</ul>
      <//>
  `;
}

/**
 * A card's runs: the runs started for it (`card_id`), newest first, each with its state now,
 * and a way to start another for it. The card's history is its log, shown beside.
 */
import { html } from "../lib/html.js";
import { useResource } from "../lib/live.js";
import { age, money, seg } from "../lib/format.js";
import { Empty, ErrorBox, StateBadge } from "../lib/ui.js";

/** The runs of card `issueId`, read again when a run changes. */
export function CardRuns({ api, issueId }) {
  const runs = useResource(
    (signal) => api.json(`/api/board/${seg(issueId)}/runs`, { signal }),
    [issueId],
    { kinds: ["run", "card"] },
  );
  const list = runs.data?.runs ?? [];
  return html`<div class="card-runs">
    <h3>Runs <a class="button small" href=${`#/runs/new/${
    seg(issueId)
  }`}>Start a run for this card</a></h3>
    <${ErrorBox} error=${runs.error} title="Cannot list the card's runs" />
    ${
    list.length === 0 && !runs.loading
      ? html`<${Empty}>No run has worked on this card yet.<//>`
      : html`<ul class="card-run-list">${
        list.map((r) =>
          html`<li key=${r.run_id}><${StateBadge} state=${r.state} />
            <a href=${`#/runs/${seg(r.run_id)}`}>${r.name}</a>
            <span class="mono muted small">${r.run_id}</span>
            <span class="muted small">${r.calls} calls · ${money(r.cost_usd)} · ${
            age(r.at)
          } ago</span></li>`
        )
      }</ul>`
  }
  </div>`;
}

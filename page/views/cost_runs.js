/**
 * Which runs spent what: a day's dearest runs and tasks (pick the day), and the last 48 hours
 * as a bar per hour with each hour's dearest runs in its tooltip. From `/api/costs`
 * (`by_run`, `by_hour`).
 */
import { html, useState } from "../lib/html.js";
import { count, money, seg } from "../lib/format.js";

function link(spend) {
  return spend.source === "run" ? `#/runs/${seg(spend.id)}` : `#/tasks/${seg(spend.id)}`;
}

function worth(spend) {
  return spend.cost_usd > 0
    ? money(spend.cost_usd)
    : `${count(spend.input_tokens + spend.output_tokens)} tok`;
}

/** A bar per hour (UTC) of the last 48, its height the hour's cost (or tokens when nothing was priced). */
function HourChart({ hours }) {
  const priced = hours.some((h) => h.cost_usd > 0);
  const of = (h) => (priced ? h.cost_usd : h.input_tokens + h.output_tokens);
  const max = Math.max(0, ...hours.map(of)) || 1;
  const width = 720;
  const height = 120;
  const slot = width / 48;
  const now = Date.now();
  return html`
    <svg class="hour-chart" viewBox=${`0 0 ${width} ${height + 16}`} role="img"
      aria-label=${`spending per hour over the last 48 hours, by ${priced ? "cost" : "tokens"}`}>
      ${hours.map((h) => {
        const ago = Math.floor((now - Date.parse(h.hour.replace("Z", ":00Z"))) / 3_600_000);
        const x = width - (Math.min(47, Math.max(0, ago)) + 1) * slot;
        const barH = (of(h) / max) * height;
        return html`
          <rect class="series s0" x=${x + 1} y=${height - barH} width=${slot - 2}
            height=${Math.max(1, barH)} data-hour=${h.hour}>
            <title>${h.hour} · ${h.calls} calls · ${money(h.cost_usd)}${h.runs.map((r) =>
              `\n${r.id}: ${worth(r)}`
            ).join("")}</title>
          </rect>
        `;
      })}
      <text class="axis" x="0" y=${height + 14}>48 h ago</text>
      <text class="axis" x=${width} y=${height + 14} text-anchor="end">now</text>
    </svg>
  `;
}

/** The breakdown by run and by hour, under the per-day chart. */
export function CostRuns({ costs }) {
  const [picked, setPicked] = useState();
  if (!costs || costs.by_run.length === 0) return null;
  const day = costs.by_run.find((d) => d.day === picked) ?? costs.by_run[0];
  const max = Math.max(0, ...day.runs.map((r) => r.cost_usd)) || 1;
  return html`
    <div class="cost-runs">
      <h3>Which runs spent
        <select aria-label="day" value=${day.day} onChange=${(e) =>
          setPicked(e.currentTarget.value)}>
          ${costs.by_run.map((d) => html`<option value=${d.day}>${d.day}</option>`)}
        </select>
      </h3>
      <ul class="provider-bars run-spend">${day.runs.map((r) =>
        html`
          <li key=${r.id} data-id=${r.id}>
            <a class="name mono" href=${link(r)}>${r.id}</a>
            <span class="track"><span class="fill s0" style=${{
              width: `${Math.max(1, (r.cost_usd / max) * 100)}%`,
            }}></span></span>
            <span class="num">${worth(r)}</span>
            <span class="muted small">${r.calls} calls${r.unmetered_calls
              ? ` · ${r.unmetered_calls} unpriced`
              : ""}</span>
          </li>
        `
      )}</ul>
      ${day.others.runs > 0
        ? html`<p class="muted small">and ${day.others.runs} more (${day.others.calls} calls, ${
          money(
            day.others.cost_usd,
          )
        })</p>`
        : null}
      <h3>The last 48 hours (UTC), by hour</h3>
      ${costs.by_hour.length === 0
        ? html`<p class="empty">No calls in the last 48 hours.</p>`
        : html`<${HourChart} hours=${costs.by_hour} />`}
    </div>
  `;
}

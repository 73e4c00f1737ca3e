/**
 * Costs and usage over time, drawn: a bar per day split by provider (cost, tokens or calls),
 * which runs spent on a day and by hour (`/api/costs`), and each provider's share with its
 * failure rate and latency. From `/api/usage/summary`.
 */
import { html, useState } from "../lib/html.js";
import { useResource } from "../lib/live.js";
import { count, money } from "../lib/format.js";
import { Empty, ErrorBox, Section } from "../lib/ui.js";
import { CostRuns } from "./cost_runs.js";

const METRICS = {
  cost: { label: "Cost (USD)", of: (p) => p.cost_usd, show: money },
  tokens: { label: "Tokens", of: (p) => p.input_tokens + p.output_tokens, show: count },
  calls: { label: "Calls", of: (p) => p.calls, show: count },
};
const DAYS = 14;

/** The last `n` days (UTC), oldest first, as YYYY-MM-DD. */
function lastDays(n) {
  const out = [];
  const today = Date.UTC(
    new Date().getUTCFullYear(),
    new Date().getUTCMonth(),
    new Date().getUTCDate(),
  );
  for (let i = n - 1; i >= 0; i--) {
    out.push(new Date(today - i * 86_400_000).toISOString().slice(0, 10));
  }
  return out;
}

/** A nice upper bound for an axis. */
function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

function DayChart({ summary, metric, providers }) {
  const m = METRICS[metric];
  const byDay = new Map(summary.by_day.map((d) => [d.day, d]));
  const days = lastDays(DAYS);
  const totals = days.map((day) =>
    (byDay.get(day)?.providers ?? []).reduce((n, p) => n + m.of(p), 0)
  );
  const max = niceMax(Math.max(0, ...totals));
  const width = 720;
  const height = 240;
  const left = 56;
  const bottom = 28;
  const plotH = height - bottom - 10;
  const slot = (width - left) / days.length;
  const bar = Math.max(4, slot * 0.62);
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  return html`
    <figure class="chart">
      <svg viewBox=${`0 0 ${width} ${height}`} role="img"
        aria-label=${`${m.label} per day for the last ${DAYS} days, by provider`}>
          ${ticks.map((t) => {
            const y = 10 + plotH * (1 - t);
            return html`
              <g>
                <line class="grid" x1=${left} x2=${width} y1=${y} y2=${y} />
                <text class="axis" x=${left - 6} y=${y + 4} text-anchor="end">${m.show(
                  max * t,
                )}</text>
              </g>
            `;
          })}
          ${days.map((day, i) => {
            const x = left + i * slot + (slot - bar) / 2;
            let y = 10 + plotH;
            const parts = byDay.get(day)?.providers ?? [];
            return html`<g class="day">
          ${
              parts.map((p) => {
                const value = m.of(p);
                const h = max > 0 ? (value / max) * plotH : 0;
                y -= h;
                return html`
                  <rect class=${`series s${providers.indexOf(p.provider) % 8}`} x=${x} y=${y}
                    width=${bar} height=${Math.max(0, h)}>
                    <title>${day} · ${p.provider}: ${m.show(value)}</title>
                  </rect>
                `;
              })
            }
          ${
              (days.length - 1 - i) % 2 === 0
                ? html`<text class="axis" x=${x + bar / 2} y=${height - 8} text-anchor="middle">${
                  day.slice(5)
                }</text>`
                : null
            }
        </g>`;
          })}
        </svg>
      <figcaption class="legend">${providers.map((name, i) =>
        html`<span><i class=${`swatch s${i % 8}`}></i>${name}</span>`
      )}</figcaption>
    </figure>
  `;
}

function ProviderBars({ summary, metric, providers }) {
  const m = METRICS[metric];
  const rows = summary.by_provider.map((p) => ({
    ...p,
    value: metric === "cost"
      ? p.cost_usd
      : metric === "tokens"
      ? p.usage.input_tokens + p.usage.output_tokens
      : p.calls,
  }));
  const max = Math.max(0, ...rows.map((r) => r.value)) || 1;
  return html`<ul class="provider-bars">${
    rows.map((r) =>
      html`
        <li key=${r.provider}>
          <span class="name">${r.provider}</span>
          <span class="track"><span class=${`fill s${providers.indexOf(r.provider) % 8}`}
                style=${{ width: `${Math.max(1, (r.value / max) * 100)}%` }}></span></span>
          <span class="num">${m.show(r.value)}</span>
          <span
            class="muted small">${r.calls} calls · ${Math.round(
              r.failure_rate * 100,
            )}% failed · median ${r.latency_ms.median} ms${r.unmetered_calls
              ? ` · ${r.unmetered_calls} unpriced`
              : ""}</span>
        </li>
      `
    )
  }</ul>`;
}

/** `#/costs`. */
export function CostsView({ api }) {
  const [metric, setMetric] = useState("cost");
  const summary = useResource(
    (signal) => api.json("/api/usage/summary?calls=10000", { signal }),
    [],
    { kinds: ["run", "task"], debounceMs: 1500 },
  );
  const costs = useResource(
    (signal) => api.json("/api/costs?calls=10000", { signal }),
    [],
    { kinds: ["run", "task"], debounceMs: 1500 },
  );
  const s = summary.data;
  const providers = s
    ? [
      ...new Set([
        ...s.by_provider.map((p) => p.provider),
        ...s.by_day.flatMap((d) => d.providers.map((p) => p.provider)),
      ]),
    ].sort()
    : [];
  return html`
    <${Section} title="Costs and usage"
      actions=${html`<div class="filters" role="group" aria-label="measure">${
        Object.entries(METRICS).map(([key, m]) =>
          html`<button class=${metric === key ? "chip on" : "chip"} aria-pressed=${
            metric === key
          } onClick=${() => setMetric(key)}>${m.label}</button>`
        )
      }</div>`}>
        <${ErrorBox} error=${summary.error} title="Cannot read the usage" />
        ${s
          ? html`<p class="totals"><b>${money(s.cost_usd)}</b>${` over the newest ${
            count(s.calls)
          } calls · `}<b>${
            count(s.usage.input_tokens + s.usage.output_tokens)
          }</b>${` tokens · ${s.failed} failed · ${s.replayed} replayed · ${s.refused} refused`}${
            s.unmetered_calls
              ? html`
                · <span class="warn">${s.unmetered_calls} calls without a price</span>
              `
              : null
          }</p>
        ${
            s.calls === 0
              ? html`<${Empty}>No calls yet: the charts fill in as agents answer.<//>`
              : html`
                <h3>Per day (UTC), by provider</h3>
                <${DayChart} summary=${s} metric=${metric} providers=${providers} />
                <${CostRuns} costs=${costs.data} />
                <h3>By provider</h3>
                <${ProviderBars} summary=${s} metric=${metric} providers=${providers} />
              `
          }`
          : null}
      <//>
  `;
}

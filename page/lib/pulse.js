/**
 * The header's pulse strip: the caller's running, queued and waiting work, the spend of the
 * last hour and day (against the running runs' budgets), the providers' health and the newest
 * failure, all from one `GET /api/pulse`. Read again when a run or task changes (the live
 * follower) and every few seconds, since spend and providers change without such an event; the
 * server reuses an answer for its `fresh_ms`, so the strip costs it little.
 */
import { html } from "./html.js";
import { useResource } from "./live.js";
import { age, money, seg } from "./format.js";

/** How often the strip reads the pulse without an event, in ms. */
const EVERY_MS = 5000;

function Budgets({ budgets }) {
  if (!budgets || budgets.runs === 0 || !budgets.usd) return null;
  const share = budgets.usd.total > 0 ? Math.min(1, budgets.usd.spent / budgets.usd.total) : 1;
  return html`
    <meter min="0" max="1" value=${share} low="0.7" high="0.9" optimum="0"
      title=${`${budgets.runs} running runs: ${money(budgets.usd.spent)} of ${
        money(budgets.usd.total)
      }`} aria-label="budgets of running runs">${Math.round(share * 100)}%</meter>
  `;
}

function Providers({ providers }) {
  const down = providers.list.filter((p) => !p.available);
  const title = down.length === 0
    ? "every provider takes calls"
    : down.map((p) => `${p.name}: ${p.reason}`).join("\n");
  return html`
    <span class=${`stat pulse-providers${down.length > 0 ? " attention" : ""}`}
      title=${title}><b>${providers.available}/${providers.total}</b> providers</span>
  `;
}

function LastFailure({ failure }) {
  if (!failure) return null;
  const href = failure.kind === "run" ? `#/runs/${seg(failure.id)}` : `#/tasks/${seg(failure.id)}`;
  return html`<a href=${href} class="stat pulse-failure" title=${failure.message}>
    <span class="badge state-failed">${failure.state}</span> ${failure.name ?? failure.id}${" "}
    <span class="muted">${age(failure.at)} ago</span></a>`;
}

/** The strip; `children` (the capacity gauges) follow its figures. */
export function PulseStrip({ api, children }) {
  const pulse = useResource((signal) => api.json("/api/pulse", { signal }), [], {
    kinds: ["run", "task"],
    debounceMs: 500,
    every: EVERY_MS,
  });
  const p = pulse.data;
  const waiting = p ? p.approvals.pending : 0;
  return html`<div class="summary pulse" aria-label="pulse" data-at=${p?.at}>
    <a href="#/runs" class="stat"><b>${p ? p.runs.running : "…"}</b> running</a>
    <a href="#/runs" class="stat"><b>${p ? p.runs.queued : "…"}</b> queued</a>
    <a href="#/tasks" class="stat"><b>${
    p ? p.tasks.running + p.tasks.queued : "…"
  }</b> active tasks</a>
    <a href="#/approvals" class=${`stat pulse-waiting ${waiting > 0 ? "attention" : ""}`}><b>${
    p ? waiting : "…"
  }</b> awaiting approval</a>
    <a href="#/costs" class="stat pulse-spend" title="spent in the last hour · the last 24 hours">
      <b>${p ? money(p.spend.hour.cost_usd) : "…"}</b> 1h · <b>${
    p ? money(p.spend.day.cost_usd) : "…"
  }</b> 24h <${Budgets} budgets=${p?.spend.budgets} /></a>
    ${p ? html`<${Providers} providers=${p.providers} />` : null}
    <${LastFailure} failure=${p?.failures[0]} />
    ${children}
  </div>`;
}

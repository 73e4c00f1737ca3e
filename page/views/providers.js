/** Providers: availability, load against their cap, and price. */
import { html } from "../lib/html.js";
import { useResource } from "../lib/live.js";
import { Empty, ErrorBox, Section } from "../lib/ui.js";

function price(p) {
  if (!p) return "unpriced";
  const parts = Object.entries(p).map(([k, v]) => `${k.replaceAll("_", " ")} ${v}`);
  return parts.join(" · ");
}

/** `#/providers`. */
export function ProvidersView({ api }) {
  const providers = useResource((signal) => api.json("/api/providers", { signal }), [], {
    kinds: ["run", "task"],
    every: 5000,
  });
  const list = providers.data?.providers ?? [];
  return html`<${Section} title="Providers">
    <${ErrorBox} error=${providers.error} title="Cannot list the providers" />
    ${
    list.length === 0 && !providers.loading
      ? html`<${Empty}>No providers.<//>`
      : html`<ul class="providers">${
        list.map((p) => {
          const cap = p.concurrency;
          return html`<li key=${p.name} class=${`panel provider ${p.available ? "up" : "down"}`}>
          <header><b>${p.name}</b> <span class="muted">${p.kind}${
            p.version ? ` ${p.version}` : ""
          }</span>
            <span class=${`badge ${p.available ? "state-succeeded" : "state-failed"}`}>${
            p.available ? "available" : "unavailable"
          }</span></header>
          <p class="muted small">${p.reason}</p>
          <div class="load">
            <span>load</span>
            ${
            cap
              ? html`
                <meter min="0" max=${cap} value=${p.running} high=${Math.max(1, cap - 1)}
                  aria-label=${`load of ${p.name}`}>${p.running}/${cap}</meter>
              `
              : null
          }
            <span>${p.running} running${cap ? ` of ${cap}` : " (no cap)"}</span>
          </div>
          ${
            p.tags?.length
              ? html`<div>${p.tags.map((t) => html`<span class="tag">${t}</span>`)}</div>`
              : null
          }
          <p class="small">${price(p.price)}</p>
        </li>`;
        })
      }</ul>`
  }
  <//>`;
}

/**
 * Providers: availability, load against their cap, and price; and what each can do here (from
 * `/api/capabilities`): its tool's version and whether svc is tested with it, whether its
 * credentials answer, its sandbox levels.
 */
import { html } from "../lib/html.js";
import { useResource } from "../lib/live.js";
import { Empty, ErrorBox, Section } from "../lib/ui.js";
import { ConfigPanel } from "./config.js";

function price(p) {
  if (!p) return "unpriced";
  const parts = Object.entries(p).map(([k, v]) => `${k.replaceAll("_", " ")} ${v}`);
  return parts.join(" · ");
}

/** A tool's version line: installed or not, and whether svc is tested with that version. */
function toolText(tool) {
  if (!tool.installed) return `not installed (${tool.detail})`;
  if (tool.version === null) return `version unknown: ${tool.detail}`;
  if (tool.tested) return `${tool.version}, the tested version`;
  return tool.tested_version
    ? `${tool.version}, not the tested ${tool.tested_version}`
    : tool.version;
}

const CREDENTIAL_BADGES = {
  ok: "state-succeeded",
  not_needed: "state-succeeded",
  unchecked: "state-queued",
};

/** What a provider can do here, from the capability report. */
function Capability({ cap }) {
  if (!cap) return null;
  const credentials = cap.credentials;
  return html`<dl class="capability" aria-label=${`capabilities of ${cap.name}`}>
    ${
    cap.tool
      ? html`
        <dt>tool</dt>
        <dd class=${cap.tool.tested === false || !cap.tool.installed ? "warn" : ""}>${toolText(
          cap.tool,
        )}</dd>
      `
      : null
  }
    <dt>credentials</dt>
    <dd><span class=${`badge ${CREDENTIAL_BADGES[credentials.state] ?? "state-failed"}`}>${
    credentials.state.replaceAll("_", " ")
  }</span> <span class="muted small">${credentials.detail}</span></dd>
    <dt>sandbox</dt>
    <dd>${cap.sandbox_levels.map((level) => html`<span class="tag">${level}</span>`)}${
    cap.sandbox_detail
      ? html`
        <span class="muted small">${cap.sandbox_detail}</span>
      `
      : null
  }</dd>
  </dl>`;
}

/** `#/providers`. */
export function ProvidersView({ api }) {
  const providers = useResource((signal) => api.json("/api/providers", { signal }), [], {
    kinds: ["run", "task"],
    every: 5000,
  });
  // Probes are dear (a version flag, an endpoint's model list): asked once a minute at most.
  const capabilities = useResource(
    (signal) => api.json("/api/capabilities", { signal }),
    [],
    { every: 60_000 },
  );
  const caps = new Map((capabilities.data?.providers ?? []).map((c) => [c.name, c]));
  const list = providers.data?.providers ?? [];
  return html`<${Section} title="Providers">
    <${ConfigPanel} api=${api} onReloaded=${() => {
    providers.reload();
    capabilities.reload();
  }} />
    <${ErrorBox} error=${providers.error} title="Cannot list the providers" />
    <${ErrorBox} error=${capabilities.error} title="Cannot probe the providers' capabilities" />
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
          <${Capability} cap=${caps.get(p.name)} />
        </li>`;
        })
      }</ul>`
  }
  <//>`;
}

/**
 * The configuration panel of the Providers view, for the operator only (a token bound to no
 * owner; for other owners `/api/status` carries `config: null`, and the panel is absent): where the configuration in
 * effect was read and when, why the file as it is now was refused, keys that need a restart,
 * and a button that reads config.json again (`POST /api/config/reload`).
 */
import { html, useState } from "../lib/html.js";
import { useAction } from "../lib/action.js";
import { useResource } from "../lib/live.js";
import { age } from "../lib/format.js";
import { ErrorBox } from "../lib/ui.js";

const OUTCOMES = {
  reloaded: "Reloaded: the file's providers, routing and automations are in effect.",
  unchanged: "The file says what runs already.",
  refused: "Refused: the configuration in effect stays.",
};

/** What the configuration state says, as text (the page escapes all of it). */
function ConfigState({ state }) {
  return html`<dl class="capability" aria-label="configuration">
    <dt>file</dt>
    <dd>${state.source ?? "none: the embedded default (only the fake provider)"}</dd>
    <dt>in effect since</dt>
    <dd>${age(state.loaded_at)}${state.reloads > 0 ? ` (${state.reloads} reload(s))` : ""}</dd>
    ${
    state.restart_needed.length > 0
      ? html`
        <dt>needs a restart</dt>
        <dd class="warn">${state.restart_needed.join(", ")}</dd>
      `
      : null
  }
  </dl>
  ${
    state.error
      ? html`
        <div class="error-box" role="alert" data-testid="config-error">
          <strong>The file was refused; the configuration in effect stays</strong>
          <div>${state.error}</div>
        </div>
      `
      : null
  }`;
}

/** The panel: nothing for an owner who is not the operator. */
export function ConfigPanel({ api, onReloaded }) {
  // The status says it to the operator only: an owner's page asks nothing it would be refused.
  const status = useResource((signal) => api.json("/api/status", { signal }), [], {
    every: 10_000,
  });
  const action = useAction();
  const [outcome, setOutcome] = useState();
  const state = status.data?.config;
  if (!state) return null;
  const reload = async () => {
    const answer = await action.run(() => api.json("/api/config/reload", { method: "POST" }));
    if (!answer) return;
    setOutcome(answer.outcome);
    status.reload();
    if (answer.outcome === "reloaded") onReloaded?.();
  };
  return html`<div class="panel provider config-panel" aria-label="configuration panel">
    <header><b>Configuration</b>
      <button class="primary" disabled=${action.busy} onClick=${reload}>
        ${action.busy ? "Reloading…" : "Reload configuration"}
      </button></header>
    <p class="muted small">Edits of config.json are taken by themselves (and on SIGHUP);
      this reads the file now.</p>
    <${ErrorBox} error=${status.error} title="Cannot read the configuration's state" />
    <${ErrorBox} error=${action.error} title="Cannot reload the configuration" />
    ${outcome ? html`<p role="status" class="small">${OUTCOMES[outcome]}</p>` : null}
    <${ConfigState} state=${state} />
  </div>`;
}

/** Small pieces every view uses. */
import { html } from "./html.js";

/** A run's or task's state as a coloured word. */
export function StateBadge({ state }) {
  return html`<span class=${`badge state-${state}`}>${state}</span>`;
}

/** An API error (or any error) as a message that says what went wrong. */
export function ErrorBox({ error, title }) {
  if (!error) return null;
  const code = error.code ? ` (${error.code})` : "";
  return html`
    <div class="error-box" role="alert">
      <strong>${title ?? "Something went wrong"}${code}</strong>
      <div>${error.message ?? String(error)}</div>
    </div>
  `;
}

/** A titled block of a view. */
export function Section({ title, actions, children }) {
  return html`<section class="panel">
    <header class="panel-head"><h2>${title}</h2>${
    actions ? html`<div class="actions">${actions}</div>` : null
  }</header>
    ${children}
  </section>`;
}

/** What an empty list says. */
export function Empty({ children }) {
  return html`<p class="empty">${children}</p>`;
}

/** A value as text in a scrollable block (never as markup). */
export function TextBlock({ text, label }) {
  return html`<pre class="text-block" aria-label=${label ?? "text"}>${text}</pre>`;
}

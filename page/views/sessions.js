/** Sessions: the list, and one session's turns as a conversation. */
import { html } from "../lib/html.js";
import { useResource } from "../lib/live.js";
import { age, asText, seg } from "../lib/format.js";
import { Empty, ErrorBox, Section, TextBlock } from "../lib/ui.js";

/** `#/sessions`. */
export function SessionsView({ api }) {
  const sessions = useResource((signal) => api.json("/api/sessions?limit=100", { signal }), [], {
    kinds: ["task"],
  });
  const list = sessions.data?.sessions ?? [];
  return html`<${Section} title="Sessions">
    <${ErrorBox} error=${sessions.error} title="Cannot list the sessions" />
    ${
    list.length === 0 && !sessions.loading
      ? html`<${Empty}>No sessions. A dispatch with <code>session</code> starts one.<//>`
      : html`
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Provider</th>
                <th class="num">Turns</th>
                <th class="num">Last turn</th>
              </tr>
            </thead>
            <tbody>${list.map((s) =>
              html`
                <tr key=${s.session_id}>
                  <td><a href=${`#/sessions/${seg(s.session_id)}`}>${s.name ??
                    s.session_id}</a><div class="muted mono small">${s.session_id}</div></td>
                  <td>${s.provider ?? "—"}${s.profile ? ` (${s.profile})` : ""}</td>
                  <td class="num">${s.turns}</td>
                  <td class="num">${age(s.updated_at)} ago</td>
                </tr>
              `
            )}</tbody>
          </table>
        </div>
      `
  }
  <//>`;
}

/** `#/sessions/<id>`. */
export function SessionView({ api, sessionId }) {
  const session = useResource(
    (signal) => api.json(`/api/sessions/${seg(sessionId)}`, { signal }),
    [sessionId],
    { kinds: ["task"] },
  );
  const s = session.data;
  if (session.error && !s) {
    return html`<${ErrorBox} error=${session.error} title="Cannot show this session" />`;
  }
  if (!s) return html`<p class="empty">Loading…</p>`;
  const messages = s.messages ?? [];
  return html`
    <${Section} title=${`Session ${s.name ?? s.session_id}`}
      actions=${html`<a class="button" href="#/sessions">All sessions</a>`}>
        <p class="muted">${s.provider ?? "no provider"} · ${s.turns} turns${s.harness_session_id
          ? ` · harness session ${s.harness_session_id}`
          : ""}</p>
        ${messages.length === 0
          ? html`<${Empty}>${
            s.turns > 0
              ? "This provider keeps the turns itself (a coding-agent session): svc records only their count."
              : "No turns yet."
          }<//>`
          : html`<ol class="conversation">${
            messages.map((m, i) =>
              html`
                <li key=${i}
                  class=${`turn turn-${m.role}`}><span class="role">${m
                    .role}</span><${TextBlock} text=${asText(m.content)} /></li>
              `
            )
          }</ol>`}
      <//>
  `;
}

/**
 * The svc board page: a live view of the caller's runs, board, tasks, sessions, approvals,
 * providers and costs, over the public `/api/*` routes only. Routing is by the URL fragment
 * (`#/runs/<id>`), so the server serves one page.
 */
import { Api, ApiError, storedToken, storeToken, tokenFromFragment } from "./lib/api.js";
import { html, render, useEffect, useState } from "./lib/html.js";
import { startLive, useLiveStatus, useResource } from "./lib/live.js";
import { ErrorBox } from "./lib/ui.js";
import { PulseStrip } from "./lib/pulse.js";
import { RunsView } from "./views/runs.js";
import { RunView } from "./views/run.js";
import { StartRunView } from "./views/start_run.js";
import { BoardView } from "./views/board.js";
import { TasksView, TaskView } from "./views/tasks.js";
import { SessionsView, SessionView } from "./views/sessions.js";
import { ApprovalsView } from "./views/approvals.js";
import { ProvidersView } from "./views/providers.js";
import { CostsView } from "./views/costs.js";
import { NotificationBadge, NotificationsView } from "./views/notifications.js";

const NAV = [
  ["runs", "Runs"],
  ["board", "Board"],
  ["tasks", "Tasks"],
  ["sessions", "Sessions"],
  ["approvals", "Approvals"],
  ["providers", "Providers"],
  ["costs", "Costs"],
];

function currentRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return "";
      }
    });
  return parts.length === 0 ? ["runs"] : parts;
}

function useRoute() {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const update = () => {
      setRoute(currentRoute());
      document.querySelector("main")?.focus({ preventScroll: true });
    };
    addEventListener("hashchange", update);
    // The address may have changed between the first render and this effect, when no one
    // was listening yet (a link followed while the page was signing in).
    setRoute((shown) => {
      const now = currentRoute();
      return now.join("/") === shown.join("/") ? shown : now;
    });
    return () => removeEventListener("hashchange", update);
  }, []);
  return route;
}

function View({ api, route, status }) {
  const [section, id] = route;
  if (section === "runs" && id === "new") {
    return html`<${StartRunView} api=${api} cardId=${route[2]} key=${route[2]} />`;
  }
  if (section === "runs" && id) return html`<${RunView} api=${api} runId=${id} key=${id} />`;
  if (section === "runs") return html`<${RunsView} api=${api} status=${status} />`;
  if (section === "board") return html`<${BoardView} api=${api} cardId=${id} key=${id} />`;
  if (section === "tasks" && id) return html`<${TaskView} api=${api} taskId=${id} key=${id} />`;
  if (section === "tasks") return html`<${TasksView} api=${api} />`;
  if (section === "sessions" && id) {
    return html`<${SessionView} api=${api} sessionId=${id} key=${id} />`;
  }
  if (section === "sessions") return html`<${SessionsView} api=${api} />`;
  if (section === "approvals") return html`<${ApprovalsView} api=${api} />`;
  if (section === "providers") return html`<${ProvidersView} api=${api} />`;
  if (section === "costs") return html`<${CostsView} api=${api} />`;
  if (section === "notifications") return html`<${NotificationsView} api=${api} />`;
  return html`<p class="empty">No such view. <a href="#/runs">Runs</a></p>`;
}

function Connection() {
  const live = useLiveStatus();
  // "connected", never "live": `live` is a call's outcome (answered by a provider, not replayed).
  const text = live.state === "connected"
    ? "connected"
    : live.state === "reconnecting"
    ? `reconnecting… (attempt ${live.detail?.attempt ?? 1})`
    : live.state === "failed"
    ? `disconnected: ${live.detail?.message ?? "refused"}`
    : live.state;
  return html`
    <span class=${`connection conn-${live.state}`} role="status" aria-live="polite"
      data-state=${live.state}>${text}</span>
  `;
}

/** "used/cap", marked when the cap is reached. */
function gauge(label, g) {
  const full = g.used >= g.cap;
  return html`<span class=${
    full ? "gauge full" : "gauge"
  }>${label} <b>${g.used}/${g.cap}</b></span>`;
}

/** Admission control's caps and how full they are (docs/SECURITY.md, "Capacity"). */
function Capacity({ admission }) {
  if (!admission) return null;
  const a = admission;
  return html`
    <span class="stat capacity" aria-label="capacity"
      title="Host caps, then your own (bind callers of the API, MCP and A2A); beyond a cap runs wait in the queue or are refused with 429">
        ${[
          gauge("host guests", a.host_live),
          " ",
          gauge("queue", a.host_queued),
          " · yours: ",
          gauge("runs", a.owner_live),
          " ",
          gauge("queued", a.owner_queued),
          " ",
          gauge("tasks", a.owner_tasks),
          " ",
          gauge("streams", a.owner_streams),
        ]}
      </span>
  `;
}

/** The header strip: the pulse, then the capacity gauges of `/api/status`. */
function Summary({ api }) {
  const status = useResource((signal) => api.json("/api/status", { signal }), [], {
    kinds: ["run", "task"],
    debounceMs: 1000,
  });
  return html`
    <${PulseStrip} api=${api}>
      <${Capacity} admission=${status.data?.admission} />
      <//>
  `;
}

function Shell({ api, status, onSignOut }) {
  const route = useRoute();
  useEffect(() => startLive(api), [api]);
  return html`
    <div class="shell">
      <header class="top">
        <a class="brand" href="#/runs"><span class="logo" aria-hidden="true"></span>svc</a>
        <nav aria-label="views">
            ${NAV.map(([key, label]) =>
              html`<a href=${`#/${key}`} aria-current=${
                route[0] === key ? "page" : undefined
              }>${label}</a>`
            )}
            <${NotificationBadge} api=${api} current=${route[0] === "notifications"} />
          </nav>
        <div class="who">
            <${Connection} />
            <span class="muted">${status.caller.owner} · v${status.version}</span>
            ${api.token !== ""
              ? html`<button class="link" onClick=${onSignOut}>Forget token</button>`
              : null}
          </div>
      </header>
      <${Summary} api=${api} />
      <main tabindex="-1">
        <${View} api=${api} route=${route} status=${status} />
      </main>
    </div>
  `;
}

function TokenForm({ error, onToken }) {
  const [value, setValue] = useState("");
  const submit = (event) => {
    event.preventDefault();
    if (value.trim() !== "") onToken(value.trim());
  };
  return html`
    <div class="gate">
      <form class="panel gate-form" onSubmit=${submit}>
        <h1><span class="logo" aria-hidden="true"></span>svc dashboard</h1>
        <p>This server needs a token. <code>svc dashboard</code> printed it at start-up (with a
            ready-to-open URL), or see <code>dashboard.token</code> in the svc data directory.</p>
        <label for="token">Token</label>
        <input id="token" type="password" autocomplete="off" value=${value} autofocus
          onInput=${(e) => setValue(e.currentTarget.value)} />
        <${ErrorBox} error=${error} title="Not signed in" />
        <button type="submit" class="primary">Open the dashboard</button>
      </form>
    </div>
  `;
}

function App() {
  const [api, setApi] = useState(() => {
    const fromUrl = tokenFromFragment();
    if (fromUrl !== undefined) storeToken(fromUrl);
    return new Api(fromUrl ?? storedToken());
  });
  const [gate, setGate] = useState({ state: "checking" });
  useEffect(() => {
    let stop = false;
    api.json("/api/status").then(
      (status) => !stop && setGate({ state: "open", status }),
      (error) => {
        if (stop) return;
        if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
          if (api.token !== "") storeToken("");
          setGate({
            state: "token",
            error: api.token === "" ? undefined : new ApiError(
              error.status,
              error.code,
              error.status === 401
                ? "That token was not accepted. Check it and try again."
                : error.message,
            ),
          });
        } else setGate({ state: "down", error });
      },
    );
    return () => {
      stop = true;
    };
  }, [api]);
  const useToken = (token) => {
    storeToken(token);
    setGate({ state: "checking" });
    setApi(new Api(token));
  };
  if (gate.state === "checking") return html`<p class="empty">Connecting…</p>`;
  if (gate.state === "token") return html`<${TokenForm} error=${gate.error} onToken=${useToken} />`;
  if (gate.state === "down") {
    return html`
      <div class="gate">
        <div class="panel gate-form">
          <${ErrorBox} error=${gate.error} title="Cannot open the dashboard" />
          <button class="primary" onClick=${() => setApi(new Api(api.token))}>Try again</button>
        </div>
      </div>
    `;
  }
  return html`
    <${Shell} api=${api} status=${gate.status}
      onSignOut=${() => {
        storeToken("");
        setApi(new Api(""));
      }} />
  `;
}

render(html`<${App} />`, document.getElementById("app"));

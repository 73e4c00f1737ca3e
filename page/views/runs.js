/** The runs list: state, name, calls, cost and age of the caller's runs, updated live. */
import { html, useState } from "../lib/html.js";
import { useNow, useResource } from "../lib/live.js";
import { age, between, count, duration, money, preview, seg, tokens } from "../lib/format.js";
import { Empty, ErrorBox, Section, StateBadge } from "../lib/ui.js";

const FILTERS = [
  ["", "All"],
  ["running,queued", "Active"],
  ["failed,timeout,interrupted", "Went wrong"],
  ["succeeded", "Succeeded"],
  ["cancelled", "Cancelled"],
];

/** One run's row. */
function RunRow({ run, now, waiting }) {
  const calls = run.calls.total;
  const { failed, skipped } = run.calls;
  return html`
    <tr class=${`row-${run.state}`}>
      <td>
        <${StateBadge} state=${run.state} />${waiting
          ? html`
            <a class="badge attention" href=${`#/runs/${seg(run.run_id)}`}
              title="a call waits for your approval">approval</a>
          `
          : null}
      </td>
      <td><a class="run-title" href=${`#/runs/${seg(run.run_id)}`}>${run.title ?? run.name ??
        run.filename}</a>
          ${run.title
            ? html`<div class="muted small run-script">${run.name ?? run.filename}</div>`
            : null}
          <div class="muted mono small">${run.run_id}</div>
          ${run.started_by
            ? html`<div class="muted small started-by">by ${run.started_by.text}</div>`
            : null}
          ${run.error
            ? html`<div class="row-error small">${
              run.error.message.startsWith(run.error.code) ? "" : `${run.error.code}: `
            }${preview(run.error.message, 140)}</div>`
            : null}
          ${run.conditions?.length
            ? html`<div class="warn small">${run.conditions.map((c) => c.type).join(", ")}</div>`
            : null}</td>
      <td class="num">${calls}${failed > 0
        ? html`<div class="warn small">${failed} failed</div>`
        : null}${skipped > 0 ? html`<div class="muted small">${skipped} skipped</div>` : null}</td>
      <td class="num">${money(run.journal.usage.cost_usd)}<div class="muted small">${count(
        tokens(run.journal.usage),
      )} tok</div></td>
      <td class="num">${duration(between(run.started_at ?? run.created_at, run.ended_at))}</td>
      <td class="num" title=${run.created_at}>${age(run.created_at, now)} ago</td>
    </tr>
  `;
}

/** `#/runs`. */
export function RunsView({ api }) {
  const [filter, setFilter] = useState("");
  const [pages, setPages] = useState(1);
  const now = useNow(5000);
  const [active, setActive] = useState(false);
  const runs = useResource(
    async (signal) => {
      const all = [];
      let cursor;
      for (let page = 0; page < pages; page++) {
        const query = new URLSearchParams({ limit: "50" });
        if (filter) query.set("state", filter);
        if (cursor) query.set("cursor", cursor);
        const body = await api.json(`/api/workflow?${query}`, { signal });
        all.push(...body.runs);
        cursor = body.next_cursor;
        if (!cursor) break;
      }
      setActive(all.some((run) => run.state === "running" || run.state === "queued"));
      return { runs: all, more: Boolean(cursor) };
      // Calls and costs of running runs change without a state change: re-read while any runs.
    },
    [filter, pages],
    { kinds: ["run"], every: active ? 2000 : undefined },
  );
  const list = runs.data?.runs ?? [];
  // Runs with a call waiting for a person are marked: the pending approvals name their runs.
  const pending = useResource(
    (signal) =>
      active
        ? api.json("/api/approvals?state=pending&limit=500", { signal })
        : Promise.resolve(undefined),
    [active],
    { kinds: ["run", "task"], every: active ? 3000 : undefined },
  );
  const waiting = new Set((pending.data?.approvals ?? []).map((a) => a.run_id).filter(Boolean));
  return html`
    <${Section} title="Runs"
      actions=${html`<a class="button primary" href="#/runs/new">Start a run</a>`}>
        <div class="filters" role="group" aria-label="filter runs">
          ${FILTERS.map(([value, label]) =>
            html`
              <button class=${filter === value
                ? "chip on"
                : "chip"} aria-pressed=${filter === value}
                onClick=${() => {
                  setFilter(value);
                  setPages(1);
                }}>${label}</button>
            `
          )}
        </div>
        <${ErrorBox} error=${runs.error} title="Cannot list the runs" />
        ${list.length === 0 && !runs.loading
          ? html`<${Empty}>No runs yet. <a href="#/runs/new">Start one</a>, or run <code>svc workflow run</code>.<//>`
          : html`
            <div class="table-wrap">
              <table class="runs">
                <thead>
                  <tr>
                    <th>State</th>
                    <th>Run</th>
                    <th class="num">Calls</th>
                    <th class="num">Cost</th>
                    <th class="num">Took</th>
                    <th class="num">Started</th>
                  </tr>
                </thead>
                <tbody>${list.map((run) =>
                  html`<${RunRow} key=${run.run_id} run=${run} now=${now} waiting=${
                    waiting.has(run.run_id)
                  } />`
                )}</tbody>
              </table>
            </div>
          `}
        ${runs.data?.more
          ? html`<button class="more" onClick=${() =>
            setPages((p) => p + 1)}>Show older runs</button>`
          : null}
      <//>
  `;
}

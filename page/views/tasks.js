/** Tasks (asynchronous dispatches): the list, one task with its result, cancel, a new dispatch. */
import { html, useEffect, useState } from "../lib/html.js";
import { useAction } from "../lib/action.js";
import { useNow, useResource } from "../lib/live.js";
import { followEvents } from "../lib/sse.js";
import {
  age,
  asText,
  between,
  count,
  duration,
  money,
  preview,
  seg,
  TERMINAL,
  tokens,
} from "../lib/format.js";
import { Empty, ErrorBox, Section, StateBadge, TextBlock } from "../lib/ui.js";
import { DecideForm, Decision } from "./decide.js";

function DispatchForm({ api }) {
  const [prompt, setPrompt] = useState("");
  const [fake, setFake] = useState(true);
  const { busy, error, run } = useAction();
  const submit = (event) => {
    event.preventDefault();
    run(async () => {
      const task = await api.json("/api/dispatch", { body: { prompt, fake_dispatch: fake } });
      location.hash = `#/tasks/${seg(task.task_id)}`;
    });
  };
  return html`
    <form class="dispatch-form" onSubmit=${submit}>
      <label for="prompt">Dispatch a prompt to an agent</label>
      <textarea id="prompt" rows="3" required value=${prompt} onInput=${(e) =>
        setPrompt(e.currentTarget.value)}></textarea>
      <div class="row">
        <label
          class="check"><input type="checkbox" checked=${fake} onChange=${(e) =>
            setFake(e.currentTarget.checked)} /> Fake dispatch</label>
        <button type="submit" class="primary" disabled=${busy}>Dispatch</button>
      </div>
      <${ErrorBox} error=${error} title="Cannot dispatch" />
    </form>
  `;
}

/** `#/tasks`. */
export function TasksView({ api }) {
  const now = useNow(5000);
  const tasks = useResource((signal) => api.json("/api/tasks?limit=100", { signal }), [], {
    kinds: ["task"],
  });
  const list = tasks.data?.tasks ?? [];
  return html`<${Section} title="Tasks and dispatches">
    <${DispatchForm} api=${api} />
    <${ErrorBox} error=${tasks.error} title="Cannot list the tasks" />
    ${
    list.length === 0 && !tasks.loading ? html`<${Empty}>No tasks yet.<//>` : html`
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>State</th>
              <th>Task</th>
              <th>Provider</th>
              <th class="num">Tokens</th>
              <th class="num">Cost</th>
              <th class="num">Took</th>
              <th class="num">Started</th>
            </tr>
          </thead>
          <tbody>${list.map((t) =>
            html`
              <tr key=${t.task_id} class=${`row-${t.state}`}>
                <td><${StateBadge} state=${t.state} />${t.waiting_for_approval
                  ? html`
                    <a class="badge attention" href=${`#/tasks/${seg(t.task_id)}`}>approval</a>
                  `
                  : null}</td>
                <td><a href=${`#/tasks/${seg(t.task_id)}`}>${t.label ??
                  preview(t.prompt, 60)}</a><div class="muted mono small">${t.task_id}</div></td>
                <td>${t.provider ?? "—"}</td>
                <td class="num">${count(tokens(t.usage))}</td>
                <td class="num">${money(t.cost_usd)}</td>
                <td class="num">${duration(between(t.started_at ?? t.created_at, t.ended_at))}</td>
                <td class="num">${age(t.created_at, now)} ago</td>
              </tr>
            `
          )}</tbody>
        </table>
      </div>
    `
  }
  <//>`;
}

/** `#/tasks/<id>`. */
export function TaskView({ api, taskId }) {
  const path = `/api/dispatch/${seg(taskId)}`;
  const task = useResource((signal) => api.json(path, { signal }), [taskId], { kinds: ["task"] });
  const { error, run } = useAction();
  // The task's approval once decided (its feed's `approval` event): who, when and why.
  const [decided, setDecided] = useState();
  useEffect(() => {
    const controller = new AbortController();
    followEvents(`${path}/events`, {
      api,
      signal: controller.signal,
      onEvent: ({ event, data }) => {
        if (event === "approval" && data.approval?.state !== "pending") {
          setDecided({ ...data.approval, at: data.at });
        }
        task.reload();
      },
    });
    return () => controller.abort();
  }, [taskId]);
  const t = task.data;
  if (task.error && !t) {
    return html`<${ErrorBox} error=${task.error} title="Cannot show this task" />`;
  }
  if (!t) return html`<p class="empty">Loading ${taskId}…</p>`;
  const cancel = () =>
    run(async () => {
      await api.json(`${path}/cancel`, { method: "POST", body: {} });
      task.reload();
    });
  return html`
    <${Section} title=${`Task ${t.label ?? t.task_id}`}
      actions=${html`${
        TERMINAL.has(t.state)
          ? null
          : html`<button class="danger" onClick=${cancel}>Cancel task</button>`
      }
      <a class="button" href="#/tasks">All tasks</a>`}>
        <div class="title-line"><${StateBadge} state=${t.state} /><span class="mono muted small">${t
          .task_id}</span></div>
        <${ErrorBox} error=${error} title="Cannot cancel" />
        <dl class="facts">
          <dt>provider</dt><dd>${t.provider ?? "—"}${t.model ? ` · ${t.model}` : ""}</dd>
          ${t.route
            ? html`
              <dt>route</dt>
              <dd>${t.route}</dd>
            `
            : null}
          <dt>tokens</dt><dd>${t.usage.input_tokens} in · ${t.usage.output_tokens} out</dd>
          <dt>cost</dt><dd>${money(t.cost_usd)}</dd>
          <dt>took</dt><dd>${duration(between(t.started_at ?? t.created_at, t.ended_at))}</dd>
          ${t.session_id
            ? html`
              <dt>session</dt>
              <dd><a href=${`#/sessions/${seg(t.session_id)}`}>${t.session_id}</a></dd>
            `
            : null}
          ${decided
            ? html`
              <dt>approval</dt>
              <dd>
                <${Decision} decision=${decided} />
              </dd>
            `
            : null}
        </dl>
        ${t.waiting_for_approval
          ? html`
            <div class="panel run-approval approval-pending">
              <p>This dispatch asks for the <b>full</b> sandbox: <span
                          class="badge attention">waiting for a person</span></p>
              <${DecideForm} api=${api} approvalId=${t.waiting_for_approval} onDecided=${(r) => {
                setDecided({ ...r, at: r.decided_at });
                task.reload();
              }} />
            </div>
          `
          : null}
        <h3>Prompt</h3>
        <${TextBlock} text=${t.prompt} label="prompt" />
        ${t.error ? html`<${ErrorBox} error=${t.error} title=${t.state} />` : null}
        ${t.result !== undefined
          ? html`
            <h3>Result</h3>
            <${TextBlock} text=${asText(t.result)} label="task result" />
          `
          : null}
      <//>
  `;
}

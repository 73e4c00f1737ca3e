/**
 * One run: its phases as a tree of calls (a running call under its own phase, with its label),
 * its graph and timeline, the narration and the event history as they arrive, its conditions
 * and problems, and its result or error when it ends; cancel while it runs, resume once it
 * ended. Live from `/api/workflow/<id>/events` (the run's own feed, from its first event).
 */
import { html, useEffect, useMemo, useRef, useState } from "../lib/html.js";
import { useAction } from "../lib/action.js";
import { followEvents } from "../lib/sse.js";
import { useNow } from "../lib/live.js";
import {
  asText,
  between,
  clock,
  count,
  duration,
  money,
  preview,
  seg,
  TERMINAL,
  tokens,
} from "../lib/format.js";
import { Empty, ErrorBox, Section, StateBadge, TextBlock } from "../lib/ui.js";
import { RunGraph } from "./run_graph.js";
import { RunTimeline } from "./run_timeline.js";
import { remember, RunHistory } from "./run_history.js";
import { RunApprovals } from "./run_approvals.js";
import { addProgress, CallOutput } from "./call_output.js";
import { RecordedOutput } from "./call_recorded.js";
import { WaitingCalls, waitingCalls } from "./run_waiting.js";

const NO_PHASE = "Before any phase";

/** The tier the run got and what confined its guest: "unsafe-local · bubblewrap". */
function Isolation({ status }) {
  const sandbox = status.guest_sandbox;
  const what = !sandbox ? "guest not started" : sandbox.hardened ? sandbox.kind : "no OS sandbox";
  const title = sandbox?.note ? `Not hardened: ${sandbox.note}` : "Where the script ran";
  return html`
    <span class=${`tag isolation${sandbox && !sandbox.hardened ? " warn" : ""}`}
      data-isolation=${status.isolation} title=${title}>${status.isolation} · ${what}</span>
  `;
}

/**
 * Groups journal entries by phase: the call's `phase` option, else the phase narrated last
 * before it; calls running now (their `call_started` events) join the phase they started in.
 */
function phaseTree(meta, narration, entries, running) {
  const marks = narration.filter((n) => n.kind === "phase");
  const order = [];
  const add = (title) => !order.includes(title) && order.push(title);
  for (const title of meta?.phases ?? []) add(title);
  for (const mark of marks) add(mark.text);
  const groups = new Map();
  for (const entry of entries) {
    let phase = entry.phase;
    if (phase === undefined) {
      phase = NO_PHASE;
      for (const mark of marks) if (mark.at <= entry.started_at) phase = mark.text;
    }
    if (phase === NO_PHASE && !order.includes(NO_PHASE)) order.unshift(NO_PHASE);
    add(phase);
    if (!groups.has(phase)) groups.set(phase, []);
    groups.get(phase).push(entry);
  }
  const live = new Map();
  for (const call of running) {
    const phase = call.phase ?? NO_PHASE;
    if (phase === NO_PHASE && !order.includes(NO_PHASE)) order.unshift(NO_PHASE);
    add(phase);
    if (!live.has(phase)) live.set(phase, []);
    live.get(phase).push(call);
  }
  return order.map((title) => ({
    title,
    calls: groups.get(title) ?? [],
    running: live.get(title) ?? [],
  }));
}

/** A call running now: its label while it runs, with a spinner under its own phase. */
function RunningRow({ call, now }) {
  return html`
    <li class="call running" data-seq=${call.seq}>
      <div class="running-line">
        <span class="spinner" aria-hidden="true"></span>
        <span class="seq mono">#${call.seq}</span>
        <span class="label">${call.label ?? "(no label)"}</span>
        <span class="badge outcome outcome-running">running</span>
        <span class="muted small">${duration(Math.max(0, now - Date.parse(call.at)))}</span>
      </div>
    </li>
  `;
}

function CallRow({ api, runId, entry }) {
  const failed = entry.outcome === "failed" || entry.outcome === "skipped";
  return html`
    <li class=${`call outcome-${entry.outcome}`}>
      <details>
        <summary>
          <span class="seq mono">#${entry.seq}</span>
          <span class="label">${entry.label ?? "(no label)"}</span>
          <span class=${`badge outcome outcome-${entry.outcome}`}>${entry.outcome}</span>
          <span class="muted">${entry.provider ??
            "no provider"}${entry.model && entry.model !== entry.provider
            ? ` · ${entry.model}`
            : ""}</span>
          <span class="figures muted">${count(tokens(entry.usage))} tok · ${money(
            entry.cost_usd,
          )} · ${duration(entry.duration_ms)}</span>
          <span class="result-preview">${failed
            ? entry.reason ?? ""
            : preview(entry.result, 120)}</span>
        </summary>
        <div class="call-detail">
            ${failed
              ? html`<div class="error-box"><strong>${entry.outcome}</strong><div>${
                entry.reason ?? "no reason recorded"
              }</div></div>`
              : html`<${TextBlock} text=${
                asText(entry.result)
              } label=${`result of call ${entry.seq}`} />`}
            <dl class="facts">
              ${entry.route
                ? html`
                  <dt>route</dt>
                  <dd>${entry.route}</dd>
                `
                : null}
              ${entry.sandbox
                ? html`
                  <dt>sandbox</dt>
                  <dd>${entry.sandbox}${entry.sandbox_clamped
                    ? ` (${entry.sandbox_clamped})`
                    : ""}</dd>
                `
                : null}
              <dt>attempts</dt><dd>${entry.attempts}</dd>
              <dt>tokens</dt><dd>${entry.usage.input_tokens} in · ${entry.usage
                .output_tokens} out</dd>
              ${entry.replayed_from
                ? html`
                  <dt>replayed from</dt>
                  <dd><a href=${`#/runs/${seg(entry.replayed_from)}`}>${entry
                    .replayed_from}</a></dd>
                `
                : null}
              <dt>started</dt><dd>${clock(entry.started_at)}</dd>
            </dl>
            <${RecordedOutput} api=${api} runId=${runId} seq=${entry.seq} />
          </div>
      </details>
    </li>
  `;
}

function Budget({ budget }) {
  if (!budget || budget.total === null) return null;
  const share = Math.min(1, budget.total > 0 ? budget.spent / budget.total : 1);
  const unit = budget.unit === "usd" ? money : count;
  return html`
    <div class="budget">
      <span>budget</span>
      <meter min="0" max="1" value=${share} low="0.7" high="0.9" optimum="0"
        aria-label="budget spent">${Math.round(share * 100)}%</meter>
      <span class="muted">${unit(budget.spent)} of ${unit(budget.total)} ${budget.unit === "usd"
        ? ""
        : "tokens"}</span>
    </div>
  `;
}

function Problems({ status }) {
  const items = [];
  for (const c of status.conditions) {
    items.push(html`<li class="condition"><b>${c.type}</b> ${c.message}</li>`);
  }
  if (status.conditions_dropped > 0) {
    items.push(html`<li>…and ${status.conditions_dropped} more conditions</li>`);
  }
  for (const [kind, n] of Object.entries(status.failures ?? {})) {
    items.push(html`<li class="failure"><b>${kind}</b> × ${n}</li>`);
  }
  for (const e of status.script_errors) {
    const where = e.file ? ` (${e.file}:${e.line ?? "?"})` : "";
    items.push(
      html`<li class="failure"><b>${e.fn}() item ${e.index}</b> ${e.name}: ${e.message}${where}</li>`,
    );
  }
  for (const s of status.security_events) {
    items.push(html`<li class="security"><b>security: ${s.kind}</b> ${s.detail}</li>`);
  }
  if (status.fake_provider_only) {
    items.push(html`
      <li
        class="condition"><b>fake provider only</b> no real provider is configured: answers are fake</li>
    `);
  }
  if (items.length === 0) return null;
  return html`
    <${Section} title="Conditions and problems">
      <ul class="problems">${items}</ul>
      <//>
  `;
}

function Ending({ status }) {
  if (!TERMINAL.has(status.state)) return null;
  if (status.error) {
    const e = status.error;
    const where = e.file ? ` at ${e.file}:${e.line ?? "?"}:${e.column ?? "?"}` : "";
    // A cancel's message names the state and who asked: the state is then said once.
    const once = e.code === status.state && e.message.startsWith(status.state);
    return html`<div class="error-box ending" role="alert">
      <strong>${once ? e.message : `${status.state}: ${e.code}`}${where}</strong>
      ${once ? null : html`<div>${e.message}</div>`}
      ${e.stack ? html`<${TextBlock} text=${e.stack} label="stack" />` : null}
    </div>`;
  }
  return html`<div class="result ending">
    <h3>Result</h3>
    ${
    status.result === undefined
      ? html`<p class="muted">The script returned nothing.</p>`
      : html`<${TextBlock} text=${asText(status.result)} label="run result" />`
  }
  </div>`;
}

/** `#/runs/<id>`. */
export function RunView({ api, runId }) {
  const [status, setStatus] = useState();
  const [journal, setJournal] = useState([]);
  const [narration, setNarration] = useState([]);
  const [counts, setCounts] = useState();
  const [dag, setDag] = useState();
  const [history, setHistory] = useState([]);
  const [running, setRunning] = useState(() => new Map());
  // Each approval of the run by its id: its newest `approval` event (or the decision made here).
  const [approvals, setApprovals] = useState({});
  const noteApproval = (a) =>
    setApprovals((m) => ({ ...m, [a.approval_id]: { ...m[a.approval_id], ...a } }));
  // Calls' live output by seq, from the feed's `progress` events; a journaled call's is dropped.
  const [outputs, setOutputs] = useState({});
  const { busy: acting, error, run } = useAction();
  const [loadError, setLoadError] = useState();
  const [feed, setFeed] = useState("connecting");
  const now = useNow(1000);
  const reload = useRef(() => {});
  const path = `/api/workflow/${seg(runId)}`;

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    let timer;
    // A failed re-read keeps what is shown: the stream's state says the server is away.
    const readStatus = () =>
      api.json(path, { signal }).then((s) => {
        setStatus(s);
        setLoadError(undefined);
      }, (e) => !signal.aborted && setLoadError(e));
    const readJournal = () =>
      Promise.all([
        api.json(`${path}/journal`, { signal }).then((j) => setJournal(j.entries), () => {}),
        api.json(`${path}/dag`, { signal }).then(setDag, () => {}),
      ]);
    const soon = () => {
      if (timer !== undefined) return;
      // The journal first: the result never shows above a tree that lacks its last calls.
      timer = setTimeout(() => {
        timer = undefined;
        readJournal().then(readStatus);
      }, 200);
    };
    reload.current = () => {
      readStatus();
      readJournal();
    };
    readStatus().then(readJournal);
    followEvents(`${path}/events`, {
      api,
      signal,
      onStatus: (state, detail) => {
        setFeed(state);
        if (state === "failed") setLoadError(detail);
      },
      onEvent: ({ id, event, data }) => {
        if (event !== "reset") setHistory((list) => remember(list, { id, event, data }));
        if (event === "reset") {
          setNarration([]);
          setApprovals({});
          setOutputs({});
          setHistory([]);
          setRunning(new Map());
          soon();
        } else if (event === "call_started") {
          setRunning((map) => new Map(map).set(data.seq, data));
          soon();
        } else if (event === "progress") {
          setOutputs((all) => ({ ...all, [data.seq]: addProgress(all[data.seq], data.items) }));
        } else if (event === "narration") {
          setNarration((list) => [...list, data.entry]);
        } else if (event === "calls") {
          setCounts({ ...data.calls, usage: data.usage });
        } else if (event === "call") {
          setRunning((map) => {
            const next = new Map(map);
            next.delete(data.seq);
            return next;
          });
          setOutputs((all) => ({ ...all, [data.seq]: { ...all[data.seq], ended: true } }));
          soon();
        } else if (event === "calls_replayed") {
          // One event for many replayed calls: the journal lists them, re-read it.
          soon();
        } else if (event === "approval") {
          noteApproval(data);
        } else if (event === "state") {
          setStatus((s) => (s ? { ...s, state: data.state } : s));
          if (TERMINAL.has(data.state)) soon();
        }
      },
    });
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [runId]);

  // A call journaled is no longer running, whichever of its event and the journal came first.
  const runningNow = useMemo(() => {
    const done = new Set(journal.map((e) => e.seq));
    return [...running.values()].filter((c) => !done.has(c.seq));
  }, [running, journal]);
  const tree = useMemo(() => phaseTree(status?.meta, narration, journal, runningNow), [
    status,
    narration,
    journal,
    runningNow,
  ]);
  const waiting = useMemo(() => waitingCalls(approvals, journal, runningNow), [
    approvals,
    journal,
    runningNow,
  ]);
  const narrationEnd = useRef();
  useEffect(() => narrationEnd.current?.scrollIntoView?.({ block: "nearest" }), [narration.length]);

  if (loadError && !status) {
    return html`<${ErrorBox} error=${loadError} title="Cannot show this run" />`;
  }
  if (!status) return html`<p class="empty">Loading ${runId}…</p>`;
  const calls = counts ?? status.calls;
  const usage = counts?.usage ?? status.journal.usage;
  const ended = TERMINAL.has(status.state);
  const act = (what) =>
    run(async () => {
      if (what === "cancel") {
        await api.json(`${path}/cancel`, { method: "POST", body: {} });
        reload.current();
      } else {
        const next = await api.json(`${path}/resume`, { method: "POST", body: {} });
        location.hash = `#/runs/${seg(next.run_id)}`;
      }
    });
  return html`
    <div class="run-view">
      <header class="run-head panel">
          <div class="title-line">
            <h1 class="run-title">${status.title ?? status.name ?? status.filename}</h1>
            ${status.title
              ? html`<span class="muted small run-script">${status.name ?? status.filename}</span>`
              : null}
            <${StateBadge} state=${status.state} />
            ${status.state === "queued" && status.queue_position
              ? html`<span class="muted small">place ${status.queue_position} in the queue</span>`
              : null}
            <span class="mono muted small">${status.run_id}</span>
            ${feed === "reconnecting"
              ? html`<span class="connection conn-reconnecting">reconnecting…</span>`
              : null}
            ${feed === "failed"
              ? html`<span class="connection conn-failed">not following: ${
                loadError?.message ??
                  "refused"
              }</span>`
              : null}
          </div>
          ${status.description ? html`<p class="run-description">${status.description}</p>` : null}
          ${status.meta?.description ? html`<p class="muted">${status.meta.description}</p>` : null}
          ${status.started_by
            ? html`<p class="muted small started-by">Started by ${status.started_by.text}</p>`
            : null}
          <div class="figures-line">
            <span><b>${calls.total}</b> calls</span>
            <span>${calls.running} running · ${calls.queued} queued</span>
            <span>${calls.succeeded} ok · ${calls.failed} failed · ${calls
              .replayed} replayed · ${calls.skipped} skipped</span>
            <span><b>${count(tokens(usage))}</b> tokens</span>
            <span><b>${money(usage.cost_usd)}</b></span>
            <span title="how long it has run">${duration(
              between(
                status.started_at ?? status.created_at,
                status.ended_at ?? new Date(now).toISOString(),
              ),
            )}</span>
            ${status.fake_dispatch ? html`<span class="tag">fake dispatch</span>` : null}
            <${Isolation} status=${status} />
            ${status.card_id
              ? html`<a class="tag card-link" href=${`#/board/${
                seg(status.card_id)
              }`}>card #${status.card_id}</a>`
              : null}
            ${status.resumed_from
              ? html`<span>resumed from <a href=${`#/runs/${
                seg(status.resumed_from)
              }`}>${status.resumed_from}</a></span>`
              : null}
          </div>
          <${Budget} budget=${status.budget} />
          <div class="actions">
            ${ended
              ? html`
                <button onClick=${() => act("resume")} disabled=${acting}
                  title="Start a new run of the same script that replays this run's journaled calls">Resume</button>
              `
              : html`<button class="danger" onClick=${() =>
                act("cancel")} disabled=${acting}>Cancel run</button>`}
            <a class="button" href="#/runs">All runs</a>
          </div>
          <${ErrorBox} error=${error} title="That did not work" />
        </header>
      <${RunApprovals} api=${api} approvals=${approvals} onDecided=${(r) =>
        noteApproval({ ...r, at: r.decided_at })} />
      <${Ending} status=${status} />
      <${Problems} status=${status} />
      <div class="run-visuals">
        <${Section} title="Graph">
          <${RunGraph} dag=${dag} now=${now} />
          <//>
          <${Section} title="Timeline">
            <${RunTimeline} dag=${dag} now=${now} />
            <//>
            </div>
            <div class="run-columns">
              <${Section} title="Calls by phase">
            ${journal.length === 0 && calls.running === 0 && runningNow.length === 0 &&
                waiting.length === 0
              ? html`<${Empty}>No calls yet.<//>`
              : html`<ol class="tree">${
                tree.map((phase) =>
                  html`
                    <li
                      class="phase"
                      data-phase=${phase.title}><div class="phase-title">${phase
                        .title} <span class="muted">(${phase.calls.length +
                        phase.running.length})</span></div>
                                  ${phase.calls.length + phase.running.length > 0
                                    ? html`<ul class="calls">${
                                      phase.calls.map((entry) =>
                                        html`
                                          <${CallRow} key=${entry.seq} api=${api} runId=${runId}
                                            entry=${entry} />
                                        `
                                      )
                                    }${
                                      phase.running.map((call) =>
                                        html`
                                          <${RunningRow} key=${`r${call.seq}`} call=${call}
                                            now=${now} />
                                        `
                                      )
                                    }</ul>`
                                    : null}
                                </li>
                  `
                )
              }</ol>`}
            <${WaitingCalls} runId=${runId} waiting=${waiting} />
            ${Object.entries(outputs).filter(([seq, output]) =>
              !output.ended && output.lines && !journal.some((e) => e.seq === Number(seq))
            ).map(([seq, output]) =>
              html`<${CallOutput} key=${seq} seq=${seq} output=${output} running=${!ended} />`
            )}
            ${calls.running + calls.queued > 0
              ? html`
                <p class="live-calls">${calls.running} running, ${calls.queued} queued</p>
              `
              : null}
          <//>
          <${Section} title="Narration">
            ${narration.length === 0 ? html`<${Empty}>Nothing narrated yet.<//>` : html`
              <ol class="narration"
                aria-live="polite">${narration.map((n, i) =>
                  html`
                    <li key=${i}
                      class=${`narr narr-${n.kind}`}><time>${clock(
                        n.at,
                      )}</time><span class="kind">${n.kind}</span><span class="text">${n
                        .text}</span></li>
                  `
                )}<li ref=${narrationEnd} class="end" aria-hidden="true"></li></ol>
            `}
            ${status.narration_dropped > 0
              ? html`<p class="muted">${status.narration_dropped} lines were dropped (the narration limit).</p>`
              : null}
          <//>
        </div>
      <${Section} title="Event history"><${RunHistory} events=${history} /><//>
      </div>
  `;
}

/**
 * The board: cards in columns by state. Every write (a new card, take, log, done, drop,
 * cancel) is previewed first, a dry run that persists nothing, and applied only on a second,
 * explicit step: the two modes of `POST /api/board/write`.
 */
import { html, useState } from "../lib/html.js";
import { useAction } from "../lib/action.js";
import { useResource } from "../lib/live.js";
import { age, asText, clock } from "../lib/format.js";
import { Empty, ErrorBox, Section, TextBlock } from "../lib/ui.js";
import { CardRuns } from "./card_runs.js";

const COLUMNS = ["new", "taken", "done", "dropped", "cancelled"];
/** Which actions a card in a state can take (the board's transition table). */
const ACTIONS = {
  new: ["take", "log", "done", "drop", "cancel"],
  taken: ["take", "log", "done", "drop", "cancel"],
  done: ["log"],
  dropped: ["take", "log", "cancel"],
  cancelled: [],
};

function Card({ card, selected, onSelect }) {
  return html`
    <li>
      <button class=${`card ${selected ? "selected" : ""}`} onClick=${() => onSelect(card.issue_id)}
        aria-pressed=${selected} aria-label=${`card ${card.issue_id}: ${card.title}`}>
          <span class="card-id mono">#${card.issue_id}</span>
          <span class="card-title">${card.title}</span>
          <span class="card-meta">
            ${card.priority
              ? html`<span class="prio-badge" title="priority"><span class="sr-only">priority </span>${card.priority}</span>`
              : null}
            ${card.project
              ? html`<span class="project-chip" title="project"><span class="chip-key">project</span>${card.project}</span>`
              : null}
            ${card.codename
              ? html`<span class="tag codename" title="codename">${card.codename}</span>`
              : null}
            ${card.labels.map((l) => html`<span class="tag label" title="label">${l}</span>`)}
          </span>
          ${card.next ? html`<span class="card-next">next: ${card.next}</span>` : null}
          <span class="muted small">${card.by} · ${age(card.updated_at)} ago</span>
        </button>
    </li>
  `;
}

/** The body of a write from the form's fields: empty fields are left out. */
function writeBody(action, fields, issueId) {
  const body = { action };
  if (issueId) body.issue_id = issueId;
  for (const key of ["title", "project", "priority", "desc", "message", "next", "codename", "by"]) {
    const value = fields[key];
    if (typeof value === "string" && value.trim() !== "") body[key] = value.trim();
  }
  if (typeof fields.labels === "string" && fields.labels.trim() !== "") {
    body.labels = fields.labels.split(",").map((l) => l.trim()).filter(Boolean);
  }
  return body;
}

function Preview({ outcome }) {
  const card = outcome.card;
  return html`<div class="preview" aria-label="dry run result">
    <p><b>${outcome.applied ? "Applied" : "Dry run"}:</b> ${outcome.action}
      ${
    card
      ? html`
        → card <span class="mono">#${card.issue_id}</span> “${card.title}” is <b>${card.state}</b>
      `
      : null
  }</p>
    ${outcome.applied ? null : html`<p class="muted">Nothing was written. Apply to write it.</p>`}
    ${
    card && !outcome.applied
      ? html`
        <details>
          <summary>The card as it would be</summary>
          <${TextBlock} text=${asText(card)} />
        </details>
      `
      : null
  }
  </div>`;
}

/** A board write: fields, a dry run, then apply. */
function WriteForm({ api, action: fixedAction, card, onDone }) {
  const choices = card ? ACTIONS[card.state] ?? ["log"] : ["new"];
  const [action, setAction] = useState(fixedAction ?? choices[0]);
  const [fields, setFields] = useState({});
  const [preview, setPreview] = useState();
  const { busy, error, run } = useAction();
  const set = (key) => (event) => {
    const value = event.currentTarget.value;
    setFields((f) => ({ ...f, [key]: value }));
    setPreview(undefined);
  };
  const send = (mode) =>
    run(async () => {
      const outcome = await api.json("/api/board/write", {
        body: { ...writeBody(action, fields, card?.issue_id), mode },
      });
      if (mode === "apply") {
        setPreview(undefined);
        setFields({});
        onDone?.(outcome);
      } else setPreview(outcome);
    });
  const input = (key, label, props = {}) =>
    html`<label>${label}<input name=${key} value=${fields[key] ?? ""} onInput=${
      set(key)
    } ...${props} /></label>`;
  return html`<form class="board-write" onSubmit=${(e) => {
    e.preventDefault();
    send("dry_run");
  }}>
    ${
    card
      ? html`
        <div
          class="row"><label>Action <select name="action" value=${action} onChange=${(e) => {
            setAction(e.currentTarget.value);
            setPreview(undefined);
          }}>${choices.map((a) => html`<option value=${a}>${a}</option>`)}</select></label>
                ${input("by", "By", { placeholder: "who acts" })}</div>
      `
      : null
  }
    ${
    action === "new"
      ? html`${input("title", "Title", { required: true, maxlength: 200 })}
        <div class="row">${input("project", "Project")}${input("priority", "Priority")}${
        input("labels", "Labels (comma-separated)")
      }</div>
        <label>Description<textarea name="desc" rows="3" value=${fields.desc ?? ""} onInput=${
        set("desc")
      }></textarea></label>`
      : html`<label>Message<textarea name="message" rows="2" value=${
        fields.message ?? ""
      } onInput=${set("message")}></textarea></label>`
  }
    ${input("next", "Next step")}
    <${ErrorBox} error=${error} title="The board refused it" />
    ${preview ? html`<${Preview} outcome=${preview} />` : null}
    <div class="actions">
      <button type="submit" disabled=${busy}>Preview (dry run)</button>
      <button type="button" class="primary" disabled=${busy || !preview}
        title=${preview ? "write it" : "preview it first"} onClick=${() =>
    send("apply")}>Apply</button>
    </div>
  </form>`;
}

function CardDetail({ api, issueId, onClose }) {
  const card = useResource(
    (signal) => api.json(`/api/board/${encodeURIComponent(issueId)}`, { signal }),
    [issueId],
    {
      kinds: ["card"],
    },
  );
  const c = card.data;
  return html`<aside class="panel card-detail" aria-label=${`card ${issueId}`}>
    <header class="panel-head"><h2>#${issueId} ${c?.title ?? ""}</h2>
      <button class="link" onClick=${onClose} aria-label="close the card">Close</button></header>
    <${ErrorBox} error=${card.error} title="Cannot read the card" />
    ${
    c
      ? html`<dl class="facts">
          <dt>state</dt><dd>${c.state}</dd>
          ${
        c.project
          ? html`
            <dt>project</dt>
            <dd>${c.project}</dd>
          `
          : null
      }
          ${
        c.priority
          ? html`
            <dt>priority</dt>
            <dd>${c.priority}</dd>
          `
          : null
      }
          ${
        c.codename
          ? html`
            <dt>codename</dt>
            <dd>${c.codename}</dd>
          `
          : null
      }
          ${
        c.next
          ? html`
            <dt>next</dt>
            <dd>${c.next}</dd>
          `
          : null
      }
          <dt>owner</dt><dd>${c.owner}</dd>
        </dl>
        ${c.desc ? html`<${TextBlock} text=${c.desc} label="description" />` : null}
        <${CardRuns} api=${api} issueId=${issueId} />
        <h3>History</h3>
        <ol class="card-log">${
        c.log.map((entry) =>
          html`<li><time>${clock(entry.at)}</time> <b>${entry.action}</b> by ${entry.by}${
            entry.message ? html`: <span class="text">${entry.message}</span>` : null
          }</li>`
        )
      }</ol>
        ${
        (ACTIONS[c.state] ?? []).length === 0
          ? html`<p class="muted">A ${c.state} card takes no more writes.</p>`
          : html`
            <h3>Act on it</h3>
            <${WriteForm} api=${api} card=${c} key=${`${c.issue_id}-${c.state}`} onDone=${() =>
              card.reload()} />
          `
      }`
      : null
  }
  </aside>`;
}

/** `#/board`. */
export function BoardView({ api, cardId }) {
  const [selected, setSelected] = useState(cardId);
  const [creating, setCreating] = useState(false);
  const board = useResource(
    async (signal) => {
      const cards = [];
      let cursor;
      do {
        const query = new URLSearchParams({ limit: "500" });
        if (cursor) query.set("cursor", cursor);
        const page = await api.json(`/api/board?${query}`, { signal });
        cards.push(...page.cards);
        cursor = page.next_cursor;
      } while (cursor && cards.length < 2000);
      return cards;
    },
    [],
    { kinds: ["card"] },
  );
  const cards = board.data ?? [];
  return html`
    <div class="board-view">
      <${Section} title="Board" actions=${html`
        <button class="primary" onClick=${() => setCreating((c) => !c)}
          aria-expanded=${creating}>${creating ? "Close" : "New card"}</button>
      `}>
          ${creating
            ? html`
              <div class="new-card">
                <${WriteForm} api=${api} action="new" onDone=${(outcome) => {
                  setCreating(false);
                  if (outcome.card) setSelected(outcome.card.issue_id);
                }} />
              </div>
            `
            : null}
          <${ErrorBox} error=${board.error} title="Cannot read the board" />
          <div class="columns">
            ${COLUMNS.map((state) => {
              const inColumn = cards.filter((c) => c.state === state);
              return html`<section class="column" aria-label=${`${state} cards`}>
            <h3>${state} <span class="muted">${inColumn.length}</span></h3>
            ${
                inColumn.length === 0
                  ? html`<${Empty}>none<//>`
                  : html`<ul class="cards">${
                    inColumn.map((card) =>
                      html`
                        <${Card} key=${card
                          .issue_id} card=${card} selected=${selected === card.issue_id}
                          onSelect=${setSelected} />
                      `
                    )
                  }</ul>`
              }
          </section>`;
            })}
          </div>
        <//>
        ${selected
          ? html`<${CardDetail} api=${api} issueId=${selected} onClose=${() =>
            setSelected(undefined)} />`
          : null}
      </div>
  `;
}

/**
 * A run as a graph, drawn in SVG from `/api/workflow/<id>/dag`: the steps of a branch top to
 * bottom joined by edges, the branches of a fan-out (`parallel()` thunks, `pipeline()` items)
 * side by side in a frame, a pipeline item's stages in order, a sub-workflow in its own frame.
 * Each call is a box coloured by its state; a replayed call is dashed, and the call where live
 * execution began after a resume is marked. The drawing scales to the width it is given.
 */
import { html } from "../lib/html.js";
import { clock, duration, money } from "../lib/format.js";

const BOX_W = 150;
const BOX_H = 40;
const GAP = 18;
const PAD = 10;
const TITLE = 16;
const FRAMED = new Set(["parallel", "pipeline", "workflow", "item", "stage"]);
const SIDE_BY_SIDE = new Set(["parallel", "pipeline"]);

/** The nodes as a tree: `{node, children}` from the flat depth-first list. */
export function treeOf(nodes) {
  const byId = new Map();
  let root;
  for (const node of nodes) {
    const item = { node, children: [] };
    byId.set(node.id, item);
    if (node.parent === null) root = item;
    else byId.get(node.parent)?.children.push(item);
  }
  return root;
}

/** Sizes every item: a call is a box; a group stacks or spreads its children, framed. */
function measure(item) {
  const { node, children } = item;
  if (node.kind === "call") {
    item.w = BOX_W;
    item.h = BOX_H;
    return;
  }
  for (const child of children) measure(child);
  const across = SIDE_BY_SIDE.has(node.kind);
  const inner = children.length === 0 ? { w: BOX_W, h: BOX_H / 2 } : across
    ? {
      w: children.reduce((n, c) => n + c.w, 0) + GAP * (children.length - 1),
      h: Math.max(...children.map((c) => c.h)),
    }
    : {
      w: Math.max(...children.map((c) => c.w)),
      h: children.reduce((n, c) => n + c.h, 0) + GAP * (children.length - 1),
    };
  const framed = FRAMED.has(node.kind);
  item.w = inner.w + (framed ? PAD * 2 : 0);
  item.h = inner.h + (framed ? PAD * 2 + TITLE : 0);
}

/** Places every item at `x, y` (its top left). */
function place(item, x, y) {
  item.x = x;
  item.y = y;
  const framed = FRAMED.has(item.node.kind);
  let cx = x + (framed ? PAD : 0);
  let cy = y + (framed ? PAD + TITLE : 0);
  const across = SIDE_BY_SIDE.has(item.node.kind);
  const innerW = item.w - (framed ? PAD * 2 : 0);
  for (const child of item.children) {
    if (across) {
      place(child, cx, cy);
      cx += child.w + GAP;
    } else {
      place(child, cx + (innerW - child.w) / 2, cy);
      cy += child.h + GAP;
    }
  }
}

function titleOf(node) {
  const at = node.index === null ? "" : ` ${node.index}`;
  switch (node.kind) {
    case "parallel":
      return `parallel() · ${node.calls} calls`;
    case "pipeline":
      return `pipeline() · ${node.calls} calls`;
    case "workflow":
      return "workflow()";
    case "item":
      return `item${at}`;
    case "stage":
      return `stage${at}`;
    default:
      return "";
  }
}

function tooltip(node, now) {
  const end = node.ended_at ?? new Date(now).toISOString();
  const took = node.started_at ? duration(Date.parse(end) - Date.parse(node.started_at)) : "";
  return [
    node.kind === "call" ? `#${node.seq} ${node.label ?? "(no label)"}` : titleOf(node),
    `${node.state}${node.position ? ` · at ${node.position}` : ""}`,
    node.phase ? `phase: ${node.phase}` : "",
    node.started_at ? `started ${clock(node.started_at)} · ${took}` : "",
    `${node.usage.input_tokens + node.usage.output_tokens} tokens · ${money(node.cost_usd)}`,
    node.replayed_from ? `replayed from ${node.replayed_from}` : "",
    node.live_start ? "live execution began here" : "",
  ].filter(Boolean).join("\n");
}

/** Every element of the drawing, edges first. */
function shapes(item, now, out) {
  const { node, children } = item;
  if (node.kind === "call") {
    const label = node.label ?? `#${node.seq}`;
    out.push(html`
      <g class=${`dag-node state-${node.state}${node.live_start ? " live-start" : ""}`}
        data-seq=${node.seq} data-state=${node.state} data-label=${node.label ?? ""}>
        <title>${tooltip(node, now)}</title>
        <rect x=${item.x} y=${item.y} width=${item.w} height=${item.h} rx="6" />
        <text class="dag-label" x=${item.x + 8} y=${item.y + 16}>${clip(label, 20)}</text>
        <text class="dag-sub" x=${item.x + 8} y=${item.y + 32}>${node.live_start
          ? "▶ live from here"
          : node.state}</text>
      </g>
    `);
    return;
  }
  if (FRAMED.has(node.kind)) {
    out.push(html`
      <g class=${`dag-group kind-${node.kind} state-${node.state}`} data-kind=${node.kind}>
        <title>${tooltip(node, now)}</title>
        <rect x=${item.x} y=${item.y} width=${item.w} height=${item.h} rx="8" />
        <text class="dag-title" x=${item.x + 8} y=${item.y + 14}>${titleOf(node)}</text>
      </g>
    `);
  }
  if (!SIDE_BY_SIDE.has(node.kind)) {
    for (let i = 1; i < children.length; i++) {
      const a = children[i - 1];
      const b = children[i];
      out.push(html`
        <line class="dag-edge" x1=${a.x + a.w / 2} y1=${a.y + a.h}
          x2=${b.x + b.w / 2} y2=${b.y} />
      `);
    }
  }
  for (const child of children) shapes(child, now, out);
}

function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** The graph of a run; nothing until it has calls. */
export function RunGraph({ dag, now }) {
  const root = dag ? treeOf(dag.nodes) : undefined;
  if (!root || root.children.length === 0) {
    return html`<p class="empty">No calls yet: the graph grows as the script calls agents.</p>`;
  }
  measure(root);
  place(root, 0, 0);
  const out = [];
  shapes(root, now, out);
  const width = Math.max(root.w, BOX_W) + 2;
  const height = root.h + 2;
  return html`
    <figure class="dag">
      <svg class="dag-svg" viewBox=${`-1 -1 ${width} ${height}`} width=${width} role="img"
        aria-label=${`graph of ${dag.calls.shown} calls`}>${out}</svg>
      <figcaption class="legend dag-legend">
        <span><i class="swatch state-running"></i>running</span>
        <span><i class="swatch state-succeeded"></i>succeeded</span>
        <span><i class="swatch state-failed"></i>failed</span>
        <span><i class="swatch state-replayed"></i>replayed</span>
        ${dag.live_from
          ? html`<span class="live-from">live from call #${dag.live_from.seq}${
            dag.live_from.position ? ` (at ${dag.live_from.position})` : ""
          }, resumed from ${dag.resumed_from}</span>`
          : null}
        ${dag.calls.omitted > 0
          ? html`<span class="warn">${dag.calls.omitted} later calls not drawn (the first ${dag.max_calls} are)</span>`
          : null}
      </figcaption>
    </figure>
  `;
}

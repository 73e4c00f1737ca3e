/**
 * A run's timeline: its calls as bars on a time axis, grouped by phase or by top-level branch,
 * calls that overlapped on rows of their own so that concurrency shows. From the run's graph
 * (`/api/workflow/<id>/dag`); a running call's bar grows to now.
 */
import { html, useState } from "../lib/html.js";
import { duration } from "../lib/format.js";

const WIDTH = 720;
const LEFT = 120;
const ROW = 16;
const GROUP_GAP = 10;
const AXIS = 22;

/** The branch a call is in, below the run: `0.1` of `0.1.2.0.0`, or `main` for the root's own steps. */
function laneOf(node) {
  if (!node.position) return "main";
  const parts = node.position.split(".");
  return parts.length < 3 ? "main" : `branch ${parts.slice(0, 2).join(".")}`;
}

/** Packs bars into rows: a bar takes the first row free at its start. */
function pack(bars) {
  const ends = [];
  for (const bar of bars.sort((a, b) => a.start - b.start)) {
    let row = ends.findIndex((end) => end <= bar.start);
    if (row < 0) row = ends.push(0) - 1;
    ends[row] = bar.end;
    bar.row = row;
  }
  return Math.max(1, ends.length);
}

/** The timeline of the calls of `dag`, as of `now`. */
export function RunTimeline({ dag, now }) {
  const [by, setBy] = useState("phase");
  const calls = (dag?.nodes ?? []).filter((n) => n.kind === "call" && n.started_at);
  if (calls.length === 0) return html`<p class="empty">No calls yet.</p>`;
  const bars = calls.map((node) => ({
    node,
    start: Date.parse(node.started_at),
    end: node.ended_at ? Date.parse(node.ended_at) : now,
  }));
  const t0 = Math.min(...bars.map((b) => b.start));
  const t1 = Math.max(t0 + 1000, ...bars.map((b) => b.end));
  const groups = new Map();
  for (const bar of bars) {
    const key = by === "phase" ? bar.node.phase ?? "(no phase)" : laneOf(bar.node);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(bar);
  }
  let y = AXIS;
  const laid = [...groups].map(([name, list]) => {
    const rows = pack(list);
    const top = y;
    y += rows * ROW + GROUP_GAP;
    return { name, list, top, rows };
  });
  const height = y;
  const x = (t) => LEFT + ((t - t0) / (t1 - t0)) * (WIDTH - LEFT - 4);
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  const peak = Math.max(...laid.map((g) => g.rows));
  return html`
    <figure class="timeline">
      <div class="filters" role="group" aria-label="group the timeline by">
        ${[["phase", "By phase"], ["branch", "By branch"]].map(([key, label]) =>
          html`
            <button class=${by === key ? "chip on" : "chip"} aria-pressed=${by === key}
              onClick=${() => setBy(key)}>${label}</button>
          `
        )}
      </div>
      <svg class="timeline-svg" viewBox=${`0 0 ${WIDTH} ${height}`} role="img"
        aria-label=${`timeline of ${calls.length} calls, at most ${peak} at once in a group`}>
        ${ticks.map((f) => {
          const tx = LEFT + f * (WIDTH - LEFT - 4);
          return html`
            <g>
              <line class="grid" x1=${tx} x2=${tx} y1=${AXIS - 4} y2=${height} />
              <text class="axis" x=${tx} y=${12} text-anchor=${f === 1
                ? "end"
                : f === 0
                ? "start"
                : "middle"}>+${duration(f * (t1 - t0))}</text>
            </g>
          `;
        })}
        ${laid.map((g) =>
          html`<g class="tl-group" data-group=${g.name}>
            <text class="tl-name" x="2" y=${g.top + 12}>${
            g.name.length > 16 ? `${g.name.slice(0, 15)}…` : g.name
          }</text>
            ${
            g.list.map((bar) =>
              html`
                <rect class=${`tl-bar state-${bar.node.state}`} data-seq=${bar.node.seq}
                  x=${x(bar.start)} y=${g.top + bar.row * ROW + 2}
                  width=${Math.max(2, x(bar.end) - x(bar.start))} height=${ROW - 4} rx="2">
                  <title>#${bar.node.seq} ${bar.node.label ?? "(no label)"} · ${bar.node
                    .state} · ${duration(
                      bar.end - bar.start,
                    )}</title>
                </rect>
              `
            )
          }
          </g>`
        )}
      </svg>
    </figure>
  `;
}

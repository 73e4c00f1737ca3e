/**
 * A run's graph from its calls' logical positions (docs/SCRIPTS.md, "Resume"): steps of a
 * branch at even depths, branches of a fan-out at odd ones. Positions do not say which
 * primitive made a fan-out, so its kind is read from its shape: a fan-out whose every branch
 * takes only steps that are themselves one-branch fan-outs is a `pipeline()` (items, and their
 * stages); one with a single branch 0 is a `workflow()` (a one-thunk `parallel()` reads the
 * same); any other is a `parallel()`.
 * @module
 */
import { precedes } from "../engine/mod.ts";
import type { DagNode, DagNodeKind, DagState } from "../schemas/mod.ts";

/** One call as the graph takes it: journaled, or running (its `call_started` event). */
export interface GraphCall {
  seq: number;
  /** Its logical position; null when it has none (too deep, or journaled before positions). */
  position: readonly number[] | null;
  label: string | null;
  phase: string | null;
  state: Exclude<DagState, "pending">;
  started_at: string;
  ended_at: string | null;
  usage: { input_tokens: number; output_tokens: number };
  cost_usd: number | null;
  provider: string | null;
  model: string | null;
  replayed_from: string | null;
}

interface Step {
  id: string;
  index: number;
  position: readonly number[] | null;
  call?: GraphCall;
  branches: Map<number, Branch>;
}

interface Branch {
  id: string;
  index: number;
  position: readonly number[];
  steps: Map<number | string, Step>;
}

/** The sum of the calls under a node. */
interface Totals {
  calls: number;
  states: Set<DagState>;
  phases: Set<string | null>;
  started_at: string | null;
  ended_at: string | null;
  open: boolean;
  usage: { input_tokens: number; output_tokens: number };
  cost_usd: number | null;
}

function newBranch(position: readonly number[]): Branch {
  return { id: `b:${position.join(".")}`, index: position.at(-1) ?? 0, position, steps: new Map() };
}

function place(root: Branch, call: GraphCall): void {
  const p = call.position;
  if (p === null) {
    root.steps.set(`u${call.seq}`, {
      id: `u:${call.seq}`,
      index: call.seq - 1,
      position: null,
      call,
      branches: new Map(),
    });
    return;
  }
  let branch = root;
  for (let d = 0; d < p.length; d += 2) {
    const prefix = p.slice(0, d + 1);
    let step = branch.steps.get(p[d]!);
    if (!step) {
      step = { id: `s:${prefix.join(".")}`, index: p[d]!, position: prefix, branches: new Map() };
      branch.steps.set(p[d]!, step);
    }
    if (d === p.length - 1) {
      // Two calls at one position cannot come from one script; keep both all the same.
      if (step.call) {
        branch.steps.set(`${p[d]}#${call.seq}`, { ...step, id: `${step.id}#${call.seq}`, call });
      } else step.call = call;
      return;
    }
    const b = p[d + 1]!;
    let next = step.branches.get(b);
    if (!next) {
      next = newBranch(p.slice(0, d + 2));
      step.branches.set(b, next);
    }
    branch = next;
  }
}

/** Steps in the script's order: by step number, calls without a position last, by seq. */
function ordered(branch: Branch): Step[] {
  return [...branch.steps.values()].sort((a, b) =>
    (a.position === null ? 1 : 0) - (b.position === null ? 1 : 0) || a.index - b.index ||
    (a.call?.seq ?? 0) - (b.call?.seq ?? 0)
  );
}

function byIndex<T extends { index: number }>(items: Iterable<T>): T[] {
  return [...items].sort((a, b) => a.index - b.index);
}

function fanOutKind(step: Step): "parallel" | "pipeline" | "workflow" {
  const branches = [...step.branches.values()];
  const staged = branches.every((branch) =>
    [...branch.steps.values()].every((s) => !s.call && s.branches.size === 1 && s.branches.has(0))
  );
  if (staged) return "pipeline";
  return branches.length === 1 && step.branches.has(0) ? "workflow" : "parallel";
}

function emptyTotals(): Totals {
  return {
    calls: 0,
    states: new Set(),
    phases: new Set(),
    started_at: null,
    ended_at: null,
    open: false,
    usage: { input_tokens: 0, output_tokens: 0 },
    cost_usd: 0,
  };
}

function addCall(into: Totals, call: GraphCall): void {
  into.calls++;
  into.states.add(call.state);
  into.phases.add(call.phase);
  if (into.started_at === null || call.started_at < into.started_at) {
    into.started_at = call.started_at;
  }
  if (call.ended_at === null) into.open = true;
  else if (into.ended_at === null || call.ended_at > into.ended_at) into.ended_at = call.ended_at;
  into.usage.input_tokens += call.usage.input_tokens;
  into.usage.output_tokens += call.usage.output_tokens;
  into.cost_usd = into.cost_usd === null || call.cost_usd === null
    ? null
    : into.cost_usd + call.cost_usd;
}

function merge(into: Totals, from: Totals): void {
  into.calls += from.calls;
  for (const s of from.states) into.states.add(s);
  for (const p of from.phases) into.phases.add(p);
  if (from.started_at !== null && (into.started_at === null || from.started_at < into.started_at)) {
    into.started_at = from.started_at;
  }
  if (from.ended_at !== null && (into.ended_at === null || from.ended_at > into.ended_at)) {
    into.ended_at = from.ended_at;
  }
  into.open ||= from.open;
  into.usage.input_tokens += from.usage.input_tokens;
  into.usage.output_tokens += from.usage.output_tokens;
  into.cost_usd = into.cost_usd === null || from.cost_usd === null
    ? null
    : into.cost_usd + from.cost_usd;
}

/** A group's state from its calls' (see DagStateSchema). */
function groupState(states: Set<DagState>): DagState {
  if (states.size === 0) return "pending";
  if (states.has("running")) return "running";
  if (states.has("failed")) return "failed";
  if (states.size === 1 && states.has("replayed")) return "replayed";
  if (states.size === 1 && states.has("skipped")) return "skipped";
  return "succeeded";
}

/** Builds the flat node list depth first; each group's figures are its calls' sums. */
class Emitter {
  readonly nodes: DagNode[] = [];
  readonly #liveStarts: ReadonlySet<number>;

  constructor(liveStarts: ReadonlySet<number>) {
    this.#liveStarts = liveStarts;
  }

  /** Adds a group node, its children through `fill`, and returns its totals. */
  group(
    base: {
      id: string;
      parent: string | null;
      kind: DagNodeKind;
      depth: number;
      index: number | null;
    },
    position: readonly number[] | null,
    fill: (id: string, depth: number) => Totals,
  ): Totals {
    const node: DagNode = {
      ...base,
      position: position === null ? null : position.join("."),
      state: "pending",
      label: null,
      phase: null,
      seq: null,
      calls: 0,
      started_at: null,
      ended_at: null,
      usage: { input_tokens: 0, output_tokens: 0 },
      cost_usd: 0,
      provider: null,
      model: null,
      replayed_from: null,
      live_start: false,
    };
    this.nodes.push(node);
    const totals = fill(base.id, base.depth + 1);
    node.state = groupState(totals.states);
    node.calls = totals.calls;
    node.phase = totals.phases.size === 1 ? [...totals.phases][0]! : null;
    node.started_at = totals.started_at;
    node.ended_at = totals.open ? null : totals.ended_at;
    node.usage = { ...totals.usage };
    node.cost_usd = totals.cost_usd;
    return totals;
  }

  steps(branch: Branch, parent: string, depth: number): Totals {
    const totals = emptyTotals();
    for (const step of ordered(branch)) merge(totals, this.step(step, parent, depth));
    return totals;
  }

  step(step: Step, parent: string, depth: number): Totals {
    if (step.call) return this.#call(step, step.call, parent, depth);
    const kind = fanOutKind(step);
    const base = { id: step.id, parent, kind, depth, index: step.index };
    return this.group(base, step.position, (id, inner) => {
      const totals = emptyTotals();
      const branches = byIndex(step.branches.values());
      if (kind === "workflow") return this.steps(branches[0]!, id, inner);
      for (const branch of branches) {
        const kindOf = kind === "pipeline" ? "item" : "branch";
        const node = {
          id: branch.id,
          parent: id,
          kind: kindOf,
          depth: inner,
          index: branch.index,
        } as const;
        merge(
          totals,
          this.group(
            node,
            branch.position,
            (bid, bdepth) =>
              kind === "pipeline"
                ? this.#stages(branch, bid, bdepth)
                : this.steps(branch, bid, bdepth),
          ),
        );
      }
      return totals;
    });
  }

  #stages(item: Branch, parent: string, depth: number): Totals {
    const totals = emptyTotals();
    for (const stage of ordered(item)) {
      const only = stage.branches.get(0)!;
      const base = { id: stage.id, parent, kind: "stage" as const, depth, index: stage.index };
      merge(totals, this.group(base, stage.position, (id, inner) => this.steps(only, id, inner)));
    }
    return totals;
  }

  #call(step: Step, call: GraphCall, parent: string, depth: number): Totals {
    this.nodes.push({
      id: step.id,
      parent,
      kind: "call",
      depth,
      index: step.position === null ? null : step.index,
      position: step.position === null ? null : step.position.join("."),
      state: call.state,
      label: call.label,
      phase: call.phase,
      seq: call.seq,
      calls: 1,
      started_at: call.started_at,
      ended_at: call.ended_at,
      usage: { ...call.usage },
      cost_usd: call.cost_usd,
      provider: call.provider,
      model: call.model,
      replayed_from: call.replayed_from,
      live_start: this.#liveStarts.has(call.seq),
    });
    const totals = emptyTotals();
    addCall(totals, call);
    return totals;
  }
}

/**
 * The calls of a resumed run where live execution began: each call that did not replay and
 * that no other such call comes logically before (earlier on its branch, or in a fan-out that
 * joined before it).
 */
export function liveStarts(calls: readonly GraphCall[]): Set<number> {
  const live = calls.filter((c) => c.state !== "replayed" && c.position !== null);
  const starts = new Set<number>();
  for (const call of live) {
    const first = !live.some((other) =>
      other !== call && precedes(other.position!, call.position!) &&
      !precedes(call.position!, other.position!)
    );
    if (first) starts.add(call.seq);
  }
  return starts;
}

/**
 * The graph's nodes for `calls`, depth first in the script's order, under one `run` node whose
 * state is `runState`'s own while the run is queued (`pending`).
 */
export function buildGraph(
  calls: readonly GraphCall[],
  options: { resumed: boolean },
): DagNode[] {
  const root = newBranch([]);
  for (const call of [...calls].sort((a, b) => a.seq - b.seq)) place(root, call);
  const emitter = new Emitter(options.resumed ? liveStarts(calls) : new Set());
  emitter.group(
    { id: "run", parent: null, kind: "run", depth: 0, index: null },
    null,
    (id, depth) => emitter.steps(root, id, depth),
  );
  return emitter.nodes;
}

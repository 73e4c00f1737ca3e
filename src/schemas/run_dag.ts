/**
 * The shape of a run's graph (`GET /api/workflow/{run_id}/dag`): the run's structure as its
 * calls' logical positions draw it, one flat list of nodes in drawing order, each naming its
 * parent.
 * @module
 */
import * as z from "zod";
import type { Assert, SameType } from "./same_type.ts";

/** The most calls one answer draws: later ones (by `seq`) are counted in `calls.omitted`. */
export const DAG_MAX_CALLS = 500;

/** What a node is: the run, a call, a fan-out, or a branch of one. */
export const DagNodeKindSchema = z.enum([
  "run",
  "call",
  "parallel",
  "pipeline",
  "workflow",
  "branch",
  "item",
  "stage",
]).meta({ id: "DagNodeKind" });

/**
 * Where a node is in its life. A call: `running` (dispatched, not ended), `succeeded`,
 * `failed`, `skipped` (refused before dispatch) or `replayed` (answered from an earlier run's
 * journal). A group takes the state of its calls: `running` while one runs, else `failed` when
 * one failed, else `replayed` when all replayed, else `succeeded`; `pending` before any call.
 */
export const DagStateSchema = z.enum([
  "pending",
  "running",
  "succeeded",
  "failed",
  "skipped",
  "replayed",
]).meta({ id: "DagState" });

const UsageSchema = z.object({
  input_tokens: z.number(),
  output_tokens: z.number(),
});

/** One node of the graph. */
export const DagNodeSchema = z.object({
  id: z.string().meta({
    description: "stable across answers: `run`, `s:<position>`, `b:<position>`",
  }),
  parent: z.string().nullable().meta({ description: "the enclosing node's id; null for the run" }),
  kind: DagNodeKindSchema,
  depth: z.number().int().nonnegative(),
  index: z.number().int().nullable().meta({
    description: "the step of its branch (a call, a fan-out, a stage) or the branch's number " +
      "(a thunk of parallel(), an item of pipeline()); null for the run",
  }),
  position: z.string().nullable().meta({
    description: "its logical position, dotted (`0.3.1`); null for the run and unplaced calls",
  }),
  state: DagStateSchema,
  label: z.string().nullable(),
  phase: z.string().nullable(),
  seq: z.number().int().nullable().meta({ description: "a call's number in the journal" }),
  calls: z.number().int().nonnegative().meta({ description: "calls at or under this node" }),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  usage: UsageSchema,
  cost_usd: z.number().nullable().meta({ description: "null when some call's cost is unknown" }),
  provider: z.string().nullable(),
  model: z.string().nullable(),
  replayed_from: z.string().nullable().meta({
    description: "a replayed call: the run whose journal supplied its value",
  }),
  live_start: z.boolean().meta({
    description: "in a resumed run, a call where live execution began on its branch: it did " +
      "not replay, and no call logically before it ran live",
  }),
}).meta({ id: "DagNode" });

/** A run's graph. */
export const RunDagSchema = z.object({
  run_id: z.string(),
  state: z.string().meta({ description: "the run's state" }),
  resumed_from: z.string().nullable(),
  nodes: z.array(DagNodeSchema).meta({
    description: "depth first, in the script's order; a parent comes before its children",
  }),
  calls: z.object({
    total: z.number().int().nonnegative().meta({
      description: "calls known: journaled and running",
    }),
    shown: z.number().int().nonnegative(),
    omitted: z.number().int().nonnegative().meta({
      description: `calls left out: an answer draws the first ${DAG_MAX_CALLS} by seq and ` +
        "every running one",
    }),
    running: z.number().int().nonnegative(),
    replayed: z.number().int().nonnegative(),
  }),
  live_from: z.object({
    seq: z.number().int(),
    position: z.string().nullable(),
    at: z.string(),
  }).nullable().meta({
    description:
      "a resumed run: its first call that did not replay (null: none yet, or not resumed)",
  }),
  max_calls: z.number().int().meta({ description: "the bound on calls drawn" }),
}).meta({ id: "RunDag" });

/** What a node is: the run, a call, a fan-out, or a branch of one. */
export type DagNodeKind =
  | "run"
  | "call"
  | "parallel"
  | "pipeline"
  | "workflow"
  | "branch"
  | "item"
  | "stage";

/** Where a node is in its life (see {@linkcode DagStateSchema}). */
export type DagState = "pending" | "running" | "succeeded" | "failed" | "skipped" | "replayed";

/** One node of a run's graph. */
export interface DagNode {
  /** Stable across answers: `run`, `s:<position>` (a step), `b:<position>` (a branch). */
  id: string;
  /** The enclosing node's id; null for the run. */
  parent: string | null;
  /** What the node is. */
  kind: DagNodeKind;
  /** How deep it sits: 0 for the run. */
  depth: number;
  /** The step of its branch, or the branch's number; null for the run. */
  index: number | null;
  /** Its logical position, dotted (`0.3.1`); null for the run and unplaced calls. */
  position: string | null;
  /** Where it is in its life. */
  state: DagState;
  /** A call's `label`. */
  label: string | null;
  /** A call's phase; a group's when all its calls share one. */
  phase: string | null;
  /** A call's number in the journal. */
  seq: number | null;
  /** Calls at or under this node. */
  calls: number;
  /** When it (its first call) started. */
  started_at: string | null;
  /** When it (its last call) ended; null while a call under it runs. */
  ended_at: string | null;
  /** Tokens its calls used. */
  usage: { input_tokens: number; output_tokens: number };
  /** Cost in USD; null when some call's cost is unknown. */
  cost_usd: number | null;
  /** A call's provider, once one answered. */
  provider: string | null;
  /** A call's model, when known. */
  model: string | null;
  /** A replayed call: the run whose journal supplied its value. */
  replayed_from: string | null;
  /** In a resumed run: a call where live execution began on its branch. */
  live_start: boolean;
}

/** A run's graph, as `GET /api/workflow/{run_id}/dag` answers it. */
export interface RunDag {
  /** The run. */
  run_id: string;
  /** The run's state. */
  state: string;
  /** The run it resumed, if any. */
  resumed_from: string | null;
  /** Depth first, in the script's order; a parent comes before its children. */
  nodes: DagNode[];
  /** Calls known, drawn, left out, running and replayed. */
  calls: { total: number; shown: number; omitted: number; running: number; replayed: number };
  /** A resumed run: its first call that did not replay. */
  live_from: { seq: number; position: string | null; at: string } | null;
  /** The bound on calls drawn ({@linkcode DAG_MAX_CALLS}). */
  max_calls: number;
}

type _KindMatches = Assert<SameType<DagNodeKind, z.infer<typeof DagNodeKindSchema>>>;
type _StateMatches = Assert<SameType<DagState, z.infer<typeof DagStateSchema>>>;
type _NodeMatches = Assert<SameType<DagNode, z.infer<typeof DagNodeSchema>>>;
type _DagMatches = Assert<SameType<RunDag, z.infer<typeof RunDagSchema>>>;

/**
 * The benchmark's report: the table's rows and the JSON line's figures, each against its
 * baseline, as every group adds them.
 * @module
 */
import type { BenchArgs } from "./args.ts";
import { type Group, type Repetition, round, type Stats, summarize } from "./common.ts";

/** One line of the table: a figure, its baseline's median and the ratio of the medians. */
export interface Row {
  name: string;
  value: Stats | number | null;
  unit: string;
  /** The baseline's median; undefined for a row that is itself a baseline. */
  baseline?: number | null;
  ratio?: number | null;
  /** The goal for the ratio, as printed ("<= 2x"). */
  goal?: string;
}

export function cell(value: number | null | undefined, digits = 2): string {
  if (value === undefined) return "";
  return value === null || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);
}

export function formatTable(rows: Row[]): string {
  const header = ["measurement", "median", "min", "max", "unit", "baseline", "ratio", "goal"];
  const cells = rows.map((row) => {
    const v = row.value;
    const stats = v === null
      ? ["n/a", "", ""]
      : typeof v === "number"
      ? [cell(v), "", ""]
      : [cell(v.median), cell(v.min), cell(v.max)];
    const ratio = row.ratio === undefined ? "" : row.ratio === null ? "n/a" : `${cell(row.ratio)}x`;
    return [row.name, ...stats, row.unit, cell(row.baseline), ratio, row.goal ?? ""];
  });
  const all = [header, ...cells];
  const widths = header.map((_, c) => Math.max(...all.map((row) => (row[c] ?? "").length)));
  const left = new Set([0, 4, 7]);
  const line = (row: string[]): string =>
    row.map((text, c) => left.has(c) ? text.padEnd(widths[c] ?? 0) : text.padStart(widths[c] ?? 0))
      .join("  ").trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(header), rule, ...cells.map(line)].join("\n");
}

/** A figure of the JSON line: its stats, unit, the baseline it is compared with, and the ratio. */
export interface Figure {
  value: Stats | number | null;
  unit: string;
  baseline?: string;
  ratio?: number | null;
  goal?: string;
}

/** What every group's section of the table reads and adds to. */
export interface Report {
  /** The table's rows, in order. */
  readonly rows: Row[];
  /** The JSON line's figures, by key. */
  readonly figures: Record<string, Figure>;
  /** Median etc. of a per-repetition value; null when it was not measured. */
  stat(value: (r: Repetition) => number): Stats | null;
  /** {@linkcode Report.stat} of one field of the repetitions. */
  pick(key: keyof Repetition): Stats | null;
  /** A baseline: printed as a row of its own, and kept in the JSON line. */
  baseline(key: string, name: string, value: Stats | number | null, unit: string): void;
  /** A component of the figure above it (no ratio of its own): kept in the JSON line too. */
  part(key: string, name: string, value: Stats | number | null, unit: string): void;
  /** A figure against `base` (a key given to {@linkcode Report.baseline}). */
  figure(
    key: string,
    name: string,
    value: Stats | number | null,
    unit: string,
    base: string,
    goal?: string,
  ): void;
}

/** What a group's section is given besides the report: the command line and its work folder. */
export interface GroupContext {
  /** The groups asked for. */
  readonly only: ReadonlySet<Group>;
  /** The command line. */
  readonly args: BenchArgs;
  /** The benchmark's temporary folder. */
  readonly root: string;
  /** Set when the soak or the fuzz run found a failure: the bench then exits with 1. */
  readonly broken: string[];
}

function ratioOf(a: Stats | number | null, b: Stats | number | null): number | null {
  const x = typeof a === "number" ? a : a?.median;
  const y = typeof b === "number" ? b : b?.median;
  return x === undefined || y === undefined || !y ? null : round(x / y);
}

function median(s: Stats | number | null): number | null {
  return s === null ? null : typeof s === "number" ? s : s.median;
}

/** An empty report over the repetitions kept (warm-ups excluded). */
export function createReport(reps: Repetition[]): Report {
  const rows: Row[] = [];
  const figures: Record<string, Figure> = {};
  const stat = (value: (r: Repetition) => number): Stats | null => {
    const samples = reps.map(value);
    return samples.some((v) => !Number.isFinite(v)) ? null : summarize(samples);
  };
  return {
    rows,
    figures,
    stat,
    pick: (key) => stat((r) => r[key]),
    baseline(key, name, value, unit) {
      if (figures[key]) return;
      rows.push({ name, value, unit });
      figures[key] = { value, unit };
    },
    part(key, name, value, unit) {
      rows.push({ name, value, unit });
      figures[key] = { value, unit };
    },
    figure(key, name, value, unit, base, goal) {
      const against = figures[base]?.value ?? null;
      const ratio = ratioOf(value, against);
      rows.push({ name, value, unit, baseline: median(against), ratio, goal });
      figures[key] = { value, unit, baseline: base, ratio, ...(goal ? { goal } : {}) };
    },
  };
}

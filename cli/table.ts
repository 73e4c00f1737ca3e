/**
 * Aligned text tables for the list-like commands (`svc task list`, `svc session list`,
 * `svc history`, `svc worktree list`, `svc workflow list`), and the small formats their cells
 * share. Cells hold values a script or a provider chose (labels, names, reasons), so each one is
 * made visible (`cli/terminal.ts`: no escape sequence, no newline) and clipped to a width before
 * the columns are measured: no value can move the cursor, forge a row or push the others aside.
 * @module
 */
import { visible } from "./terminal.ts";

/** Widest a cell is by default, in terminal columns; longer values end in `…`. */
export const DEFAULT_CELL_WIDTH = 40;

/** Columns between two cells. */
const GAP = "  ";

/** One column of a table: its header and how a row's cell is drawn. */
export interface TableColumn<Row> {
  /** The header row's text (upper case, by custom). */
  header: string;
  /** The cell's text; it is escaped and clipped here, so it may be anything. */
  value: (row: Row) => string;
  /** Numbers read best right-aligned. Default: left. */
  align?: "left" | "right";
  /** Widest the cell may be, in terminal columns (default {@linkcode DEFAULT_CELL_WIDTH}). */
  maxWidth?: number;
}

/** Options of {@linkcode renderTable}. */
export interface RenderTableOptions {
  /** The one line printed instead of a table without rows, e.g. "No tasks.". */
  empty: string;
}

/** Combining marks, zero-width characters and variation selectors take no column. */
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\u200b-\u200d\u2060\ufe00-\ufe0f\ufeff]$/u;

/** East Asian wide and fullwidth characters and emoji take two columns. */
const WIDE =
  /^[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1f64f}\u{1f900}-\u{1f9ff}\u{20000}-\u{3fffd}]$/u;

function charWidth(char: string): number {
  if (ZERO_WIDTH.test(char)) return 0;
  return WIDE.test(char) ? 2 : 1;
}

/** Terminal columns `text` takes (after {@linkcode visible}, so it has no control characters). */
export function displayWidth(text: string): number {
  let width = 0;
  for (const char of text) width += charWidth(char);
  return width;
}

/**
 * `text` made visible and cut to at most `max` columns, ending in `…` when cut. A tab, which
 * `visible` lets through, is shown as `\t` too: in a table it would break the alignment.
 */
export function clipCell(text: string, max: number): string {
  const shown = visible(text).replaceAll("\t", "\\t");
  if (displayWidth(shown) <= max) return shown;
  let out = "";
  let width = 0;
  for (const char of shown) {
    const w = charWidth(char);
    if (width + w > max - 1) break;
    out += char;
    width += w;
  }
  return `${out}…`;
}

function pad(text: string, width: number, align: "left" | "right"): string {
  const fill = " ".repeat(Math.max(0, width - displayWidth(text)));
  return align === "right" ? fill + text : text + fill;
}

/**
 * The lines of a table: a header row, then one row per item, columns aligned, two spaces apart,
 * no trailing spaces. Without rows, the single line `options.empty`.
 */
export function renderTable<Row>(
  columns: readonly TableColumn<Row>[],
  rows: readonly Row[],
  options: RenderTableOptions,
): string[] {
  if (rows.length === 0) return [visible(options.empty)];
  const cells = [
    columns.map((column) => clipCell(column.header, column.maxWidth ?? DEFAULT_CELL_WIDTH)),
    ...rows.map((row) =>
      columns.map((column) => clipCell(column.value(row), column.maxWidth ?? DEFAULT_CELL_WIDTH))
    ),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => displayWidth(line[i]!))));
  // Trailing spaces (padding of a last column, empty last cells) would only wrap narrow terminals.
  return cells.map((line) =>
    line.map((cell, i) => pad(cell, widths[i]!, columns[i]!.align ?? "left")).join(GAP).trimEnd()
  );
}

/**
 * How long ago `iso` was, in its largest whole unit: "5s", "3m", "2h", "4d". A time in the
 * future (another host's clock) is "0s"; a value that is no time is "-".
 */
export function formatAge(iso: string, now: Date | number = Date.now()): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "-";
  const seconds = Math.max(0, Math.floor((Number(now) - then) / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

/** A cost in USD for a table: "$1.23", "<$0.01" for less than a cent, "-" when unknown. */
export function formatCost(usd: number | null | undefined): string {
  if (usd === null || usd === undefined || !Number.isFinite(usd) || usd < 0) return "-";
  if (usd > 0 && usd < 0.01) return "<$0.01";
  return `$${usd.toFixed(2)}`;
}

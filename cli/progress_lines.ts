/**
 * The lines `svc workflow watch` prints for calls' live output (`progress` run events), at the
 * verbosity the user picked: `none`, `tools` (each tool use, file changed and error) or `all`
 * (the agent's text too, a line at a time). Lines are prefixed with the call's number; they go
 * through the narration printer, and so through cli/terminal.ts, which shows control
 * characters instead of acting on them.
 * @module
 */
import type { CallProgress } from "../src/schemas/mod.ts";
import { UsageError } from "./workflow_input.ts";

/** How much of calls' live output `watch` prints. */
export type OutputLevel = "none" | "tools" | "all";

/** The levels, as `--output` takes them. */
export const OUTPUT_LEVELS: readonly OutputLevel[] = ["none", "tools", "all"];

/** The level an `--output` flag names, `fallback` when absent; another value is a usage error. */
export function parseOutputLevel(value: string | undefined, fallback: OutputLevel): OutputLevel {
  const level = value ?? fallback;
  if (!(OUTPUT_LEVELS as readonly string[]).includes(level)) {
    throw new UsageError(
      `Cannot use --output '${level.slice(0, 40)}': it must be one of ${OUTPUT_LEVELS.join(", ")}`,
    );
  }
  return level as OutputLevel;
}

/** Longest text line printed of a call's output; the rest of the line is cut. */
const LINE_LIMIT = 400;

function clipped(text: string): string {
  return text.length > LINE_LIMIT ? `${text.slice(0, LINE_LIMIT - 1)}…` : text;
}

/** Turns calls' progress into lines, keeping each call's unfinished text line until it ends. */
export interface ProgressLines {
  /** The lines of one progress event of call `seq`. */
  lines(seq: number, items: readonly CallProgress[]): string[];
  /** The call ended: its unfinished text line, if any. */
  end(seq: number): string[];
}

/** A formatter at `level`. */
export function progressLines(level: OutputLevel): ProgressLines {
  const partial = new Map<number, string>();
  const prefix = (seq: number) => `  #${seq} `;
  const itemLine = (seq: number, item: CallProgress): string | undefined => {
    switch (item.kind) {
      case "tool":
        return `${prefix(seq)}→ ${item.name}${item.target ? `: ${item.target}` : ""}`;
      case "file":
        return `${prefix(seq)}✎ ${item.path}${item.change ? ` (${item.change})` : ""}`;
      case "error":
        return `${prefix(seq)}! ${item.message}`;
      case "truncated":
        return `${prefix(seq)}… output truncated (the call's budget is spent)`;
      default:
        return undefined;
    }
  };
  return {
    lines(seq, items) {
      if (level === "none") return [];
      const out: string[] = [];
      for (const item of items) {
        if (item.kind !== "text") {
          const line = itemLine(seq, item);
          if (line !== undefined) out.push(line);
          continue;
        }
        if (level !== "all") continue;
        const parts = `${partial.get(seq) ?? ""}${item.text}`.split("\n");
        partial.set(seq, parts.pop() ?? "");
        for (const part of parts) out.push(`${prefix(seq)}│ ${clipped(part)}`);
      }
      return out;
    },
    end(seq) {
      const rest = partial.get(seq);
      partial.delete(seq);
      return rest ? [`${prefix(seq)}│ ${clipped(rest)}`] : [];
    },
  };
}

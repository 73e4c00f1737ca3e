import type { JournalEntry } from "../ledger/mod.ts";
import { sha256 } from "../ledger/mod.ts";
import type { AgentOptions } from "../schemas/mod.ts";

/** JSON with object keys sorted at every level, so that equal options hash equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).filter((k) => record[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(",")}}`;
}

/** The journal hash of a call: SHA-256 of the prompt and the canonicalised options. */
export function callHash(prompt: string, options: AgentOptions): Promise<string> {
  return sha256(canonicalJson({ prompt, options }));
}

/**
 * The earlier run's journal, matched by the longest unchanged prefix of the call sequence:
 * call `seq` replays while every call before it replayed and its hash equals the earlier
 * call's at the same position. The first difference ends replay for the rest of the run.
 */
export class ReplaySource {
  readonly runId: string;
  readonly #entries: Map<number, JournalEntry>;
  #broken = false;

  constructor(runId: string, entries: JournalEntry[]) {
    this.runId = runId;
    this.#entries = new Map(entries.map((entry) => [entry.seq, entry]));
  }

  /** Whether a later call may still replay: no call has differed yet. */
  get active(): boolean {
    return !this.#broken;
  }

  /** The earlier call to replay in place of call `seq`, or undefined to run it live. */
  match(seq: number, hash: string): JournalEntry | undefined {
    if (this.#broken) return undefined;
    const earlier = this.#entries.get(seq);
    // Only calls that produced a value are worth replaying; a failed one runs again.
    const usable = earlier !== undefined && earlier.hash === hash &&
      (earlier.outcome === "live" || earlier.outcome === "replayed") &&
      earlier.result !== undefined;
    if (!usable) {
      this.#broken = true;
      return undefined;
    }
    return earlier;
  }
}

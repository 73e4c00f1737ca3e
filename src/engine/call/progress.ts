/**
 * The recorder of one call's live output: what the provider reports through the dispatch
 * request's `onProgress` is checked, redacted, coalesced and passed to the run's feed in
 * batches (at most one write every {@linkcode PROGRESS_INTERVAL_MS} per call, through the run's
 * group commit), within the call's byte budget; past it, one `truncated` item and nothing more.
 * A provider may be a library user's own, so nothing it sends is trusted here.
 * @module
 */
import { redactSecrets } from "../../dispatch/mod.ts";
import { type CallProgress, PROGRESS_FIELD_LIMIT, PROGRESS_TEXT_LIMIT } from "../../schemas/mod.ts";

/** The least time between two progress events of one call in the run's feed, in ms. */
export const PROGRESS_INTERVAL_MS = 250;
/** Bytes of progress recorded per call unless configured otherwise (`progress.call_bytes`). */
export const DEFAULT_PROGRESS_BYTES = 64 * 1024;

/** Options of {@linkcode ProgressRecorder}. */
export interface ProgressRecorderOptions {
  /** Bytes of progress items (as JSON) the call may record. @default DEFAULT_PROGRESS_BYTES */
  budgetBytes?: number;
  /** The least time between two batches, in ms. @default PROGRESS_INTERVAL_MS */
  intervalMs?: number;
}

const encoder = new TextEncoder();
// deno-lint-ignore no-control-regex -- removing control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** A provider's string made safe to record: control characters out, redacted, clipped. */
function safe(value: unknown, limit: number): string {
  const text = typeof value === "string" ? value : "";
  const clean = redactSecrets(text.replace(CONTROL, ""));
  return clean.length > limit ? `${clean.slice(0, limit - 1)}…` : clean;
}

/** A provider's item in the recorded shape, or undefined for one of no known kind. */
export function checkedProgress(item: unknown): CallProgress | undefined {
  if (item === null || typeof item !== "object") return undefined;
  const raw = item as Record<string, unknown>;
  const field = (key: string) => safe(raw[key], PROGRESS_FIELD_LIMIT);
  const optional = (key: string, limit: number) =>
    typeof raw[key] === "string" && raw[key] !== "" ? safe(raw[key], limit) : null;
  switch (raw.kind) {
    case "text":
      return { kind: "text", text: safe(raw.text, PROGRESS_TEXT_LIMIT) };
    case "tool":
      return {
        kind: "tool",
        name: field("name") || "tool",
        target: optional("target", PROGRESS_FIELD_LIMIT),
      };
    case "file":
      return { kind: "file", path: field("path"), change: optional("change", 32) };
    case "error":
      return { kind: "error", message: safe(raw.message, PROGRESS_TEXT_LIMIT) };
    default:
      return undefined;
  }
}

/**
 * Collects one call's progress and hands batches to `write` (which puts one event in the run's
 * feed). `listener` is what the dispatch request's `onProgress` gets; `close()` writes what is
 * pending and stops, before the call's `call` event is written.
 */
export class ProgressRecorder {
  readonly #write: (items: CallProgress[]) => void;
  readonly #interval: number;
  #left: number;
  #pending: CallProgress[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #lastAt = -Infinity;
  #closed = false;
  #truncated = false;

  constructor(write: (items: CallProgress[]) => void, options: ProgressRecorderOptions = {}) {
    this.#write = write;
    this.#interval = options.intervalMs ?? PROGRESS_INTERVAL_MS;
    this.#left = options.budgetBytes ?? DEFAULT_PROGRESS_BYTES;
  }

  /** The dispatch request's `onProgress`. */
  readonly listener = (item: CallProgress): void => {
    if (this.#closed || this.#truncated) return;
    const checked = checkedProgress(item);
    if (checked === undefined || (checked.kind === "text" && checked.text === "")) return;
    const bytes = encoder.encode(JSON.stringify(checked)).length;
    if (bytes > this.#left) {
      this.#truncated = true;
      this.#pending.push({ kind: "truncated" });
    } else {
      this.#left -= bytes;
      this.#add(checked);
    }
    this.#schedule();
  };

  /** Appends an item, joining text to the text before it while the piece stays in bounds. */
  #add(item: CallProgress): void {
    const last = this.#pending.at(-1);
    if (
      item.kind === "text" && last?.kind === "text" &&
      last.text.length + item.text.length <= PROGRESS_TEXT_LIMIT
    ) {
      last.text += item.text;
    } else this.#pending.push(item);
  }

  /** Writes now when the interval has passed since the last batch, else once it has. */
  #schedule(): void {
    if (this.#timer !== undefined) return;
    const wait = Math.max(0, this.#lastAt + this.#interval - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#flush();
    }, wait);
  }

  #flush(): void {
    if (this.#pending.length === 0) return;
    const items = this.#pending;
    this.#pending = [];
    this.#lastAt = Date.now();
    this.#write(items);
  }

  /** Writes what is pending and takes nothing more: the call's dispatch is over. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flush();
  }
}

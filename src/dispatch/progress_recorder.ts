/**
 * The recorder of one call's live output (a run's call or a task's): what the provider reports
 * through the dispatch request's `onProgress` is checked, redacted, coalesced and passed to its
 * feed in batches (at most one write every {@linkcode PROGRESS_INTERVAL_MS} per call), within
 * the call's byte budget; past it, one `truncated` item and nothing more.
 * A provider may be a library user's own, so nothing it sends is trusted here: it goes through
 * a progress channel of its own (the dispatch layer's redaction, text held back to whole lines
 * so that a secret split across deltas is redacted whole).
 * @module
 */
import { type ProgressChannel, progressChannel } from "./progress.ts";
import { type CallProgress, PROGRESS_TEXT_LIMIT } from "../schemas/mod.ts";

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

/** A string field of a provider's item, or undefined. */
function str(raw: Record<string, unknown>, key: string): string | undefined {
  return typeof raw[key] === "string" ? raw[key] : undefined;
}

/**
 * Passes a provider's item to `channel` by its kind (the channel strips, redacts, clips and
 * holds text back to whole lines); an item of no known kind is dropped.
 */
export function relayProgress(item: unknown, channel: ProgressChannel): void {
  if (item === null || typeof item !== "object") return;
  const raw = item as Record<string, unknown>;
  switch (raw.kind) {
    case "text":
      channel.text(str(raw, "text") ?? "");
      break;
    case "tool":
      channel.tool(str(raw, "name") ?? "tool", str(raw, "target") ?? null);
      break;
    case "file":
      channel.file(str(raw, "path") ?? "", str(raw, "change") ?? null);
      break;
    case "error":
      channel.error(str(raw, "message") ?? "");
      break;
  }
}

/**
 * Collects one call's progress and hands batches to `write` (which puts one event in the run's
 * or the task's feed). `listener` is what the dispatch request's `onProgress` gets; `close()` writes what is
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

  readonly #channel: ProgressChannel = progressChannel((item) => this.#accept(item));

  /** The dispatch request's `onProgress`. */
  readonly listener = (item: CallProgress): void => {
    if (!this.#closed && !this.#truncated) relayProgress(item, this.#channel);
  };

  /** Takes a checked item into the next batch, within the budget. */
  #accept(item: CallProgress): void {
    if (this.#closed || this.#truncated) return;
    if (item.kind === "text" && item.text === "") return;
    const bytes = encoder.encode(JSON.stringify(item)).length;
    if (bytes > this.#left) {
      this.#truncated = true;
      this.#pending.push({ kind: "truncated" });
    } else {
      this.#left -= bytes;
      this.#add(item);
    }
    this.#schedule();
  }

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
    this.#channel.flush();
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flush();
  }
}

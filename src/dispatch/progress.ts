/**
 * The progress channel of one call, from a provider to whoever dispatched it: what the provider
 * parsed of its tool's or API's stream goes through here, never straight to the listener. Every
 * string is stripped of terminal codes, redacted ({@linkcode redactSecrets}, with the provider's
 * key values) and clipped, and a call's channel stops after a byte budget. Text is passed on
 * but for its last two words, held until more follows: a secret split across two stream deltas
 * (a token, a `Bearer <token>`, a `NAME: <value>`) is whole when it is redacted.
 * @module
 */
import { type CallProgress, PROGRESS_FIELD_LIMIT, PROGRESS_TEXT_LIMIT } from "../schemas/mod.ts";
import { stripTerminalCodes } from "./harness/terminal_codes.ts";
import { redactSecrets } from "./redaction.ts";

/** Receives a call's progress, already redacted and bounded. It must not throw. */
export type ProgressListener = (event: CallProgress) => void;

/** Options of {@linkcode progressChannel}. */
export interface ProgressChannelOptions {
  /** Secret values to remove (the provider's key variables' values). @default [] */
  secrets?: readonly string[];
  /** Told how many tool uses of the agent are running (see {@linkcode ProgressChannel.toolsRunning}). */
  onToolsRunning?: (count: number) => void;
  /**
   * Bytes of progress one call may pass on (strings' UTF-16 length, a cheap bound); later
   * progress is dropped here. The engine's budget, smaller, is what is recorded.
   * @default 1 MiB
   */
  maxChars?: number;
}

/** What a provider reports through: each method redacts and bounds before passing on. */
export interface ProgressChannel {
  /** Assistant text as it grows (a delta). */
  text(delta: string): void;
  /** A tool use, with what it works on (a path, a command), when known. */
  tool(name: string, target?: string | null): void;
  /** A file the agent changed. */
  file(path: string, change?: string | null): void;
  /** An error a tool or the model reported. */
  error(message: string): void;
  /** Passes on text held back (a line not ended yet); called once when the call's output ends. */
  flush(): void;
  /**
   * How many of the agent's tool uses are running now (started, no result yet), from a reader
   * that sees both ends; nothing goes to the listener (the stall watch holds while one runs).
   */
  toolsRunning?(count: number): void;
}

/** Text held back at most this long for its words to end; then it goes at its last whitespace. */
const HOLD_LIMIT = 1024;

/**
 * Where held text may be cut: before the last two words of the line still being written (a
 * `Bearer <token>` or a `NAME: <value>` stays whole for its redaction), 0 for nothing yet; past
 * {@linkcode HOLD_LIMIT}, at its last whitespace, or all of it.
 */
function heldCut(held: string): number {
  const space = (i: number) => /\s/.test(held[i]!);
  // Back over the last word, the whitespace before it, and the word before that.
  let at = held.length;
  while (at > 0 && !space(at - 1)) at--;
  const lastSpace = at;
  while (at > 0 && space(at - 1)) at--;
  while (at > 0 && !space(at - 1)) at--;
  // A line that ended is whole: only the line still being written is held.
  at = Math.max(at, held.lastIndexOf("\n") + 1);
  if (held.length - at <= HOLD_LIMIT) return at;
  return lastSpace > 0 && held.length - lastSpace <= HOLD_LIMIT ? lastSpace : held.length;
}

/** `text` flattened to one line and clipped to `limit` characters. */
function oneLine(text: string, limit: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > limit ? `${flat.slice(0, limit - 1)}…` : flat;
}

/** A channel that passes nothing on: the call has no listener. */
const SILENT: ProgressChannel = {
  text() {},
  tool() {},
  file() {},
  error() {},
  flush() {},
  toolsRunning() {},
};

/**
 * The channel of one call to `listener` (a silent one without a listener). A listener that
 * throws is dropped: progress never fails a call.
 */
export function progressChannel(
  listener: ProgressListener | undefined,
  options: ProgressChannelOptions = {},
): ProgressChannel {
  if (listener === undefined) {
    return options.onToolsRunning ? { ...SILENT, toolsRunning: options.onToolsRunning } : SILENT;
  }
  const secrets = options.secrets ?? [];
  let budget = options.maxChars ?? 1024 * 1024;
  let held = "";
  let live = true;
  const clean = (text: string) => redactSecrets(stripTerminalCodes(text), { secrets });
  const send = (event: CallProgress, size: number) => {
    if (!live || budget <= 0) return;
    budget -= size;
    try {
      listener(event);
    } catch {
      live = false;
    }
  };
  const sendText = (text: string) => {
    const cleaned = clean(text);
    for (let at = 0; at < cleaned.length; at += PROGRESS_TEXT_LIMIT) {
      const piece = cleaned.slice(at, at + PROGRESS_TEXT_LIMIT);
      send({ kind: "text", text: piece }, piece.length);
    }
  };
  const field = (text: string) => oneLine(clean(text), PROGRESS_FIELD_LIMIT);
  return {
    text(delta) {
      if (!live || budget <= 0 || delta === "") return;
      held += delta;
      const cut = heldCut(held);
      if (cut === 0) return;
      sendText(held.slice(0, cut));
      held = held.slice(cut);
    },
    tool(name, target) {
      // Held text first: the log keeps the order things happened in (a tool use comes after
      // a whole message, so nothing of a secret is cut here in practice).
      this.flush();
      const clipped = target === undefined || target === null || target.trim() === ""
        ? null
        : field(target);
      send({ kind: "tool", name: field(name) || "tool", target: clipped }, name.length + 64);
    },
    file(path, change) {
      this.flush();
      const how = change ? oneLine(change, 32) : null;
      send({ kind: "file", path: field(path), change: how }, path.length + 64);
    },
    error(message) {
      this.flush();
      const text = oneLine(clean(message), PROGRESS_TEXT_LIMIT);
      if (text !== "") send({ kind: "error", message: text }, text.length + 32);
    },
    flush() {
      if (held !== "") sendText(held);
      held = "";
    },
    toolsRunning(count) {
      options.onToolsRunning?.(count);
    },
  };
}

import { abortableSleep } from "../concurrency/mod.ts";
import type { DispatchRequest, DispatchResult, Provider } from "./types.ts";
import { schemaInstance } from "../structured/mod.ts";
import { NATIVE_CLAUDE_ALIASES } from "./model_aliases.ts";
import { progressChannel } from "./progress.ts";

/** Pieces a fake answer's text is streamed in, over the call's latency. */
const FAKE_PIECES = 4;

/**
 * Sleeps the call's latency while streaming `text` as its progress in pieces, one after each
 * part of the wait, so that live output can be seen (and tested) without a model.
 */
async function streamOver(request: DispatchRequest, text: string, ms: number): Promise<void> {
  const progress = progressChannel(request.onProgress);
  const size = Math.ceil(text.length / FAKE_PIECES);
  for (let piece = 0; piece < FAKE_PIECES; piece++) {
    await abortableSleep(ms / FAKE_PIECES, request.signal);
    request.onActivity?.();
    progress.text(text.slice(piece * size, (piece + 1) * size));
  }
  progress.flush();
}

function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** Options of {@linkcode createFakeProvider}. */
export interface FakeProviderOptions {
  /** Delay of every call in milliseconds, so that concurrency can be observed. */
  latencyMs?: number;
  /**
   * Up to this many milliseconds more per call, drawn at random for each, so that calls of a
   * fan-out finish in a different order on every run (resume must not depend on that order).
   */
  jitterMs?: number;
  /** Cost per call in USD; 0 unless configured. */
  costUsd?: number;
}

/**
 * The deterministic `fake` provider: a text call answers with a string containing the prompt,
 * a schema call with an instance of the schema; usage derives from the prompt's length.
 */
export function createFakeProvider(options: FakeProviderOptions = {}): Provider {
  const latencyMs = options.latencyMs ?? 0;
  const jitterMs = options.jitterMs ?? 0;
  const costUsd = options.costUsd ?? 0;
  return {
    name: "fake",
    kind: "fake",
    // It answers for any model: a script's Claude aliases run under fake dispatch as they are.
    modelAliases: NATIVE_CLAUDE_ALIASES,
    probe: () => Promise.resolve({ available: true, reason: "always registered" }),
    async dispatch(request: DispatchRequest): Promise<DispatchResult> {
      const extra = jitterMs > 0 ? Math.random() * jitterMs : 0;
      const schema = request.options.schema;
      const output = schema !== undefined
        ? schemaInstance(schema)
        : `fake response to: ${request.prompt}`;
      const text = typeof output === "string" ? output : JSON.stringify(output);
      // With no latency there is nothing to watch: the answer is the journal entry's value,
      // and recording it again as live output would cost every quick step more writes.
      const wait = latencyMs + extra;
      if (request.onProgress && wait > 0) await streamOver(request, text, wait);
      else await abortableSleep(wait, request.signal);
      request.signal.throwIfAborted();
      return {
        output,
        usage: { input_tokens: tokens(request.prompt), output_tokens: tokens(text) },
        cost_usd: costUsd,
        provider: "fake",
        model: "fake",
      };
    },
  };
}

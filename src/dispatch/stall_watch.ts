/**
 * The stall watch of a call with `stallMs` (Claude Code's `agent()` option): once the call's
 * agent has shown no progress for that long, the call is stopped (its signal aborts, and a
 * harness's whole process group is killed) and fails as stalled. Progress is every sign of life
 * the provider reports: a line its tool wrote, a chunk of its stream, a progress event. As in
 * Claude Code, a tool the agent runs pauses the watch, so that a long build or test run is not
 * a stall: until its result comes back where the provider can tell (Claude Code's stream), else
 * until the agent's next output.
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import type { CallProgress } from "../schemas/mod.ts";
import type { DispatchInput } from "./dispatcher_options.ts";

/** A call under watch: the input to send, and the end of the watch. */
export interface StallWatch {
  /** The input with its own signal and progress hooks; the caller's own when there is no watch. */
  input: DispatchInput;
  /** The error of the stall, once the watch stopped the call; undefined before. */
  stalled(): SvcError | undefined;
  /** Ends the watch (the call ended); the caller's signal is let go. */
  stop(): void;
}

/** The error of a stalled call: `provider_timeout`, naming the provider and the silence. */
export function stalledError(provider: string, stallMs: number): SvcError {
  return new SvcError(
    "provider_timeout",
    `Cannot dispatch to ${provider}: the call stalled: its agent showed no progress for ${stallMs} ms (stallMs), and it was stopped`,
  );
}

/**
 * Watches `input` for stalls as `provider` runs it. Without a `stallMs` (or with 0) the input
 * is returned as it is.
 */
export function stallWatch(provider: string, input: DispatchInput): StallWatch {
  const stallMs = input.options.stallMs ?? 0;
  if (stallMs <= 0) return { input, stalled: () => undefined, stop() {} };
  const controller = new AbortController();
  const parent = input.signal;
  const onParentAbort = () => controller.abort(parent.reason);
  if (parent.aborted) onParentAbort();
  else parent.addEventListener("abort", onParentAbort, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stall: SvcError | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stall = stalledError(provider, stallMs);
      controller.abort(stall);
    }, stallMs);
  };
  const pause = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  const { onProgress, onActivity, onToolsRunning } = input;
  // Tools the provider says run (it sees their results come back): the watch holds till then.
  let toolsRunning = 0;
  const live = () => !controller.signal.aborted && toolsRunning === 0;
  arm();
  return {
    input: {
      ...input,
      signal: controller.signal,
      onActivity() {
        if (live()) arm();
        onActivity?.();
      },
      onProgress(event: CallProgress) {
        if (live()) event.kind === "tool" ? pause() : arm();
        onProgress?.(event);
      },
      onToolsRunning(count: number) {
        toolsRunning = count;
        if (!controller.signal.aborted) count > 0 ? pause() : arm();
        onToolsRunning?.(count);
      },
    },
    stalled: () => stall,
    stop() {
      pause();
      parent.removeEventListener("abort", onParentAbort);
    },
  };
}

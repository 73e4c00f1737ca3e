/**
 * Waiting on a run or task inside one tool call, for `svc_task_status` with `wait_seconds`:
 * the run's feed is followed from where it stands now, each new narration line becomes a log
 * message and each finished call a progress notification (when the client asked for progress),
 * until the run ends, the wait runs out or the client cancels the call.
 * @module
 */
import type { Caller, FeedItem, RunEvent, TaskEvent } from "../services/mod.ts";
import type { Services } from "../services/mod.ts";

/** The longest a tool call waits: clients give up on a call after about a minute. */
export const MAX_WAIT_SECONDS = 50;

/** Where waiting reports what happens. */
export interface FollowReporter {
  /** A step forward: `progress` only grows. */
  progress(progress: number, message: string): Promise<void>;
  /** A narration line of the run. */
  log(text: string): Promise<void>;
}

/** Options of {@linkcode followUntilDone}. */
export interface FollowOptions {
  /** Seconds to wait at most. */
  seconds: number;
  /** The client cancelled the call, or the server is closing. */
  signal: AbortSignal;
  /** Where progress goes. */
  reporter: FollowReporter;
}

/** Reads a feed's recorded events, without following, to find where it stands. */
async function lastSeq(feed: AsyncIterable<FeedItem<RunEvent | TaskEvent>>): Promise<number> {
  let last = -1;
  for await (const item of feed) last = item.seq;
  return last;
}

/**
 * Follows a run (`run_...`) or task (`task_...`) from now until it ends or `seconds` pass.
 * Resolves either way; the caller reads the status afterwards.
 */
export async function followUntilDone(
  services: Services,
  target: { kind: "run" | "task"; id: string; caller: Caller },
  options: FollowOptions,
): Promise<void> {
  const signal = AbortSignal.any([options.signal, AbortSignal.timeout(options.seconds * 1000)]);
  const { kind, id, caller } = target;
  const open = (after?: number) => {
    const settings = { signal, ...(after !== undefined ? { after } : {}) };
    return kind === "run"
      ? services.runs.events(id, caller, settings)
      : services.tasks.events(id, caller, settings);
  };
  const after = await lastSeq(
    kind === "run"
      ? services.runs.events(id, caller, { follow: false })
      : services.tasks.events(id, caller, { follow: false }),
  );
  let progress = 0;
  const step = async (done: number, message: string) => {
    // Progress must grow with every notification; a message without a step is a log line.
    if (done > progress) {
      progress = done;
      await options.reporter.progress(progress, message);
    }
  };
  try {
    for await (const item of open(after >= 0 ? after : undefined)) {
      const event = item.event;
      if ("type" in event) {
        if (event.type === "narration") await options.reporter.log(event.entry.text);
        else if (event.type === "calls") {
          const c = event.calls;
          const finished = c.succeeded + c.failed + c.replayed + c.skipped;
          await step(finished, `${finished} of ${c.total} calls finished`);
        } else if (event.type === "state") await options.reporter.log(`run ${event.state}`);
      } else {
        // A task has no calls to count: each state it enters is a step.
        await step(progress + 1, `task ${event.state}`);
      }
    }
  } catch (error) {
    // A wait that ran out or was cancelled is no error: the status says where things stand.
    if (!signal.aborted) throw error;
  }
}

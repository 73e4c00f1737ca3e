/**
 * The start group: latency to the first `agent()` call in process, against a bare guest-like
 * `deno run` (and the same inside bubblewrap).
 * @module
 */
import { createDispatcher, type Dispatcher } from "../../src/dispatch/mod.ts";
import { RunManager, type RunManagerOptions } from "../../src/engine/mod.ts";
import { createUnsafeLocalBackend } from "../../src/isolation/mod.ts";
import { openLedger } from "../../src/ledger/mod.ts";
import { STEP_TIMEOUT_MS } from "../bench_limit.ts";
import {
  BWRAP_OK,
  expectSucceeded,
  GUEST_HEAP_MB,
  IDLE_BETWEEN_RUNS_MS,
  LOCAL,
  ONE_CALL_SCRIPT,
  PRESTARTED_GUEST_OPTIONS,
  RUN_TIMEOUT_S,
  runToEnd,
} from "./common.ts";
import type { GroupContext, Report } from "./report.ts";

/**
 * The host's side of `agent()`, timed: the first time the engine hands a call to the
 * dispatcher (its sandbox admission comes first, before the call takes a slot).
 */
export function probedDispatcher(dispatcher: Dispatcher): {
  dispatcher: Dispatcher;
  firstCallAt(): number | undefined;
  /** Forgets the calls seen so far: the next run's first call is timed. */
  reset(): void;
} {
  let first: number | undefined;
  const seen = () => (first ??= performance.now());
  return {
    firstCallAt: () => first,
    reset: () => (first = undefined),
    dispatcher: {
      providers: () => dispatcher.providers(),
      status: () => dispatcher.status(),
      admit(options, context) {
        seen();
        return dispatcher.admit(options, context);
      },
      dispatch(input, context) {
        seen();
        return dispatcher.dispatch(input, context);
      },
    },
  };
}

/**
 * In process: ms from `start()` to the first `agent()` call reaching the host (the engine
 * handing it to the dispatcher). With `managerOptions` (a pre-started guest), one run goes
 * first so that the measured run finds its guest waiting, as a run on a long-lived host does.
 */
export async function timeFirstCallInProcess(
  home: string,
  managerOptions: Partial<RunManagerOptions> = {},
): Promise<number> {
  const ledger = await openLedger(home);
  const probe = probedDispatcher(createDispatcher({ fakeLatencyMs: 0 }));
  const manager = await RunManager.create({
    dispatcher: probe.dispatcher,
    ledger,
    ...managerOptions,
  });
  try {
    if (Object.keys(managerOptions).length > 0) {
      expectSucceeded(
        // Its timeout is the measured run's, so the guest started after it has the same limits.
        (await runToEnd(manager, { script: ONE_CALL_SCRIPT, filename: "bench_warm.js" })).status,
        "the warm-up run",
      );
      await new Promise((resolve) => setTimeout(resolve, IDLE_BETWEEN_RUNS_MS));
      probe.reset();
    }
    const t0 = performance.now();
    const started = await manager.start({
      script: ONE_CALL_SCRIPT,
      filename: "bench_one_call.js",
      fake_dispatch: true,
      timeout: RUN_TIMEOUT_S,
    }, LOCAL);
    const status = await manager.wait(started.run_id, LOCAL);
    expectSucceeded(status, "the one-call run");
    if (typeof status.result !== "string") {
      throw new Error(`the one-call run returned ${JSON.stringify(status.result)}, not a string`);
    }
    const firstCallAt = probe.firstCallAt();
    if (firstCallAt === undefined) {
      throw new Error("the one-call run's call never reached the host");
    }
    return firstCallAt - t0;
  } finally {
    await manager.close();
    ledger.close();
  }
}

/**
 * A bare guest: the real `unsafe-local` backend spawning an empty file instead of the bootstrap,
 * so flags, environment, DENO_DIR and caps are exactly those of a guest.
 */
export async function timeBareGuest(
  scratchRoot: string,
  emptyScript: string,
  sandbox: "off" | "on",
): Promise<number> {
  const backend = createUnsafeLocalBackend({ bootstrapPath: emptyScript });
  // The backend reads SVC_WORKFLOW_SANDBOX at each spawn.
  const before = Deno.env.get("SVC_WORKFLOW_SANDBOX");
  Deno.env.set("SVC_WORKFLOW_SANDBOX", sandbox);
  const t0 = performance.now();
  let guest;
  try {
    guest = await backend.spawn({ scratchRoot, heapMb: GUEST_HEAP_MB, seed: 1 });
  } finally {
    if (before === undefined) Deno.env.delete("SVC_WORKFLOW_SANDBOX");
    else Deno.env.set("SVC_WORKFLOW_SANDBOX", before);
  }
  try {
    const timeout = AbortSignal.timeout(STEP_TIMEOUT_MS);
    const status = await Promise.race([
      guest.process.status,
      new Promise<never>((_, reject) =>
        timeout.addEventListener("abort", () => reject(new Error("the bare guest did not end")))
      ),
    ]);
    const ms = performance.now() - t0;
    if (status.code !== 0) throw new Error(`the bare guest exited with status ${status.code}`);
    return ms;
  } finally {
    await guest.dispose();
  }
}

/** The start group: the first call in process against a bare guest. */
export function reportStart(report: Report, context: GroupContext): void {
  if (context.only.has("start")) {
    const bareGuest = report.pick("bareGuestMs");
    const bwrapGuest = BWRAP_OK ? report.pick("bwrapGuestMs") : null;
    const inProcess = report.pick("inProcessFirstCallMs");
    report.baseline(
      "bare_guest_ms",
      "baseline: bare guest-like deno run (empty file)",
      bareGuest,
      "ms",
    );
    report.figure(
      "first_call_in_process_ms",
      "first agent() call, in process (start -> call reaches the host)",
      inProcess,
      "ms",
      "bare_guest_ms",
      "<= 1.2x",
    );
    report.figure(
      "first_call_prestarted_guest_ms",
      PRESTARTED_GUEST_OPTIONS
        ? "first agent() call, pre-started guest (host has run once)"
        : "first agent() call, pre-started guest (no engine option yet)",
      PRESTARTED_GUEST_OPTIONS ? report.pick("preStartedFirstCallMs") : null,
      "ms",
      "bare_guest_ms",
    );
    if (BWRAP_OK) {
      report.figure(
        "bwrap_guest_ms",
        "the same bare guest start inside bubblewrap",
        bwrapGuest,
        "ms",
        "bare_guest_ms",
      );
    }
  }
}

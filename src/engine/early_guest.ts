/**
 * A run's guest started before the host has loaded the rest of itself: `svc workflow run`
 * spawns it first thing, so that the guest's boot (a Deno process, tens of ms) overlaps the
 * host's own start (its modules, configuration and ledger) instead of following it. A second
 * entry of the engine, beside its `mod.ts`: it loads only the isolation tier and no schema, so
 * that the command line can run it before it loads the engine.
 * @module
 */
import { type EnvReader, GUEST_ENV_VARS, snapshotEnv } from "../host_env/mod.ts";
import {
  createUnsafeLocalBackend,
  type IsolationBackend,
  type PrestartedBackend,
  prestartedBackend,
} from "../isolation/mod.ts";
import { joinPath } from "../platform/mod.ts";
import { DEFAULT_GUEST_HEAP_MB, guestClock } from "./run/guest_prime.ts";

/** Options of {@linkcode startEarlyGuest}. */
export interface EarlyGuestOptions {
  /** The data directory the run's services open: guests' scratch space is under it. */
  home: string;
  /** The run's timeout in seconds, as its request will have it. */
  timeout: number;
  /**
   * The guest's V8 heap cap in MiB, as the run manager will ask for it.
   * @default {DEFAULT_GUEST_HEAP_MB}
   */
  heapMb?: number;
  /**
   * Where the guest's variables (`SVC_DENO`, `SVC_WORKFLOW_SANDBOX`) are read.
   * @default the host's environment, read now
   */
  env?: EnvReader;
  /**
   * The tier's backend that starts the guest (a test records what it starts).
   * @default the `unsafe-local` backend over `env`
   */
  backend?: IsolationBackend;
}

/** A guest started early: the backend to give the services, and when its process exists. */
export interface EarlyGuest {
  /** The `unsafe-local` backend holding the guest; disposing it ends the guest if untaken. */
  readonly backend: PrestartedBackend;
  /** Settles once the guest's process is spawned (or failed to start). */
  readonly spawned: Promise<void>;
}

/**
 * Starts an `unsafe-local` guest for a run of `options.timeout` seconds and returns at once the
 * backend that holds it: its spawn (a few file-system calls, then the process) goes on while the
 * caller loads and opens the rest. Give the backend to the services (`earlyGuest` of
 * `openServices`) as the tier's backend: the run whose settings match takes the guest (waiting
 * for its spawn if needed); any other spawns its own, as without it. The caller disposes of the
 * backend when the command ends, which ends the guest if no run took it.
 */
export function startEarlyGuest(options: EarlyGuestOptions): EarlyGuest {
  const env = options.env ?? snapshotEnv(GUEST_ENV_VARS);
  const backend = prestartedBackend(options.backend ?? createUnsafeLocalBackend({ env }));
  const spawned = backend.prime({
    scratchRoot: joinPath(options.home, "tmp"),
    heapMb: options.heapMb ?? DEFAULT_GUEST_HEAP_MB,
    ...guestClock(options.timeout),
  });
  return { backend, spawned };
}

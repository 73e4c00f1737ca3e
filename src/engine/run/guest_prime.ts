import type { PrestartedBackend } from "../../isolation/mod.ts";

/** The guests' `--seed`: the same in every run, so that the runtime's own randomness replays. */
export const GUEST_SEED = 1;
/** CPU seconds a guest gets past its run's timeout, so that the host's own timeout wins. */
export const GUEST_CPU_GRACE_S = 5;
/** A guest's V8 heap cap in MiB unless the run manager is given another. */
export const DEFAULT_GUEST_HEAP_MB = 512;

/**
 * The seed and CPU cap of a guest for a run of `timeout` seconds: one function for the primed
 * guest and the run's, so that a primed guest matches what the run asks for.
 */
export function guestClock(timeout: number): { seed: number; cpuSeconds: number } {
  return { seed: GUEST_SEED, cpuSeconds: timeout + GUEST_CPU_GRACE_S };
}

/** What {@linkcode primeGuest} starts a guest with. */
export interface PrimeGuestOptions {
  /** Where guests make their scratch directories. */
  scratchRoot: string;
  /** V8 heap cap of the guest in MiB. */
  heapMb: number;
  /** The timeout of the run the guest is for, in seconds. */
  timeout: number;
}

/**
 * Starts an `unsafe-local` guest with the settings runGuest() will ask for under `timeout`,
 * so that it boots while the host records the run (or waits for the next run).
 */
export function primeGuest(prestarted: PrestartedBackend, options: PrimeGuestOptions): void {
  prestarted.prime({
    scratchRoot: options.scratchRoot,
    heapMb: options.heapMb,
    ...guestClock(options.timeout),
  });
}

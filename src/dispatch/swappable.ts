import type { Dispatcher } from "./dispatcher.ts";

/** A dispatcher whose configuration can be replaced while the process runs. */
export interface SwappableDispatcher extends Dispatcher {
  /**
   * Sends every later call to `next` (a dispatcher built from a reloaded configuration). Work
   * that pinned the one before keeps it.
   */
  swap(next: Dispatcher): void;
}

/**
 * The dispatcher of a host whose configuration may be reloaded: every call goes to the current
 * one, and {@linkcode Dispatcher.pinned} hands out the current one itself, which a run holds
 * so that a reload never changes its providers or routing halfway.
 */
export function swappableDispatcher(initial: Dispatcher): SwappableDispatcher {
  let current = initial;
  return {
    providers: () => current.providers(),
    status: (request) => current.status(request),
    dispatch: (input, context) => current.dispatch(input, context),
    admit: (options, context) => current.admit(options, context),
    pinned: () => current.pinned?.() ?? current,
    swap: (next) => {
      current = next;
    },
  };
}

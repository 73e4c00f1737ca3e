import type { GuestHandle, GuestSpawnRequest, IsolationBackend } from "./types.ts";

/** A backend that keeps one guest started ahead of need; closing it disposes of that guest. */
export interface PrestartedBackend extends IsolationBackend, AsyncDisposable {
  /**
   * Starts the idle guest for requests like `request`, unless one is ready. The promise settles
   * once its process is spawned (or failed to start, which the run that takes it finds out):
   * the caller may wait for it, or not.
   */
  prime(request: GuestSpawnRequest): Promise<void>;
}

/** The spawn settings a ready guest was started with: a request must match all of them. */
function keyOf(request: GuestSpawnRequest): string {
  const { scratchRoot, heapMb, seed, cpuSeconds } = request;
  return JSON.stringify([scratchRoot, heapMb, seed, cpuSeconds ?? null]);
}

interface Ready {
  key: string;
  handle: Promise<GuestHandle>;
  exited: boolean;
}

/** Options of {@linkcode prestartedBackend}. */
export interface PrestartOptions {
  /**
   * Start the next guest as soon as one is taken (a long-lived host). Without, a guest starts
   * ahead only when primed: a run primes its own while the host records it.
   */
  refill?: boolean;
}

/**
 * Wraps `backend` so that a run pays as little process boot as possible on its critical path:
 * a primed guest boots while the host does its own work and waits for its init frame; the next
 * spawn whose settings match takes it. With `refill` (a long-lived host: dashboard, daemon) a
 * new one is started at once, so a run pays no boot at all. Every run still gets a fresh process
 * of its own; nothing of one run ever reaches another. A request that does not match spawns as
 * usual (and, with `refill`, primes the next guest with its settings).
 */
export function prestartedBackend(
  backend: IsolationBackend,
  options: PrestartOptions = {},
): PrestartedBackend {
  const refill = options.refill ?? false;
  let ready: Ready | undefined;
  let closed = false;

  function start(request: GuestSpawnRequest): void {
    if (closed) return;
    // The run's abort signal and queue callback belong to the run, not to the idle guest.
    const { signal: _signal, onQueued: _onQueued, ...settings } = request;
    const entry: Ready = {
      key: keyOf(request),
      handle: backend.spawn({ ...settings, ahead: true }),
      exited: false,
    };
    entry.handle.then(
      (handle) => handle.process.status.then(() => (entry.exited = true)),
      () => (entry.exited = true),
    ).catch(() => {});
    ready = entry;
  }

  async function take(request: GuestSpawnRequest): Promise<GuestHandle | undefined> {
    const entry = ready;
    if (!entry) return undefined;
    if (entry.key !== keyOf(request)) {
      // An idle VM holds a slot of the tier's cap that this run may be waiting for: it goes.
      if (backend.prestarts !== undefined) {
        ready = undefined;
        await (await entry.handle.catch(() => undefined))?.dispose();
      }
      return undefined;
    }
    ready = undefined;
    const handle = await entry.handle.catch(() => undefined);
    // It died while idle (killed, out of its limits): this run gets a fresh one.
    if (!handle || entry.exited) {
      await handle?.dispose();
      return undefined;
    }
    return handle;
  }

  return {
    name: backend.name,
    ...(backend.describe ? { describe: () => backend.describe!() } : {}),
    ...(backend.prestarts ? { prestarts: () => backend.prestarts!() } : {}),
    async spawn(request: GuestSpawnRequest): Promise<GuestHandle> {
      const handle = await take(request) ?? await backend.spawn(request);
      if (refill) this.prime(request);
      return handle;
    },
    prime(request: GuestSpawnRequest): Promise<void> {
      // A backend that says a guest ahead does not pay off (a resident VM) is left as it is.
      if (backend.prestarts?.() === false) return Promise.resolve();
      if (!ready || ready.key !== keyOf(request)) {
        const previous = ready;
        start(request);
        previous?.handle.then((handle) => handle.dispose(), () => {});
      }
      return ready ? ready.handle.then(() => {}, () => {}) : Promise.resolve();
    },
    async [Symbol.asyncDispose](): Promise<void> {
      closed = true;
      const entry = ready;
      ready = undefined;
      const handle = await entry?.handle.catch(() => undefined);
      await handle?.dispose();
    },
  };
}

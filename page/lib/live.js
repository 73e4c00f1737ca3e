/**
 * The page's live picture: one follower of `/api/events` (runs, tasks and cards changing) that
 * every view listens to, and `useResource`, a view's data read from the API and read again,
 * at most a few times a second, when something it shows changes.
 */
import { followEvents } from "./sse.js";
import { useEffect, useRef, useState } from "./html.js";

const listeners = new Set();
const statusListeners = new Set();
let status = { state: "connecting" };

/** Starts following `/api/events` from now; returns a function that stops it. */
export function startLive(api) {
  const controller = new AbortController();
  followEvents("/api/events?from=now", {
    api,
    signal: controller.signal,
    onEvent: (event) => {
      for (const listener of listeners) listener(event);
    },
    onStatus: (state, detail) => {
      status = { state, detail };
      for (const listener of statusListeners) listener(status);
    },
  });
  return () => controller.abort();
}

/** Calls `listener` with every general event (`run`, `task`, `card`, `ready`, `reset`). */
export function onLive(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The connection's state: `connecting`, `connected`, `reconnecting` (with detail), `failed`. */
export function useLiveStatus() {
  const [current, setCurrent] = useState(status);
  useEffect(() => {
    statusListeners.add(setCurrent);
    setCurrent(status);
    return () => statusListeners.delete(setCurrent);
  }, []);
  return current;
}

/**
 * Reads `load()` now, and again when a general event of one of `kinds` arrives (debounced), or
 * a reset. Returns `{data, error, loading, reload}`; the last good data stays while a
 * re-read is under way or fails.
 * @param {(signal: AbortSignal) => Promise<unknown>} load
 * @param {unknown[]} deps what `load` depends on
 * @param {{kinds?: string[], debounceMs?: number, every?: number}} [options]
 */
export function useResource(load, deps, options = {}) {
  const [state, setState] = useState({ data: undefined, error: undefined, loading: true });
  const loadRef = useRef(load);
  loadRef.current = load;
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    loadRef.current(controller.signal).then(
      (data) => !controller.signal.aborted && setState({ data, error: undefined, loading: false }),
      (error) => !controller.signal.aborted && setState((s) => ({ ...s, error, loading: false })),
    );
    return () => controller.abort();
  }, [...deps, tick]);
  const kinds = options.kinds ?? [];
  useEffect(() => {
    if (kinds.length === 0 && !options.every) return;
    let timer;
    const soon = () => {
      if (timer === undefined) {
        timer = setTimeout(() => {
          timer = undefined;
          setTick((t) => t + 1);
        }, options.debounceMs ?? 100);
      }
    };
    const off = onLive((event) => {
      if (kinds.includes(event.event) || event.event === "reset") soon();
    });
    const interval = options.every ? setInterval(soon, options.every) : undefined;
    return () => {
      off();
      clearTimeout(timer);
      clearInterval(interval);
    };
  }, [kinds.join(","), options.every]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

/** Re-renders every `ms` (ages and durations that grow while a page is open). */
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

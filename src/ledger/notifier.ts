import type { SharedKvStore } from "../platform/postgres.ts";

/** Options of {@linkcode Notifier}. */
export interface NotifierOptions<S> {
  /** How often readers waiting look for other processes' writes, in ms. */
  pollMs: number;
  /** The key of a stream: waiters of one key are woken together. */
  key: (stream: S) => string;
  /** Reads a stream's head position from the store (-1 when empty). */
  head: (stream: S) => Promise<number>;
  /**
   * Reads the version of the key every write rewrites: the poll reads the heads only when it
   * changed, so that a store nobody writes costs one read a poll.
   */
  tick: () => Promise<string | null>;
  /** The shared store, whose notifications of other hosts' writes make the poll run now. */
  shared?: SharedKvStore;
  /**
   * With true, {@linkcode Notifier.notify} wakes readers in the next turn of the event loop
   * rather than at once: the writer's own continuation goes first.
   */
  defer?: boolean;
  /** A stream's head this process knows without reading the store, if any. */
  knownHead?: (key: string) => number | undefined;
  /** Told of each head the poll read, so that memory of a stream other processes wrote goes. */
  polled?: (key: string, head: number) => void;
}

/** A reader waiting for a stream to pass `after`. */
interface Waiter<S> {
  stream: S;
  key: string;
  after: number;
  wake: () => void;
}

/** Lets the event loop end while `port` waits (Deno's and Node's ports both have `unref`). */
function unref(port: MessagePort): void {
  (port as MessagePort & { unref?: () => void }).unref?.();
}

/**
 * Wakes readers waiting for a stream of a store to grow: at once for this process's writes
 * ({@linkcode Notifier.notify}), by a poll of one tick key for other processes' writes, and on
 * a shared store as soon as the database says another host wrote. The ledger's feeds and the
 * board's change log both wait through one.
 */
export class Notifier<S> {
  readonly #options: NotifierOptions<S>;
  readonly #waiters = new Set<Waiter<S>>();
  #poll: ReturnType<typeof setTimeout> | undefined;
  #polling = false;
  #pollAgain = false;
  #tick: string | null | undefined;
  #closed = false;
  /** Readers to wake once the writer's own continuation is done (with `defer`). */
  #woken: Waiter<S>[] = [];
  readonly #wakeups: MessageChannel | undefined;

  constructor(options: NotifierOptions<S>) {
    this.#options = options;
    // Another host's write: look now rather than at the next poll.
    options.shared?.onChange(() => this.#pollNow());
    if (options.defer) {
      this.#wakeups = new MessageChannel();
      this.#wakeups.port1.onmessage = () => {
        const woken = this.#woken;
        this.#woken = [];
        for (const waiter of woken) waiter.wake();
      };
      // A wake-up pending never keeps the process alive.
      unref(this.#wakeups.port1);
    }
  }

  /** Whether {@linkcode Notifier.close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Resolves once the stream has a position after `after`, or at `timeoutMs`, or when `signal`
   * aborts (without throwing), or when the notifier closes.
   */
  wait(
    stream: S,
    options: { after: number; signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void> {
    if (this.#closed || options.signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiter: Waiter<S> = {
        stream,
        key: this.#options.key(stream),
        after: options.after,
        wake: () => {
          this.#waiters.delete(waiter);
          if (timer !== undefined) clearTimeout(timer);
          options.signal?.removeEventListener("abort", waiter.wake);
          resolve();
        },
      };
      this.#waiters.add(waiter);
      options.signal?.addEventListener("abort", waiter.wake, { once: true });
      if (options.timeoutMs !== undefined) timer = setTimeout(waiter.wake, options.timeoutMs);
      // The write may have landed between the reader's last read and now.
      const known = this.#options.knownHead?.(waiter.key);
      if (known !== undefined) {
        if (known > waiter.after) waiter.wake();
      } else {
        this.#options.head(stream).then(
          (head) => head > waiter.after && waiter.wake(),
          () => waiter.wake(),
        );
      }
      this.#schedulePoll();
    });
  }

  /**
   * Wakes this process's readers of a stream just written: those before `head` when it is
   * given, else all of them.
   */
  notify(stream: S, head?: number): void {
    const key = this.#options.key(stream);
    const due = (waiter: Waiter<S>) =>
      waiter.key === key && (head === undefined || head > waiter.after);
    if (this.#wakeups === undefined) {
      for (const waiter of this.#waiters) if (due(waiter)) waiter.wake();
      return;
    }
    // In the next turn of the event loop, not a timer later: the writer's continuation (a run's
    // reply to its script waits for this write) goes first, and readers lose microseconds.
    const pending = this.#woken.length > 0;
    for (const waiter of this.#waiters) if (due(waiter)) this.#woken.push(waiter);
    if (!pending && this.#woken.length > 0 && !this.#closed) {
      this.#wakeups.port2.postMessage(null);
    }
  }

  /** Wakes every reader and stops polling; later waits resolve at once. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#wakeups?.port1.close();
    this.#wakeups?.port2.close();
    for (const waiter of this.#waiters) waiter.wake();
    this.#waiters.clear();
    if (this.#poll !== undefined) clearTimeout(this.#poll);
  }

  /**
   * Runs the poll at once (another host wrote), or once more right after the one that is
   * running, which may have read before that write.
   */
  #pollNow(): void {
    if (this.#waiters.size === 0 || this.#closed) return;
    if (this.#polling) {
      this.#pollAgain = true;
      return;
    }
    if (this.#poll !== undefined) clearTimeout(this.#poll);
    this.#poll = undefined;
    this.#runPoll();
  }

  #runPoll(): void {
    this.#polling = true;
    this.#pollOnce().finally(() => {
      this.#polling = false;
      if (this.#pollAgain) {
        this.#pollAgain = false;
        this.#pollNow();
      } else this.#schedulePoll();
    });
  }

  #schedulePoll(): void {
    if (this.#poll !== undefined || this.#polling || this.#waiters.size === 0 || this.#closed) {
      return;
    }
    this.#poll = setTimeout(() => {
      this.#poll = undefined;
      this.#runPoll();
    }, this.#options.pollMs);
  }

  async #pollOnce(): Promise<void> {
    try {
      // One read while nothing changes; the heads only when some process wrote.
      const tick = await this.#options.tick();
      if (tick === this.#tick) return;
      this.#tick = tick;
      const streams = new Map<string, S>();
      for (const waiter of this.#waiters) streams.set(waiter.key, waiter.stream);
      for (const [key, stream] of streams) {
        const head = await this.#options.head(stream);
        this.#options.polled?.(key, head);
        for (const waiter of this.#waiters) {
          if (waiter.key === key && head > waiter.after) waiter.wake();
        }
      }
    } catch {
      // A closed store (close() woke the waiters), or an unreachable one: the poll tries again.
    }
  }
}

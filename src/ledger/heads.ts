/** Live run streams whose head one ledger keeps in memory for its own readers. */
const KNOWN_HEADS = 1024;
/** Latest events of each such stream kept in memory, so that its followers read no KV. */
const TAIL_EVENTS = 16;
/** Most bytes of those events per stream: a run logging large lines keeps fewer (64 MiB in all). */
const TAIL_BYTES = 64 * 1024;

/** A live run this process runs: its stream's last seq and its latest events' bytes. */
export interface KnownHead {
  /** The stream's last seq. */
  head: number;
  /** Consecutive events ending at `head`, oldest first (at most {@linkcode TAIL_EVENTS}). */
  tail: Uint8Array[];
}

/** Events this process just wrote of a stream, up to its head. */
export interface WrittenEvents {
  /** The stream's head after the write. */
  head: number;
  /** The events written, by seq. */
  events: Map<number, Uint8Array>;
}

/**
 * The latest events of a stream after a write of `written.events` (up to `written.head`): the
 * earlier tail when the new events follow it without a gap, else only the new ones that are
 * consecutive up to the head; at most {@linkcode TAIL_EVENTS} and {@linkcode TAIL_BYTES}.
 */
function tailOf(previous: KnownHead | undefined, written: WrittenEvents): Uint8Array[] {
  const fresh: Uint8Array[] = [];
  let seq = written.head;
  for (let bytes = written.events.get(seq); bytes; bytes = written.events.get(--seq)) {
    fresh.unshift(bytes);
  }
  const joined = previous && previous.head === seq ? [...previous.tail, ...fresh] : fresh;
  const tail = joined.slice(-TAIL_EVENTS);
  let bytes = tail.reduce((sum, event) => sum + event.length, 0);
  while (bytes > TAIL_BYTES && tail.length > 0) bytes -= tail.shift()!.length;
  return tail;
}

/**
 * The last event seq and latest events of each live run this process runs, so that its own
 * readers wait without reading the stream's head from the store and read what it just wrote
 * from memory. Only the process running a run writes its events while it runs (a queued run's
 * first event, written by whoever queued it, is not kept), so memory is the whole stream up
 * to that head; past it a reader reads the store. A terminal state forgets the run.
 */
export class KnownHeads {
  readonly #heads = new Map<string, KnownHead>();

  /** What this process knows of a stream, by its key. */
  get(key: string): KnownHead | undefined {
    return this.#heads.get(key);
  }

  /**
   * Records a write of a stream: with `written` (the events this process just wrote of a run it
   * runs) its readers read from memory from now on; without it, the stream is forgotten.
   */
  wrote(key: string, written?: WrittenEvents): void {
    const previous = this.#heads.get(key);
    this.#heads.delete(key);
    if (written === undefined) return;
    // Oldest first: a host with more live streams than this forgets only a shortcut.
    const oldest = this.#heads.keys().next();
    if (this.#heads.size >= KNOWN_HEADS && !oldest.done) this.#heads.delete(oldest.value);
    this.#heads.set(key, { head: written.head, tail: tailOf(previous, written) });
  }

  /** A head read from the store: past the known one, another process wrote, so forget it. */
  polled(key: string, head: number): void {
    if (head > (this.#heads.get(key)?.head ?? head)) this.#heads.delete(key);
  }
}

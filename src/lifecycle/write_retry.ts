import { abortableSleep } from "../concurrency/mod.ts";

/** Options of {@linkcode writeUntilTaken}. */
export interface WriteUntilTakenOptions {
  /** Aborted when the host closes: the writes stop and the last failure is thrown. */
  signal: AbortSignal;
  /**
   * The first pause after a refused write, in ms; it doubles after each.
   * @default {100}
   */
  minMs?: number;
  /**
   * The longest pause between attempts, in ms.
   * @default {2000}
   */
  maxMs?: number;
}

/**
 * Writes the end of a run or a task again and again, backing off, while the ledger refuses it
 * (disk full, file locked): until then its host answers for it from memory, so that no reader
 * sees it `running`. A closing host stops trying (the write's error is thrown) and leaves it to
 * the next host's recovery.
 */
export async function writeUntilTaken(
  write: () => Promise<void>,
  options: WriteUntilTakenOptions,
): Promise<void> {
  const { signal, minMs = 100, maxMs = 2_000 } = options;
  for (let delay = minMs;; delay = Math.min(delay * 2, maxMs)) {
    try {
      return await write();
    } catch (error) {
      if (signal.aborted) throw error;
      await abortableSleep(delay, signal).catch(() => {});
    }
  }
}

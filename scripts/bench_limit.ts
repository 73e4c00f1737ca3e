/** The bench's step limit: every measured step ends, in time or with an error naming it. */

/** How long one step (a spawned process, an in-process run) may take, in ms. */
export const STEP_TIMEOUT_MS = 30_000;

/** Rejects when `promise` has not settled within `ms` (the step limit): every step ends. */
export async function limited<T>(
  what: string,
  promise: Promise<T>,
  ms: number = STEP_TIMEOUT_MS,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

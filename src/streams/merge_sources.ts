/**
 * Two endless sources as one: each value as soon as its source yields it, both stopped together.
 * @module
 */

/**
 * Yields the values of `a` and `b` as they come, tagged by source, until both end; an error of
 * either ends it with that error.
 *
 * Each pending `next()` gets exactly one reaction, which queues its result. Not
 * `Promise.race` over the pending pulls in a loop: each race adds a reaction to the pull that
 * is still pending, and a source that stays quiet for hours (a board nobody changes, beside a
 * busy activity stream) would keep one per value of the other source until the stream closes.
 */
export async function* mergeSources<A, B>(
  a: AsyncIterator<A>,
  b: AsyncIterator<B>,
): AsyncGenerator<{ from: "a"; value: A } | { from: "b"; value: B }> {
  type Step = { from: "a"; result: IteratorResult<A> } | { from: "b"; result: IteratorResult<B> };
  const ready: Step[] = [];
  let failure: { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  const settle = () => {
    wake?.();
    wake = undefined;
  };
  const fail = (error: unknown) => {
    failure ??= { error };
    settle();
  };
  const pull = {
    a: () => a.next().then((result) => (ready.push({ from: "a", result }), settle()), fail),
    b: () => b.next().then((result) => (ready.push({ from: "b", result }), settle()), fail),
  };
  let live = 2;
  pull.a();
  pull.b();
  try {
    while (live > 0) {
      if (failure) throw failure.error;
      const step = ready.shift();
      if (step === undefined) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      if (step.result.done) {
        live--;
        continue;
      }
      if (step.from === "a") {
        pull.a();
        yield { from: "a", value: step.result.value };
      } else {
        pull.b();
        yield { from: "b", value: step.result.value };
      }
    }
  } finally {
    await Promise.allSettled([a.return?.(), b.return?.()]);
  }
}

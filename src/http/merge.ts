/**
 * Two endless sources as one: each value as soon as its source yields it, both stopped together.
 * @module
 */

/** Yields the values of `a` and `b` as they come, tagged by source, until both end. */
export async function* mergeSources<A, B>(
  a: AsyncIterator<A>,
  b: AsyncIterator<B>,
): AsyncGenerator<{ from: "a"; value: A } | { from: "b"; value: B }> {
  type Step = { from: "a"; result: IteratorResult<A> } | { from: "b"; result: IteratorResult<B> };
  const pull = {
    a: (): Promise<Step> => a.next().then((result) => ({ from: "a", result })),
    b: (): Promise<Step> => b.next().then((result) => ({ from: "b", result })),
  };
  const pending = new Map<"a" | "b", Promise<Step>>([["a", pull.a()], ["b", pull.b()]]);
  try {
    while (pending.size > 0) {
      const step = await Promise.race(pending.values());
      if (step.result.done) {
        pending.delete(step.from);
        continue;
      }
      if (step.from === "a") {
        pending.set("a", pull.a());
        yield { from: "a", value: step.result.value };
      } else {
        pending.set("b", pull.b());
        yield { from: "b", value: step.result.value };
      }
    }
  } finally {
    await Promise.allSettled([a.return?.(), b.return?.()]);
  }
}

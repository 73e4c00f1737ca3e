import assert from "node:assert/strict";
import { mergeSources } from "../src/streams/mod.ts";
import { denoCommand, ROOT } from "./helpers.ts";

/** A source whose values the test pushes, and which ends or fails when told. */
function manual<T>() {
  type Step = IteratorResult<T> | { error: unknown };
  const queue: Step[] = [];
  let waiting: ((step: Step) => void) | undefined;
  let returned = false;
  const give = (step: Step) => {
    if (waiting) {
      const resolve = waiting;
      waiting = undefined;
      resolve(step);
    } else queue.push(step);
  };
  const iterator: AsyncIterator<T> = {
    async next(): Promise<IteratorResult<T>> {
      const step: Step = queue.shift() ?? await new Promise<Step>((resolve) => (waiting = resolve));
      if ("error" in step) throw step.error;
      return step;
    },
    return() {
      returned = true;
      give({ done: true, value: undefined });
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return {
    iterator,
    push: (value: T) => give({ done: false, value }),
    end: () => give({ done: true, value: undefined }),
    fail: (error: unknown) => give({ error }),
    get returned() {
      return returned;
    },
  };
}

Deno.test("merged sources yield each value as its source gives it, tagged, until both end", async () => {
  const a = manual<number>();
  const b = manual<string>();
  const merged = mergeSources(a.iterator, b.iterator);
  a.push(1);
  assert.deepEqual((await merged.next()).value, { from: "a", value: 1 });
  b.push("x");
  assert.deepEqual((await merged.next()).value, { from: "b", value: "x" });
  const later = merged.next();
  a.push(2);
  b.push("y");
  assert.deepEqual((await later).value, { from: "a", value: 2 });
  assert.deepEqual((await merged.next()).value, { from: "b", value: "y" });
  a.end();
  b.push("z");
  assert.deepEqual((await merged.next()).value, { from: "b", value: "z" });
  b.end();
  assert.equal((await merged.next()).done, true);
});

Deno.test("an error of either source ends the merged stream with it, and both sources are closed", async () => {
  const a = manual<number>();
  const b = manual<number>();
  const merged = mergeSources(a.iterator, b.iterator);
  a.push(1);
  assert.deepEqual((await merged.next()).value, { from: "a", value: 1 });
  b.fail(new Error("boom"));
  await assert.rejects(merged.next(), /boom/);
  assert.ok(a.returned && b.returned);
});

Deno.test("closing the merged stream closes both sources", async () => {
  const a = manual<number>();
  const b = manual<number>();
  const merged = mergeSources(a.iterator, b.iterator);
  a.push(1);
  await merged.next();
  await merged.return(undefined);
  assert.ok(a.returned && b.returned);
});

Deno.test("a quiet source beside a busy one holds no memory per value of the busy one", async () => {
  // The general event stream merges the activity stream with board changes; a board nobody
  // changes stays pending for the life of the connection. Measured in a process of its own with
  // a collectable heap: 300,000 values through the merge must not grow the heap by the size of
  // one retained reaction each (a Promise.race per value grew it by about 100 MiB).
  const code = `
    import { mergeSources } from ${JSON.stringify(`file://${ROOT}/src/streams/merge_sources.ts`)};
    async function* busy(n) { for (let i = 0; i < n; i++) yield i; }
    const quiet = { next: () => new Promise(() => {}), return: async () => ({ done: true }) };
    const merged = mergeSources(busy(300000), quiet);
    let seen = 0;
    let before = 0;
    let grewMiB = 0;
    for await (const item of merged) {
      if (++seen === 20000) { gc(); before = Deno.memoryUsage().heapUsed; }
      if (seen === 300000) {
        // Measured while the stream is still open: closing it frees what the quiet pull holds.
        gc();
        grewMiB = (Deno.memoryUsage().heapUsed - before) / 1048576;
        break;
      }
    }
    console.log(JSON.stringify({ seen, grewMiB }));
  `;
  const output = await denoCommand({
    args: ["eval", "--no-config", "--v8-flags=--expose-gc", code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  const { seen, grewMiB } = JSON.parse(new TextDecoder().decode(output.stdout));
  assert.equal(seen, 300000);
  assert.ok(grewMiB < 5, `the heap grew by ${grewMiB.toFixed(1)} MiB over 280,000 values`);
});

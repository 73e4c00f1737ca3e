import assert from "node:assert/strict";
import {
  CancelPoll,
  followToEnd,
  type LiveUnit,
  ownerQuery,
  requireVisible,
  stopLive,
  writeUntilTaken,
} from "../src/lifecycle/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import type { RunState } from "../src/ledger/mod.ts";

function unit(state: RunState): LiveUnit & { status: { state: RunState } } {
  const controller = new AbortController();
  // An ended unit has settled; a live one settles once stopped.
  const done = state !== "running"
    ? Promise.resolve()
    : new Promise<void>((resolve) => controller.signal.addEventListener("abort", () => resolve()));
  return { status: { state }, controller, done };
}

Deno.test("an end the ledger refused is written again until it takes it", async () => {
  let attempts = 0;
  await writeUntilTaken(() => {
    attempts++;
    return attempts < 3 ? Promise.reject(new Error("disk full")) : Promise.resolve();
  }, { signal: new AbortController().signal, minMs: 1, maxMs: 2 });
  assert.deepEqual(attempts, 3);
});

Deno.test("a closing host stops writing an end again and gets the write's error", async () => {
  const closed = new AbortController();
  let attempts = 0;
  const writing = writeUntilTaken(() => {
    if (++attempts === 2) closed.abort();
    return Promise.reject(new Error(`refused ${attempts}`));
  }, { signal: closed.signal, minMs: 1 });
  await assert.rejects(writing, { message: "refused 2" });
});

Deno.test("closing stops only the units that have not ended, and waits for them", async () => {
  const running = unit("running");
  const ended = unit("succeeded");
  ended.controller.signal.addEventListener("abort", () => {
    throw new Error("an ended unit was stopped");
  });
  const reason = new Error("the host is shutting down");
  await stopLive([running, ended], reason);
  assert.deepEqual(running.controller.signal.reason, reason);
  assert.deepEqual(ended.controller.signal.aborted, false);
});

Deno.test("the cancel poll stops the units another process cancelled, then stops itself", async () => {
  const cancelled = unit("running");
  const other = unit("running");
  const live = new Map([["a", cancelled], ["b", other]]);
  const asked: string[][] = [];
  const poll = new CancelPoll({
    live,
    asked: (ids) => {
      asked.push(ids);
      return Promise.resolve(ids.filter((id) => id === "a"));
    },
    reason: () => new Error("cancelled elsewhere"),
    pollMs: 5,
  });
  poll.start();
  await cancelled.done;
  assert.deepEqual((cancelled.controller.signal.reason as Error).message, "cancelled elsewhere");
  assert.deepEqual(other.controller.signal.aborted, false);
  other.status.state = "succeeded";
  const seen = asked.length;
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.ok(asked.length <= seen + 1, "the poll went on with no live unit");
  poll.stop();
});

Deno.test("a cancel poll slower than its period never overlaps itself: looks do not pile up", async () => {
  const live = new Map([["a", unit("running")]]);
  let open = 0;
  let most = 0;
  let looks = 0;
  const poll = new CancelPoll({
    live,
    asked: async () => {
      looks++;
      most = Math.max(most, ++open);
      // Ten periods: a ledger slowed by hundreds of live runs.
      await new Promise((resolve) => setTimeout(resolve, 50));
      open--;
      return [];
    },
    reason: () => new Error("cancelled elsewhere"),
    pollMs: 5,
  });
  poll.start();
  await new Promise((resolve) => setTimeout(resolve, 180));
  poll.stop();
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(most, 1);
  assert.ok(looks >= 2, `looks: ${looks}`);
});

Deno.test("a listing's query names the caller's owner and drops options left undefined", () => {
  assert.deepEqual(ownerQuery({ owner: "ann" }, { limit: 5, before: undefined }), {
    owner: "ann",
    limit: 5,
  });
  assert.deepEqual(ownerQuery({ owner: "root", admin: true }, { limit: undefined }), {});
});

Deno.test("a record the caller may not see is not_found, naming the bounded id", () => {
  assert.deepEqual(requireVisible({ x: 1 }, { kind: "run", id: "r-1", action: "cancel" }), {
    x: 1,
  });
  assert.throws(
    () => requireVisible(undefined, { kind: "task", id: "t-x", action: "cancel" }),
    (error) =>
      error instanceof SvcError && error.code === "not_found" &&
      error.message === "Cannot cancel task 't-x': no such task",
  );
});

Deno.test("a wait stopped by its signal is unavailable; a feed that ends is the end", async () => {
  async function* feed(): AsyncGenerator<number> {
    yield 1;
  }
  await followToEnd(feed(), { what: "run 'r-1'" });
  const stopped = new AbortController();
  stopped.abort();
  await assert.rejects(
    followToEnd(feed(), { what: "run 'r-1'", signal: stopped.signal }),
    (error) =>
      error instanceof SvcError && error.code === "unavailable" &&
      error.message === "Cannot wait for run 'r-1': the wait was stopped",
  );
});

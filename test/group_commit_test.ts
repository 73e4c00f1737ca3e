import assert from "node:assert/strict";
import { GroupCommit } from "../src/engine/group_commit.ts";

/** A commit function whose commits the test ends one by one. */
function controlledCommits() {
  const batches: string[][] = [];
  const finish: Array<() => void> = [];
  const commit = (items: string[]) => {
    batches.push(items);
    return new Promise<void>((resolve) => finish.push(resolve));
  };
  return { batches, finish, commit };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("a lone write commits at once, without waiting for a timer", async () => {
  const { batches, commit } = controlledCommits();
  const group = new GroupCommit(commit);
  void group.add("a");
  // One microtask later the commit has begun: no setTimeout stands between.
  await Promise.resolve();
  await Promise.resolve();
  assert.deepEqual(batches, [["a"]]);
});

Deno.test("writes that arrive during a commit share the next one, in order", async () => {
  const { batches, finish, commit } = controlledCommits();
  const group = new GroupCommit(commit);
  const first = group.add("a");
  await tick();
  assert.deepEqual(batches, [["a"]]);
  const later = [group.add("b"), group.add("c"), group.add("d")];
  await tick();
  // Still one commit in flight: b, c and d wait together.
  assert.deepEqual(batches, [["a"]]);
  finish[0]!();
  await first;
  await tick();
  assert.deepEqual(batches, [["a"], ["b", "c", "d"]]);
  finish[1]!();
  await Promise.all(later);
  assert.equal(batches.length, 2);
});

Deno.test("a write is acknowledged only once its own batch is committed, not before, not later", async () => {
  const { finish, commit } = controlledCommits();
  const group = new GroupCommit(commit);
  const seen: string[] = [];
  const first = group.add("a").then(() => seen.push("a"));
  await tick();
  const second = group.add("b").then(() => seen.push("b"));
  await tick();
  assert.deepEqual(seen, [], "nothing is acknowledged while its commit is in flight");
  finish[0]!();
  await first;
  await tick();
  // a is acknowledged as soon as its batch is done, while b's batch is still in flight.
  assert.deepEqual(seen, ["a"]);
  finish[1]!();
  await second;
  assert.deepEqual(seen, ["a", "b"]);
});

Deno.test("idle() waits for every write queued so far", async () => {
  const { finish, commit } = controlledCommits();
  const group = new GroupCommit(commit);
  await group.idle();
  void group.add("a");
  let idle = false;
  const waiting = group.idle().then(() => (idle = true));
  await tick();
  void group.add("b");
  finish[0]!();
  await tick();
  assert.equal(idle, false, "b is not committed yet");
  finish[1]!();
  await waiting;
  assert.equal(idle, true);
});

Deno.test("a batch whose commit fails rejects every write in it, and later batches still commit", async () => {
  let calls = 0;
  const group = new GroupCommit<string>((items) => {
    calls++;
    if (items.includes("bad")) return Promise.reject(new Error("disk full"));
    return Promise.resolve();
  });
  const first = group.add("bad");
  const second = group.add("with it");
  await assert.rejects(first, /disk full/);
  await assert.rejects(second, /disk full/, "a write of a failed batch is never acknowledged");
  await group.add("later");
  await group.idle();
  assert.equal(calls, 2);
});

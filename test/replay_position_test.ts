import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { createMicrovmBackend, createUnsafeLocalBackend } from "../src/isolation/mod.ts";
import type { JournalEntry } from "../src/ledger/mod.ts";
import { mergeReplay, positionKey, precedes } from "../src/engine/mod.ts";
import { countingDispatcher, LOCAL, scriptedProvider, tempDir, testManager } from "./helpers.ts";

/**
 * Two fan-outs side by side: a pipeline() over 8 items with two calling stages, and a parallel()
 * whose thunks each make two sequential calls; then one call after both joined.
 */
const FAN_OUTS = `
  const o = args?.options ?? {};
  const items = ["a", "b", "c", "d", "e", "f", "g", "h"];
  const [piped, pairs] = await parallel([
    () => pipeline(
      items,
      (x) => agent("draft " + x, o),
      (draft, x) => agent((args?.changed === x ? "rewrite " : "review ") + x + " / " + draft, o),
    ),
    () => parallel([0, 1, 2, 3].map((i) => async () => {
      const first = await agent("first " + i, o);
      return [first, await agent("second " + i + " / " + first, o)];
    })),
  ]);
  const summary = await agent("summarize", o);
  return { piped, pairs, summary };
`;

function byPosition(journal: JournalEntry[]): Map<string, JournalEntry> {
  return new Map(journal.map((entry) => [positionKey(entry.position ?? []), entry]));
}

Deno.test("every call is journaled at its logical position: fan-out index, pipeline item and stage, step on its branch", async () => {
  await using t = await testManager();
  const run = await t.manager.start({ script: FAN_OUTS }, LOCAL);
  await t.manager.wait(run.run_id, LOCAL);
  const journal = await t.manager.journal(run.run_id, LOCAL);
  const keys = new Set(journal.map((entry) => positionKey(entry.position ?? [])));
  const expected = [
    // Root step 0 is the outer parallel(); its branch 0 takes the pipeline() as its step 0.
    ...Array.from({ length: 8 }, (_, i) => [`0.0.0.${i}.0.0.0`, `0.0.0.${i}.1.0.0`]).flat(),
    // Its branch 1 takes the inner parallel() as step 0; each thunk makes steps 0 and 1.
    ...Array.from({ length: 4 }, (_, i) => [`0.1.0.${i}.0`, `0.1.0.${i}.1`]).flat(),
    "1",
  ];
  assert.deepEqual([...keys].sort(), expected.sort());
});

Deno.test("a resume replays every call of pipeline() and parallel() whatever order the calls finished in", async () => {
  // The original's drafts finish in reverse item order, so its review calls reach the host in
  // reverse: matching by arrival order would replay almost none of them.
  const provider = scriptedProvider("api", (prompt) => {
    const item = /^draft (\w)$/.exec(prompt)?.[1];
    const delayMs = item === undefined ? 0 : (8 - "abcdefgh".indexOf(item)) * 15;
    return { output: `answer to ${prompt}`, delayMs };
  });
  await using t = await testManager({ dispatcher: createDispatcher({ providers: [provider] }) });
  const request = { script: FAN_OUTS, concurrency: 16, args: { options: { provider: "api" } } };
  const first = await t.manager.start(request, LOCAL);
  const original = await t.manager.wait(first.run_id, LOCAL);
  assert.equal(original.state, "succeeded");
  const calls = provider.calls;
  assert.equal(calls, 25);
  const arrival = (await t.manager.journal(first.run_id, LOCAL))
    .filter((entry) => entry.position?.length === 7 && entry.position[4] === 1)
    .map((entry) => entry.position![3]);
  assert.deepEqual(arrival, [7, 6, 5, 4, 3, 2, 1, 0], "the reviews arrived in reverse");

  const second = await t.manager.start({ ...request, resume_from: first.run_id }, LOCAL);
  const resumed = await t.manager.wait(second.run_id, LOCAL);
  assert.equal(provider.calls, calls, "no call ran again");
  assert.deepEqual([resumed.journal.replayed, resumed.journal.live], [25, 0]);
  assert.deepEqual(resumed.result, original.result);
});

Deno.test("under fake jitter a resumed run returns exactly what the original returned, call for call", async () => {
  const dispatcher = countingDispatcher({ fakeJitterMs: 12 });
  await using t = await testManager({ dispatcher });
  const first = await t.manager.start({ script: FAN_OUTS, concurrency: 16 }, LOCAL);
  const original = await t.manager.wait(first.run_id, LOCAL);
  for (let round = 0; round < 2; round++) {
    const again = await t.manager.start(
      { script: FAN_OUTS, concurrency: 16, resume_from: first.run_id },
      LOCAL,
    );
    const resumed = await t.manager.wait(again.run_id, LOCAL);
    assert.equal(dispatcher.count(), 25);
    assert.deepEqual([resumed.journal.replayed, resumed.journal.live], [25, 0]);
    assert.deepEqual(resumed.result, original.result);
    const before = byPosition(await t.manager.journal(first.run_id, LOCAL));
    const after = byPosition(await t.manager.journal(again.run_id, LOCAL));
    assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort());
    for (const [key, entry] of after) {
      assert.deepEqual(entry.result, before.get(key)!.result, `call ${key}`);
      assert.equal(entry.replayed_from, first.run_id);
    }
  }
});

Deno.test("changing one item's second-stage prompt re-runs that call and what comes after the join, nothing else", async () => {
  const dispatcher = countingDispatcher({ fakeJitterMs: 8 });
  await using t = await testManager({ dispatcher });
  const first = await t.manager.start({ script: FAN_OUTS, concurrency: 16 }, LOCAL);
  await t.manager.wait(first.run_id, LOCAL);
  const second = await t.manager.start({
    script: FAN_OUTS,
    concurrency: 16,
    args: { changed: "c" },
    resume_from: first.run_id,
  }, LOCAL);
  const resumed = await t.manager.wait(second.run_id, LOCAL);
  assert.equal(resumed.state, "succeeded");
  assert.equal(dispatcher.count(), 25 + 2);
  const live = (await t.manager.journal(second.run_id, LOCAL))
    .filter((entry) => entry.outcome === "live")
    .map((entry) => positionKey(entry.position ?? []));
  // Item c (index 2), stage 1; and the summary after everything joined.
  assert.deepEqual(live.sort(), ["0.0.0.2.1.0.0", "1"]);
  assert.deepEqual([resumed.journal.replayed, resumed.journal.live], [23, 2]);
  const piped = (resumed.result as { piped: string[] }).piped;
  assert.match(piped[2]!, /rewrite c/);
  assert.match(piped[3]!, /review d/);
});

Deno.test("a resume of a resumed run still replays what the middle run answered without recording", () => {
  const entry = (
    seq: number,
    position: number[],
    outcome: JournalEntry["outcome"],
  ): JournalEntry => ({
    seq,
    position,
    hash: `h${positionKey(position)}`,
    label: null,
    outcome,
    ...(outcome === "failed" ? {} : { result: `v${positionKey(position)}` }),
    provider: "fake",
    model: "fake",
    usage: { input_tokens: 0, output_tokens: 0 },
    cost_usd: 0,
    attempts: 1,
    started_at: "",
    ended_at: "",
    duration_ms: 0,
  });
  // Run A: three root calls and a fan-out of two branches of two calls.
  const a = ["0", "1", "2", "3.0.0", "3.0.1", "3.1.0", "3.1.1", "4"].map((key, i) =>
    entry(i + 1, key.split(".").map(Number), "live")
  );
  const older = mergeReplay("run_a", a, []);
  // Run B replayed [0] and recorded it, replayed [1] without recording (killed), and ran
  // branch 1's second call live (it differed there).
  const b = [entry(1, [0], "replayed"), entry(2, [3, 1, 1], "live")];
  b[0]!.replayed_from = "run_a";
  const merged = mergeReplay("run_b", b, older);
  const keys = merged.map((c) => `${positionKey(c.entry.position!)}<${c.from}`).sort();
  assert.deepEqual(keys, [
    "0<run_a", // B's own record of the replay, crediting A.
    "1<run_a", // Never recorded by B: A's still counts.
    "2<run_a",
    "3.0.0<run_a",
    "3.0.1<run_a", // Branch 0 is a sibling of B's difference: untouched.
    "3.1.0<run_a", // Earlier on the branch that differed.
    "3.1.1<run_b", // B's live value.
    // [4] comes after the fan-out that differed: B ran it live or never got there.
  ]);
  // The logical order behind it: steps at even depths, branches at odd ones.
  assert.ok(precedes([3, 1, 1], [4]));
  assert.ok(precedes([2], [3, 0, 0]));
  assert.ok(!precedes([3, 1, 1], [3, 0, 1]));
  assert.ok(!precedes([3, 1, 0], [3, 0, 5]));
  assert.ok(precedes([3, 1, 0], [3, 1, 1]));
  assert.ok(!precedes([4], [3, 1, 1]));
});

Deno.test("a guest's claims of replays it was not offered are refused and recorded as security events", async () => {
  await using dir = await tempDir();
  const guestDir = new URL("../guest/", import.meta.url).pathname;
  await Deno.mkdir(`${dir.path}/guest`);
  for (const entry of Deno.readDirSync(guestDir)) {
    await Deno.copyFile(`${guestDir}${entry.name}`, `${dir.path}/guest/${entry.name}`);
  }
  const forged = await Deno.readTextFile(
    new URL("./fixtures/guest/forged_replay.js", import.meta.url),
  );
  await Deno.writeTextFile(
    `${dir.path}/guest/forged_replay.js`,
    forged.replace("../../../guest/channel.js", "./channel.js"),
  );
  await using plain = await testManager();
  const source = await plain.manager.start({ script: `return await agent("one");` }, LOCAL);
  await plain.manager.wait(source.run_id, LOCAL);
  await using t = await testManager({
    home: plain.home,
    isolation: {
      "unsafe-local": createUnsafeLocalBackend({
        bootstrapPath: `${dir.path}/guest/forged_replay.js`,
      }),
      microvm: createMicrovmBackend(),
    },
  });
  const run = await t.manager.start({
    script: `return await agent("one");`,
    resume_from: source.run_id,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.result, "forged");
  assert.deepEqual(status.security_events.map((e) => e.kind), [
    "malformed_frame",
    "malformed_frame",
    "malformed_frame",
    "malformed_frame",
  ]);
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => [e.position, e.outcome]), [[[0], "replayed"]]);
  assert.equal(status.journal.replayed, 1);
});

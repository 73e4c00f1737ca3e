/**
 * The streams service in process, without HTTP: opening a stream takes one of the owner's
 * stream slots and every way a stream ends gives it back; a feed opens only for a caller who
 * may see its run or task, and only then takes a slot.
 */
import assert from "node:assert/strict";
import { type Config, defaultConfig } from "../src/config/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { type Caller, type GeneralItem, openServices, type Services } from "../src/services/mod.ts";
import { tempDir } from "./helpers.ts";

const ALICE: Caller = { owner: "alice", remote: true };
const BOB: Caller = { owner: "bob", remote: true };

/** Services over a temp home whose remote owners may hold one open stream each. */
async function oneStreamEach() {
  const home = await tempDir("svc-streams-");
  const base = defaultConfig();
  const config: Config = { ...base, admission: { ...base.admission, owner_event_streams: 1 } };
  const services = await openServices({
    home: home.path,
    config,
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  });
  return {
    services,
    async [Symbol.asyncDispose]() {
      await services.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

/** How many streams the caller's owner holds open. */
async function used(services: Services, caller: Caller): Promise<number> {
  return (await services.admission.snapshot(caller)).owner_streams.used;
}

/** Whether `open` is refused for the stream cap. */
function refused(open: () => unknown): boolean {
  try {
    open();
    return false;
  } catch (error) {
    if (error instanceof SvcError && error.code === "rate_limited") return true;
    throw error;
  }
}

Deno.test("a general stream holds its owner's slot until its iteration ends, or until it is released unread", async () => {
  await using t = await oneStreamEach();
  const { streams } = t.services;
  const first = streams.general(ALICE, { fromNow: true });
  assert.equal(await used(t.services, ALICE), 1);
  assert.ok(refused(() => streams.general(ALICE)), "a second stream is past the cap");
  const other = streams.general(BOB);
  assert.equal(await used(t.services, BOB), 1, "owners are counted apart");
  other.release();

  const stop = new AbortController();
  const seen: GeneralItem[] = [];
  for await (const item of first.follow(stop.signal)) {
    seen.push(item);
    stop.abort();
  }
  assert.deepEqual(seen.map((item) => item.kind), ["ready"]);
  assert.deepEqual(seen[0]!.at, { activity: -1, board: -1 });
  assert.equal(await used(t.services, ALICE), 0, "the iteration's end gave the slot back");

  const unread = streams.general(ALICE);
  unread.release();
  unread.release();
  assert.equal(await used(t.services, ALICE), 0, "a release gives the slot back once");
  assert.equal(await used(t.services, BOB), 0);
});

Deno.test("a feed opens only for a caller who may see its run or task, and then takes a slot until it ends", async () => {
  await using t = await oneStreamEach();
  const { streams, runs } = t.services;
  const run = await runs.start({ script: `return 1;`, fake_dispatch: true }, ALICE);
  await runs.wait(run.run_id, ALICE);

  for (
    const open of [
      () => streams.runFeed(BOB, run.run_id),
      () => streams.taskFeed(ALICE, "task_none"),
      () => streams.taskFeed(ALICE, run.run_id),
    ]
  ) {
    await assert.rejects(open, (error) => error instanceof SvcError && error.code === "not_found");
  }
  assert.equal(await used(t.services, BOB), 0, "a refused feed takes no slot");

  const opening = await streams.runFeed(ALICE, run.run_id);
  assert.ok(!opening.ended);
  assert.equal(opening.reset, false);
  assert.equal(await used(t.services, ALICE), 1);
  const seqs: number[] = [];
  for await (const item of opening.items.follow(new AbortController().signal)) {
    seqs.push(item.seq);
  }
  assert.ok(seqs.length > 0 && seqs.every((seq, index) => seq === index));
  assert.equal(await used(t.services, ALICE), 0, "a feed that ended gave its slot back");

  const last = seqs.at(-1)!;
  assert.deepEqual(await streams.runFeed(ALICE, run.run_id, { after: last }), { ended: true });
  const again = await streams.runFeed(ALICE, run.run_id, { after: "invalid" });
  assert.ok(!again.ended && again.reset);
  again.items.release();
  assert.equal(await used(t.services, ALICE), 0, "the stream that ended takes no slot");
});

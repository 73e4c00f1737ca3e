import assert from "node:assert/strict";
import { SvcError } from "../src/errors/mod.ts";
import type { Caller } from "../src/ledger/mod.ts";
import type { CardSource, MemoryCard, MemorySearchRequest } from "../src/memory/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { ADMIN, tempDir } from "./helpers.ts";

const ALICE: Caller = { owner: "alice" };
const BOB: Caller = { owner: "bob" };

/** A board as the memory search sees one: cards by owner, pages of `limit`. */
class TestBoard implements CardSource {
  readonly cards: Array<MemoryCard & { owner: string }> = [];
  /** Cards it hands out whatever the caller, as a faulty source would. */
  readonly leaked: MemoryCard[] = [];

  list(caller: Caller, options: { limit: number; cursor?: string }) {
    const mine = this.cards.filter((card) => caller.admin || card.owner === caller.owner);
    const all = [...mine, ...this.leaked];
    const from = options.cursor === undefined ? 0 : Number(options.cursor);
    const cards = all.slice(from, from + options.limit);
    const next = from + options.limit < all.length ? String(from + options.limit) : null;
    return Promise.resolve({ cards, next_cursor: next });
  }
}

async function withServices(
  body: (services: Services, board: TestBoard) => Promise<void>,
  options: { indexTtlMs?: number } = {},
): Promise<void> {
  await using home = await tempDir("svc-home-");
  const board = new TestBoard();
  await using services = await openServices({
    home: home.path,
    memory: { cards: board, indexTtlMs: options.indexTtlMs ?? 0 },
  });
  await body(services, board);
}

async function runReturning(services: Services, caller: Caller, value: unknown): Promise<string> {
  const started = await services.runs.start({
    script: `export const meta = { name: "notes" };\nreturn ${JSON.stringify(value)};`,
    fake_dispatch: true,
  }, caller);
  const done = await services.runs.wait(started.run_id, caller);
  assert.equal(done.state, "succeeded");
  return started.run_id;
}

async function hits(services: Services, caller: Caller, request: MemorySearchRequest) {
  return (await services.memory.search(caller, request)).hits.map((hit) => [hit.kind, hit.id]);
}

Deno.test("memory search finds runs by their result, tasks by their prompt and cards by their log", async () => {
  await withServices(async (services, board) => {
    const runId = await runReturning(services, ALICE, {
      summary: "the flamingo parser handles nested quotes now",
    });
    const task = await services.tasks.start({
      prompt: "investigate the walrus outage",
      fake_dispatch: true,
    }, ALICE);
    await services.tasks.wait(task.task_id, ALICE);
    board.cards.push({
      issue_id: 7,
      owner: "alice",
      title: "Ship the release",
      log: [{ message: "pelican deployment done" }],
      updated_at: "2025-01-02T03:04:05.000Z",
    });
    const found = await services.memory.search(ALICE, { q: "flamingo" });
    assert.deepEqual(found.hits.map((h) => [h.kind, h.id, h.title]), [["run", runId, "notes"]]);
    assert.match(found.hits[0]!.snippet, /flamingo parser/);
    assert.ok(found.hits[0]!.score > 0);
    assert.deepEqual(await hits(services, ALICE, { q: "walrus" }), [["task", task.task_id]]);
    assert.deepEqual(await hits(services, ALICE, { q: "pelican" }), [["card", "7"]]);
    // Prefixes and small typos find them too.
    assert.deepEqual(await hits(services, ALICE, { q: "flamin" }), [["run", runId]]);
    assert.deepEqual(await hits(services, ALICE, { q: "flamingp" }), [["run", runId]]);
    assert.deepEqual(await hits(services, ALICE, { q: "okapi" }), []);
  });
});

Deno.test("memory search finds only the caller's own records; an administrator finds everyone's", async () => {
  await withServices(async (services, board) => {
    const mine = await runReturning(services, ALICE, "heron report for alice");
    const theirs = await runReturning(services, BOB, "heron report for bob");
    board.cards.push({
      issue_id: 1,
      owner: "bob",
      title: "heron card of bob",
      updated_at: "2025-01-01T00:00:00.000Z",
    });
    board.leaked.push({
      issue_id: 2,
      owner: "bob",
      title: "heron card a faulty board hands out",
      updated_at: "2025-01-01T00:00:00.000Z",
    });
    assert.deepEqual(await hits(services, ALICE, { q: "heron" }), [["run", mine]]);
    assert.deepEqual(
      (await hits(services, BOB, { q: "heron" })).sort(),
      [["card", "1"], ["card", "2"], ["run", theirs]].sort(),
    );
    assert.deepEqual(
      (await hits(services, ADMIN, { q: "heron" })).sort(),
      [["card", "1"], ["card", "2"], ["run", mine], ["run", theirs]].sort(),
    );
  });
});

Deno.test("memory search keeps to the kinds asked for and to the limit", async () => {
  await withServices(async (services, board) => {
    await runReturning(services, ALICE, "otter notes");
    const task = await services.tasks.start({ prompt: "otter task", fake_dispatch: true }, ALICE);
    await services.tasks.wait(task.task_id, ALICE);
    for (let i = 0; i < 5; i++) {
      board.cards.push({
        issue_id: i,
        owner: "alice",
        title: `otter card ${i}`,
        updated_at: "2025-01-01T00:00:00.000Z",
      });
    }
    assert.deepEqual(await hits(services, ALICE, { q: "otter", kinds: ["task"] }), [
      ["task", task.task_id],
    ]);
    assert.equal((await hits(services, ALICE, { q: "otter", kinds: ["card", "run"] })).length, 6);
    assert.equal((await hits(services, ALICE, { q: "otter", limit: 2 })).length, 2);
  });
});

Deno.test("a record's text is searched up to its first 8 KiB", async () => {
  await withServices(async (services) => {
    const early = await runReturning(services, ALICE, `lynx ${"filler ".repeat(5000)}`);
    await runReturning(services, ALICE, `${"filler ".repeat(5000)} ibex`);
    assert.deepEqual(await hits(services, ALICE, { q: "lynx" }), [["run", early]]);
    assert.deepEqual(await hits(services, ALICE, { q: "ibex" }), []);
  });
});

Deno.test("an owner's index is reused while it is fresh: a new record shows once it expires", async () => {
  await withServices(async (services) => {
    await runReturning(services, ALICE, "first bison");
    assert.equal((await hits(services, ALICE, { q: "bison" })).length, 1);
    await runReturning(services, ALICE, "second bison");
    assert.equal((await hits(services, ALICE, { q: "bison" })).length, 1, "the index was reused");
    // Another owner's search builds its own index, and does not refresh alice's.
    assert.deepEqual(await hits(services, BOB, { q: "bison" }), []);
    assert.equal((await hits(services, ALICE, { q: "bison" })).length, 1);
  }, { indexTtlMs: 10 * 60_000 });
  await withServices(async (services) => {
    await runReturning(services, ALICE, "first bison");
    assert.equal((await hits(services, ALICE, { q: "bison" })).length, 1);
    await runReturning(services, ALICE, "second bison");
    assert.equal((await hits(services, ALICE, { q: "bison" })).length, 2, "no reuse with TTL 0");
  }, { indexTtlMs: 0 });
});

Deno.test("empty, oversized and malformed queries are refused; odd characters are plain text", async () => {
  await withServices(async (services) => {
    await runReturning(services, ALICE, "a (a+)+$ pattern and [brackets]");
    const bad: unknown[] = [
      { q: "" },
      { q: "   " },
      { q: "x".repeat(257) },
      { q: 5 },
      { q: "ok", limit: 0 },
      { q: "ok", limit: 101 },
      { q: "ok", limit: 1.5 },
      { q: "ok", kinds: [] },
      { q: "ok", kinds: ["secrets"] },
      { q: "ok", owner: "bob" },
    ];
    for (const request of bad) {
      await assert.rejects(
        services.memory.search(ALICE, request as MemorySearchRequest),
        (error: unknown) =>
          error instanceof SvcError && error.code === "invalid_request" &&
          /^Cannot search memory: /.test(error.message),
        JSON.stringify(request),
      );
    }
    assert.equal((await hits(services, ALICE, { q: "(a+)+$ [brackets" })).length, 1);
    // The longest query allowed, of many words, is answered.
    const long = Array.from({ length: 64 }, (_, i) => `w${i}x`).join(" ").slice(0, 256);
    assert.deepEqual(await hits(services, ALICE, { q: long }), []);
    assert.deepEqual(await hits(services, ALICE, { q: "!!! ???" }), []);
  });
});

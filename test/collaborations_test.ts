import assert from "node:assert/strict";
import { CollaborationLog } from "../src/collaborations/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { type Caller, type Ledger, openLedger } from "../src/ledger/mod.ts";
import { ADMIN, tempDir } from "./helpers.ts";

const ALICE: Caller = { owner: "alice" };
const BOB: Caller = { owner: "bob" };

async function withLog(
  body: (log: CollaborationLog, ledger: Ledger, home: string) => Promise<void>,
): Promise<void> {
  await using home = await tempDir("svc-collab-");
  const ledger = await openLedger(home.path);
  try {
    await body(new CollaborationLog(ledger), ledger, home.path);
  } finally {
    ledger.close();
  }
}

async function refused(promise: Promise<unknown>, code: string, pattern?: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof SvcError, String(error));
    assert.equal(error.code, code);
    if (pattern) assert.match(error.message, pattern);
    return true;
  });
}

Deno.test("the collaboration log is empty until an exchange is recorded", async () => {
  await withLog(async (log) => {
    assert.deepEqual(await log.list(ALICE), { items: [], next_cursor: null });
  });
});

Deno.test("a recorded exchange is listed and read by its owner, and survives reopening the ledger", async () => {
  await using home = await tempDir("svc-collab-");
  let id: string;
  {
    const ledger = await openLedger(home.path);
    const log = new CollaborationLog(ledger);
    const record = await log.record({
      direction: "outbound",
      peer: "https://agents.example/.well-known/agent-card.json",
      skill: "review",
      summary: "asked for a review of the parser",
    }, ALICE);
    id = record.collaboration_id;
    assert.match(id, /^col_[0-9a-z]{18}$/);
    assert.equal(record.owner, "alice");
    assert.equal(record.state, "submitted");
    const updated = await log.update(id, { state: "completed", summary: "two findings" }, ALICE);
    assert.equal(updated.state, "completed");
    ledger.close();
  }
  const ledger = await openLedger(home.path);
  try {
    const log = new CollaborationLog(ledger);
    const read = await log.get(id, ALICE);
    assert.equal(read?.state, "completed");
    assert.equal(read?.summary, "two findings");
    assert.equal(read?.skill, "review");
    assert.deepEqual((await log.list(ALICE)).items.map((r) => r.collaboration_id), [id]);
  } finally {
    ledger.close();
  }
});

Deno.test("another owner neither lists, reads nor updates an exchange; an administrator sees all", async () => {
  await withLog(async (log) => {
    const mine = await log.record({ direction: "inbound", peer: "peer-a" }, ALICE);
    await new Promise((resolve) => setTimeout(resolve, 2));
    const theirs = await log.record({ direction: "inbound", peer: "peer-b" }, BOB);
    assert.deepEqual((await log.list(BOB)).items.map((r) => r.peer), ["peer-b"]);
    assert.equal(await log.get(mine.collaboration_id, BOB), undefined);
    await refused(log.update(mine.collaboration_id, { state: "failed" }, BOB), "not_found");
    assert.equal((await log.get(mine.collaboration_id, ALICE))?.state, "submitted");
    assert.deepEqual(
      (await log.list(ADMIN)).items.map((r) => r.collaboration_id),
      [theirs.collaboration_id, mine.collaboration_id],
    );
  });
});

Deno.test("collaborations list newest first, page by page with a cursor, without repeats", async () => {
  await withLog(async (log) => {
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      ids.push(
        (await log.record({ direction: "outbound", peer: `peer-${i}` }, ALICE))
          .collaboration_id,
      );
      // Ids order by their millisecond: space the records so that newest-first is defined.
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await log.record({ direction: "outbound", peer: "not alice's" }, BOB);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await log.list(ALICE, { limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((r) => r.collaboration_id));
      cursor = page.next_cursor ?? undefined;
      pages++;
    } while (cursor !== undefined);
    assert.equal(pages, 3);
    assert.deepEqual(seen, ids.toReversed());
  });
});

Deno.test("hostile ids, cursors and fields are refused before they reach the ledger", async () => {
  await withLog(async (log) => {
    assert.equal(await log.get("col_../../etc", ALICE), undefined);
    assert.equal(await log.get("x".repeat(10_000), ALICE), undefined);
    await refused(log.list(ALICE, { cursor: "col_\u0000" }), "invalid_request", /'cursor'/);
    await refused(log.list(ALICE, { limit: 0 }), "invalid_request", /'limit'/);
    await refused(
      log.record({ direction: "inbound", peer: "p".repeat(5000) }, ALICE),
      "invalid_request",
      /'peer'/,
    );
    await refused(
      log.record({ direction: "inbound", peer: "evil\u001b[2J" }, ALICE),
      "invalid_request",
      /'peer'/,
    );
    await refused(
      log.record({ direction: "sideways", peer: "p" } as never, ALICE),
      "invalid_request",
      /'direction'/,
    );
    await refused(
      log.record({ direction: "inbound", peer: "p", run_id: "run_x" }, ALICE),
      "invalid_request",
      /'run_id'/,
    );
    await refused(
      log.record({ direction: "inbound", peer: "p", owner: "bob" } as never, ALICE),
      "invalid_request",
      /unknown field 'owner'/,
    );
    assert.deepEqual((await log.list(ALICE)).items, []);
  });
});

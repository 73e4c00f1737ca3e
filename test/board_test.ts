import assert from "node:assert/strict";
import {
  type Board,
  type BoardChange,
  type BoardWriteResult,
  CARD_BYTES,
  LOG_LIMIT,
  openBoard,
} from "../src/board/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import type { Caller } from "../src/ledger/mod.ts";
import { BoardWriteRequestSchema } from "../src/schemas/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { ADMIN, denoCommand, fixture, LOCAL, ROOT, tempDir } from "./helpers.ts";

const ALICE: Caller = { owner: "alice" };
const BOB: Caller = { owner: "bob" };

/** A board in a temporary directory with a fixed clock; disposing closes and removes it. */
async function testBoard(
  options: { at?: string } = {},
): Promise<{ board: Board; dir: string } & AsyncDisposable> {
  const temp = await tempDir("svc-board-");
  const at = new Date(options.at ?? "2030-01-02T03:04:05.000Z");
  const board = await openBoard(temp.path, { clock: () => at });
  return {
    board,
    dir: temp.path,
    async [Symbol.asyncDispose]() {
      board.close();
      await temp[Symbol.asyncDispose]();
    },
  };
}

/** The error `promise` rejects with, which must be an SvcError. */
async function svcErrorOf(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof SvcError, `expected an SvcError, got ${error}`);
    return error;
  }
  assert.fail("expected the call to fail");
}

/** Every change recorded so far, as `caller` sees them. */
async function changesOf(board: Board, caller: Caller = ADMIN): Promise<BoardChange[]> {
  const out: BoardChange[] = [];
  for await (const change of board.changes(caller, { follow: false })) out.push(change);
  return out;
}

async function apply(
  board: Board,
  request: Record<string, unknown>,
  caller: Caller = LOCAL,
): Promise<BoardWriteResult> {
  return await board.write({ ...request, mode: "apply" }, caller);
}

/** A `deno run` of the board writer fixture, ready to write `count` new cards on a board. */
interface Writer {
  /** Lets it write. */
  go(): Promise<void>;
  /** The card numbers it got. */
  numbers(): Promise<string[]>;
}

/** Starts the board writer fixture on `dir` and waits until it has opened the board. */
async function startWriter(dir: string, count: number, owner = "local"): Promise<Writer> {
  const child = denoCommand({
    args: [
      "run",
      "--config",
      `${ROOT}/deno.json`,
      "--allow-read",
      "--allow-write",
      "--allow-env",
      fixture("board_writer.ts"),
      dir,
      String(count),
      owner,
    ],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let stdout = "";
  while (!stdout.includes("ready\n")) {
    const { value, done } = await lines.read();
    if (done) break;
    stdout += value;
  }
  const stderr = new Response(child.stderr).text();
  return {
    async go() {
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode("go\n"));
      await writer.close();
    },
    async numbers() {
      for (;;) {
        const { value, done } = await lines.read();
        if (done) break;
        stdout += value;
      }
      const status = await child.status;
      assert.equal(status.code, 0, await stderr);
      return JSON.parse(stdout.slice(stdout.indexOf("ready\n") + 6));
    },
  };
}

Deno.test("every action's dry run returns exactly what its apply then writes, and persists nothing", async () => {
  await using t = await testBoard();
  const steps: Array<Record<string, unknown>> = [
    {
      action: "new",
      title: "Fix the parser",
      project: "svc",
      priority: "high",
      desc: "It fails on\nnested input",
      labels: ["bug", "parser"],
      codename: "otter",
      next: "write a failing test",
      message: "found in review",
      by: "ann",
      evidence: { failing: ["a.test"], count: 2 },
    },
    { action: "take", issue_id: "1", by: "ben", message: "mine" },
    { action: "log", issue_id: "1", message: "halfway", next: "", evidence: [1, 2] },
    { action: "done", issue_id: "1", message: "merged", labels: [] },
    { action: "new", issue_id: "", title: "Try a faster hash" },
    { action: "drop", issue_id: "2", message: "not worth it" },
    { action: "cancel", issue_id: "2", project: "" },
  ];
  for (const step of steps) {
    const before = await t.board.list(ADMIN);
    const changesBefore = await changesOf(t.board);
    const dry = await t.board.write(step, LOCAL);
    assert.equal(dry.mode, "dry_run", "dry_run is the default mode");
    assert.equal(dry.applied, false);
    assert.deepEqual(await t.board.list(ADMIN), before, `${step.action}: a dry run writes no card`);
    assert.deepEqual(await changesOf(t.board), changesBefore, `${step.action}: nor a change`);

    const applied = await apply(t.board, step);
    assert.equal(applied.applied, true);
    assert.deepEqual(
      { ...applied, mode: "dry_run", applied: false },
      dry,
      `${step.action}: the dry run previewed exactly what apply wrote`,
    );
    assert.deepEqual(await t.board.get(applied.card.issue_id, LOCAL), applied.card);
    assert.deepEqual((await changesOf(t.board)).at(-1), applied.change);
  }

  const first = (await t.board.get("1", LOCAL))!;
  assert.equal(first.state, "done");
  assert.equal(first.owner, "local");
  assert.equal(first.by, "svc", "a write without `by` records the board's default actor");
  assert.deepEqual(first.labels, [], "an empty list clears the labels");
  assert.equal(first.next, undefined, "an empty `next` clears it");
  assert.deepEqual(first.evidence, [1, 2], "the card keeps the latest evidence");
  assert.equal(first.created_at, "2030-01-02T03:04:05.000Z");
  assert.deepEqual(first.log.map((e) => [e.action, e.by, e.message ?? null]), [
    ["new", "ann", "found in review"],
    ["take", "ben", "mine"],
    ["log", "svc", "halfway"],
    ["done", "svc", "merged"],
  ]);
  const second = (await t.board.get("2", LOCAL))!;
  assert.equal(second.state, "cancelled");
  assert.equal(second.project, undefined);
  assert.deepEqual(
    (await changesOf(t.board)).map((c) => [c.seq, c.action, c.issue_id, c.state]),
    [
      [0, "new", "1", "new"],
      [1, "take", "1", "taken"],
      [2, "log", "1", "taken"],
      [3, "done", "1", "done"],
      [4, "new", "2", "new"],
      [5, "drop", "2", "dropped"],
      [6, "cancel", "2", "cancelled"],
    ],
  );
});

Deno.test("a body holding board_dir is refused as forbidden before any other check, and writes nothing", async () => {
  await using t = await testBoard();
  for (
    const body of [
      { board_dir: "/tmp/elsewhere" },
      { action: "new", title: "x", mode: "apply", board_dir: null },
      { action: "nonsense", board_dir: 5, extra: true },
    ]
  ) {
    const error = await svcErrorOf(t.board.write(body, LOCAL));
    assert.equal(error.code, "forbidden");
    assert.equal(error.status, 403);
    assert.match(error.message, /board_dir/);
  }
  assert.deepEqual((await t.board.list(ADMIN)).cards, []);
  // The schema the HTTP layer validates with refuses the field too, and documents it.
  const parsed = BoardWriteRequestSchema.safeParse({ action: "new", title: "x", board_dir: "/" });
  assert.equal(parsed.success, false);
  assert.deepEqual(parsed.error?.issues[0]?.path, ["board_dir"]);
});

Deno.test("the transition table: each action from each state either moves the card or is a conflict", async () => {
  await using t = await testBoard();
  // A card in each state.
  const cardIn: Record<string, string> = {};
  const paths: Record<string, string[]> = {
    new: [],
    taken: ["take"],
    done: ["done"],
    dropped: ["drop"],
    cancelled: ["cancel"],
  };
  for (const [state, actions] of Object.entries(paths)) {
    const created = await apply(t.board, { action: "new", title: `a ${state} card` });
    for (const action of actions) {
      await apply(t.board, { action, issue_id: created.card.issue_id });
    }
    cardIn[state] = created.card.issue_id;
  }
  // Written out here rather than read from the code: null is a conflict.
  const expected: Record<string, Record<string, string | null>> = {
    take: { new: "taken", taken: "taken", done: null, dropped: "taken", cancelled: null },
    log: { new: "new", taken: "taken", done: "done", dropped: "dropped", cancelled: null },
    done: { new: "done", taken: "done", done: null, dropped: null, cancelled: null },
    drop: { new: "dropped", taken: "dropped", done: null, dropped: null, cancelled: null },
    cancel: {
      new: "cancelled",
      taken: "cancelled",
      done: null,
      dropped: "cancelled",
      cancelled: null,
    },
  };
  for (const [action, row] of Object.entries(expected)) {
    for (const [state, to] of Object.entries(row)) {
      const request = { action, issue_id: cardIn[state] };
      if (to === null) {
        const error = await svcErrorOf(t.board.write(request, LOCAL));
        assert.equal(error.code, "conflict", `${action} on a ${state} card`);
        assert.equal(error.status, 409);
        assert.match(error.message, new RegExp(`card ${cardIn[state]}: it is ${state}`));
        const applying = await svcErrorOf(apply(t.board, request));
        assert.equal(applying.code, "conflict", `${action} on a ${state} card, applied`);
      } else {
        const dry = await t.board.write(request, LOCAL);
        assert.equal(dry.card.state, to, `${action} on a ${state} card`);
      }
    }
  }
  // Nothing was applied by the refused writes.
  assert.equal((await changesOf(t.board)).length, 5 + 4);
});

Deno.test("unknown cards are not found; issue_ids of another shape are refused, and get finds nothing for them", async () => {
  await using t = await testBoard();
  await apply(t.board, { action: "new", title: "one" });
  const missing = await svcErrorOf(t.board.write({ action: "take", issue_id: "2" }, LOCAL));
  assert.equal(missing.code, "not_found");
  assert.equal(missing.status, 404);
  assert.equal(missing.message, "Cannot find card 2: no such card");
  for (const issueId of ["0", "01", "-1", "1.0", "abc", " 1", "1".repeat(16), "x".repeat(10_000)]) {
    const error = await svcErrorOf(t.board.write({ action: "log", issue_id: issueId }, LOCAL));
    assert.equal(error.code, "invalid_request", issueId.slice(0, 20));
    assert.match(error.message, /'issue_id'/);
    assert.ok(error.message.length < 200, "the message does not echo a hostile id");
    assert.equal(await t.board.get(issueId, LOCAL), undefined);
  }
  const noId = await svcErrorOf(t.board.write({ action: "done" }, LOCAL));
  assert.equal(noId.code, "invalid_request");
  assert.match(noId.message, /'issue_id' is required for done/);
  const idOnNew = await svcErrorOf(
    t.board.write({ action: "new", issue_id: "1", title: "x" }, LOCAL),
  );
  assert.equal(idOnNew.code, "invalid_request");
  assert.match(idOnNew.message, /'issue_id' must be empty for new/);
  const noTitle = await svcErrorOf(t.board.write({ action: "new" }, LOCAL));
  assert.match(noTitle.message, /'title' is required for new/);
});

Deno.test("an owner sees and writes only its own cards and changes; an administrator sees and writes all", async () => {
  await using t = await testBoard();
  const alices = await apply(t.board, { action: "new", title: "alice's" }, ALICE);
  await apply(t.board, { action: "new", title: "bob's" }, BOB);
  assert.equal(alices.card.owner, "alice");

  assert.equal(await t.board.get("1", BOB), undefined, "another owner's card is not there");
  const error = await svcErrorOf(t.board.write({ action: "take", issue_id: "1" }, BOB));
  assert.equal(error.code, "not_found");
  assert.equal(error.message, "Cannot find card 1: no such card", "as an unknown card answers");
  assert.deepEqual((await t.board.list(BOB)).cards.map((c) => c.title), ["bob's"]);
  assert.deepEqual((await t.board.list(ALICE)).cards.map((c) => c.title), ["alice's"]);
  assert.deepEqual((await changesOf(t.board, BOB)).map((c) => c.seq), [1]);

  const byAdmin = await apply(t.board, { action: "take", issue_id: "1" }, ADMIN);
  assert.equal(byAdmin.card.owner, "alice", "an administrator's write keeps the card's owner");
  assert.equal(byAdmin.change.owner, "alice", "and the owner's readers see the change");
  assert.deepEqual((await changesOf(t.board, ALICE)).map((c) => c.seq), [0, 2]);
  assert.deepEqual((await t.board.list(ADMIN)).cards.map((c) => c.issue_id), ["2", "1"]);
});

Deno.test("bad field types are refused as invalid_request naming the field", async () => {
  await using t = await testBoard();
  let deep: unknown = 1;
  for (let i = 0; i < 100; i++) deep = [deep];
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ action: "move" }, /'action'/],
    [{ action: 5 }, /'action'/],
    [{ action: "new", title: 5 }, /'title'/],
    [{ action: "new", title: "x", mode: "later" }, /'mode'/],
    [{ action: "new", title: "x", labels: "a,b" }, /'labels'/],
    [{ action: "new", title: "x", labels: [1] }, /'labels.0'/],
    [{ action: "new", title: "x", evidence: deep }, /'evidence' must be JSON nested/],
    [{ action: "new", title: "x", by: "" }, /'by'/],
    [{ action: "new", title: "   " }, /'title' must not be blank/],
    [{ action: "log", issue_id: 1 }, /'issue_id'/],
    [{ action: "new", title: "x", owner: "mallory" }, /unknown field 'owner'/],
  ];
  for (const [body, pattern] of cases) {
    const error = await svcErrorOf(t.board.write(body, LOCAL));
    assert.equal(error.code, "invalid_request", JSON.stringify(body).slice(0, 80));
    assert.equal(error.status, 400);
    assert.match(error.message, pattern);
  }
  for (const body of [null, "new", 7, []]) {
    assert.equal((await svcErrorOf(t.board.write(body, LOCAL))).code, "invalid_request");
  }
});

Deno.test("hostile values are bounded: lengths, labels, control characters, evidence and the whole card", async () => {
  await using t = await testBoard();
  const refused: Array<[Record<string, unknown>, RegExp]> = [
    [{ title: "t".repeat(201) }, /'title' must be at most 200 characters/],
    [{ title: "ok", desc: "d".repeat(20_001) }, /'desc' must be at most 20000/],
    [{ title: "ok", message: "m".repeat(4_001) }, /'message' must be at most 4000/],
    [{ title: "ok", next: "n".repeat(1_001) }, /'next' must be at most 1000/],
    [{ title: "ok", project: "p".repeat(101) }, /'project'/],
    [{ title: "ok", by: "b".repeat(129) }, /'by'/],
    [{ title: "ok", labels: Array.from({ length: 21 }, (_, i) => `l${i}`) }, /at most 20 labels/],
    [{ title: "ok", labels: ["l".repeat(51)] }, /'labels.0'/],
    [{ title: "ok", labels: ["a,b"] }, /'labels.0' must hold no comma/],
    [{ title: "ok", labels: [""] }, /'labels.0' must not be empty/],
    [{ title: "\x1b]0;owned\x07" }, /'title' must be one line without control characters/],
    [{ title: "two\nlines" }, /'title' must be one line/],
    [{ title: "ok", by: "a\u202eb" }, /'by' must be one line/],
    [{ title: "ok", codename: "\x9b31m" }, /'codename'/],
    [{ title: "ok", labels: ["\r"] }, /'labels.0'/],
    [{ title: "ok", desc: "clear\x1b[2J" }, /'desc' must hold no control characters/],
    [{ title: "ok", message: "\r overwrite" }, /'message'/],
    [{ title: "ok", evidence: "e".repeat(9_000) }, /'evidence' must take at most 8192 bytes/],
    [{ title: "ok", evidence: { n: Infinity } }, /'evidence' must be JSON/],
  ];
  for (const [fields, pattern] of refused) {
    const error = await svcErrorOf(apply(t.board, { action: "new", ...fields }));
    assert.equal(error.code, "invalid_request", pattern.source);
    assert.match(error.message, pattern);
  }
  // Descriptions and messages may span lines and hold tabs.
  const multiline = await apply(t.board, {
    action: "new",
    title: "ok",
    desc: "a\n\tb",
    message: "x\ny",
  });
  assert.equal(multiline.card.desc, "a\n\tb");
  // Each field within its limit, but the card as a whole too large for one KV value.
  const tooLarge = await svcErrorOf(apply(t.board, {
    action: "new",
    title: "big",
    desc: "€".repeat(20_000),
  }));
  assert.equal(tooLarge.code, "invalid_request");
  assert.match(tooLarge.message, /Cannot write card 2: its fields would take \d+ bytes/);
  assert.deepEqual((await t.board.list(ADMIN)).cards.map((c) => c.issue_id), ["1"]);
});

Deno.test("a card keeps its newest log entries within the count and size limits, and counts the dropped ones", async () => {
  await using t = await testBoard();
  await apply(t.board, { action: "new", title: "chatty" });
  for (let i = 0; i < LOG_LIMIT + 20; i++) {
    await apply(t.board, { action: "log", issue_id: "1", message: `note ${i}` });
  }
  const chatty = (await t.board.get("1", LOCAL))!;
  assert.equal(chatty.log.length, LOG_LIMIT);
  assert.equal(chatty.log_dropped, 21);
  assert.equal(chatty.log.at(-1)?.message, `note ${LOG_LIMIT + 19}`);

  await apply(t.board, { action: "new", title: "heavy", desc: "d".repeat(20_000) });
  const entry = { message: "€".repeat(4_000), next: "€".repeat(1_000) };
  for (let i = 0; i < 12; i++) {
    await apply(t.board, { action: "log", issue_id: "2", ...entry, evidence: "e".repeat(8_000) });
  }
  const heavy = (await t.board.get("2", LOCAL))!;
  const bytes = new TextEncoder().encode(JSON.stringify({ v: 1, card: heavy })).length;
  assert.ok(bytes <= CARD_BYTES, `the card takes ${bytes} bytes`);
  assert.ok(heavy.log.length >= 1 && heavy.log.length < 13);
  assert.equal(heavy.log.length + heavy.log_dropped, 13, "every entry is kept or counted");
  assert.equal(heavy.log.at(-1)?.message, entry.message, "the newest entry is kept");
});

Deno.test("twenty concurrent new cards in one process get distinct numbers and gapless changes", async () => {
  await using t = await testBoard();
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => apply(t.board, { action: "new", title: `card ${i}` })),
  );
  const numbers = results.map((r) => Number(r.card.issue_id)).sort((a, b) => a - b);
  assert.deepEqual(numbers, Array.from({ length: 20 }, (_, i) => i + 1));
  const seqs = results.map((r) => r.change.seq).sort((a, b) => a - b);
  assert.deepEqual(seqs, Array.from({ length: 20 }, (_, i) => i));
  assert.equal((await t.board.list(LOCAL)).cards.length, 20);
});

Deno.test("new cards written by two other processes and this one at once all get distinct numbers", async () => {
  await using t = await testBoard();
  const first = await startWriter(t.dir, 15);
  const second = await startWriter(t.dir, 15);
  await Promise.all([first.go(), second.go()]);
  const own = Promise.all(
    Array.from({ length: 15 }, (_, i) => apply(t.board, { action: "new", title: `here ${i}` })),
  );
  const numbers = [
    ...await first.numbers(),
    ...await second.numbers(),
    ...(await own).map((r) => r.card.issue_id),
  ].map(Number).sort((a, b) => a - b);
  assert.deepEqual(numbers, Array.from({ length: 45 }, (_, i) => i + 1));
  const changes = await changesOf(t.board);
  assert.deepEqual(changes.map((c) => c.seq), Array.from({ length: 45 }, (_, i) => i));
  assert.deepEqual(
    changes.map((c) => Number(c.issue_id)).sort((a, b) => a - b),
    numbers,
    "one change per card",
  );
});

Deno.test("changes replay after a position, follow this process's and another process's writes, and end on abort", async () => {
  await using t = await testBoard();
  await apply(t.board, { action: "new", title: "zero" });
  await apply(t.board, { action: "new", title: "one" });
  await apply(t.board, { action: "new", title: "theirs" }, ALICE);

  const controller = new AbortController();
  const seen: BoardChange[] = [];
  let wroteHere = false;
  const other = await startWriter(t.dir, 2);
  for await (const change of t.board.changes(LOCAL, { after: 0, signal: controller.signal })) {
    seen.push(change);
    if (change.seq === 1 && !wroteHere) {
      // Replayed; now a write of this process must wake the follower.
      wroteHere = true;
      await apply(t.board, { action: "take", issue_id: "1" });
    } else if (change.seq === 3) {
      // Live; now another process's writes must be seen through the poll.
      await other.go();
    } else if (seen.length === 4) {
      controller.abort();
    }
  }
  assert.deepEqual(await other.numbers(), ["4", "5"]);
  assert.deepEqual(seen.map((c) => [c.seq, c.action, c.owner]), [
    [1, "new", "local"],
    [3, "take", "local"],
    [4, "new", "local"],
    [5, "new", "local"],
  ], "the replay starts after `after` and skips other owners' changes");

  const error = await svcErrorOf(t.board.changes(LOCAL, { after: -2 }).next());
  assert.equal(error.code, "invalid_request");
});

Deno.test("change sequence numbers and cards survive closing and reopening the board", async () => {
  await using temp = await tempDir("svc-board-");
  const board = await openBoard(temp.path);
  await board.write({ action: "new", title: "kept", mode: "apply" }, LOCAL);
  await board.write({ action: "take", issue_id: "1", mode: "apply" }, LOCAL);
  const before = await changesOf(board);
  board.close();
  const reopened = await openBoard(temp.path);
  try {
    assert.deepEqual(await changesOf(reopened), before);
    const next = await reopened.write({ action: "new", title: "later", mode: "apply" }, LOCAL);
    assert.equal(next.card.issue_id, "2");
    assert.equal(next.change.seq, 2);
  } finally {
    reopened.close();
  }
});

Deno.test("a follower ends when the board closes, and a closed board refuses writes", async () => {
  await using temp = await tempDir("svc-board-");
  const board = await openBoard(temp.path);
  let sawFirst!: () => void;
  const first = new Promise<void>((resolve) => sawFirst = resolve);
  const follower = (async () => {
    const out: BoardChange[] = [];
    for await (const change of board.changes(LOCAL)) {
      out.push(change);
      sawFirst();
    }
    return out;
  })();
  await board.write({ action: "new", title: "x", mode: "apply" }, LOCAL);
  await first;
  board.close();
  assert.deepEqual((await follower).map((c) => c.seq), [0]);
  const closed = await svcErrorOf(
    board.write({ action: "new", title: "late", mode: "apply" }, LOCAL),
  );
  assert.equal(closed.code, "unavailable");
});

Deno.test("list pages newest first with an opaque cursor, filters by state, and refuses bad limits and cursors", async () => {
  await using t = await testBoard();
  for (let i = 1; i <= 7; i++) await apply(t.board, { action: "new", title: `card ${i}` });
  await apply(t.board, { action: "new", title: "not mine" }, BOB);
  await apply(t.board, { action: "done", issue_id: "2" });
  await apply(t.board, { action: "done", issue_id: "5" });

  const titles: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await t.board.list(LOCAL, { limit: 3, ...(cursor ? { cursor } : {}) });
    assert.ok(page.cards.length <= 3);
    titles.push(...page.cards.map((c) => c.issue_id));
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  assert.deepEqual(titles, ["7", "6", "5", "4", "3", "2", "1"]);

  const done = await t.board.list(LOCAL, { state: "done", limit: 1 });
  assert.deepEqual(done.cards.map((c) => c.issue_id), ["5"]);
  const rest = await t.board.list(LOCAL, { state: "done", cursor: done.next_cursor! });
  assert.deepEqual(rest.cards.map((c) => c.issue_id), ["2"]);
  assert.equal(rest.next_cursor, null);
  assert.equal((await t.board.list(LOCAL)).cards.length, 7, "default limit covers them all");

  for (const limit of [0, 501, 1.5, NaN]) {
    assert.equal((await svcErrorOf(t.board.list(LOCAL, { limit }))).code, "invalid_request");
  }
  for (const bad of ["", "7", "c0", "c-1", "cabc", "c" + "9".repeat(40), "c7\n"]) {
    const error = await svcErrorOf(t.board.list(LOCAL, { cursor: bad }));
    assert.equal(error.code, "invalid_request");
    assert.match(error.message, /'cursor'/);
  }
  const badState = await svcErrorOf(
    t.board.list(LOCAL, { state: "lost" as unknown as "done" }),
  );
  assert.equal(badState.code, "invalid_request");
});

Deno.test("the services open the board in the board directory option, else SVC_DASHBOARD_BOARD_DIR, else <home>/board", async () => {
  await using home = await tempDir();
  await using elsewhere = await tempDir("svc-board-");
  {
    await using services = await openServices({ home: home.path, boardDir: elsewhere.path });
    assert.equal(services.board.dir, elsewhere.path);
    await services.board.write({ action: "new", title: "x", mode: "apply" }, LOCAL);
  }
  await Deno.stat(`${elsewhere.path}/board.kv`);
  {
    await using services = await openServices({ home: home.path });
    assert.equal(services.board.dir, `${home.path}/board`);
    assert.equal(await services.board.get("1", LOCAL), undefined, "another board");
  }
  const previous = Deno.env.get("SVC_DASHBOARD_BOARD_DIR");
  Deno.env.set("SVC_DASHBOARD_BOARD_DIR", elsewhere.path);
  try {
    await using services = await openServices({ home: home.path });
    assert.equal(services.board.dir, elsewhere.path);
    assert.equal((await services.board.get("1", LOCAL))?.title, "x");
  } finally {
    if (previous === undefined) Deno.env.delete("SVC_DASHBOARD_BOARD_DIR");
    else Deno.env.set("SVC_DASHBOARD_BOARD_DIR", previous);
  }
});

import assert from "node:assert/strict";
import { runCli, tempDir } from "./helpers.ts";

Deno.test("svc board write is a dry run unless --apply; list and show read what was applied", async () => {
  await using home = await tempDir();
  const opts = { home: home.path };
  const dry = await runCli(
    ["board", "write", "--action", "new", "--title", "Ship it", "--labels", "a, b,,c"],
    opts,
  );
  assert.equal(dry.code, 0, dry.stderr);
  const preview = JSON.parse(dry.stdout);
  assert.equal(preview.mode, "dry_run");
  assert.equal(preview.applied, false);
  assert.equal(preview.card.issue_id, "1");
  assert.deepEqual(preview.card.labels, ["a", "b", "c"]);
  const empty = await runCli(["board", "list", "--json"], opts);
  assert.deepEqual(JSON.parse(empty.stdout).cards, [], "the dry run wrote nothing");

  const applied = await runCli([
    "board",
    "write",
    "--action",
    "new",
    "--title",
    "Ship it",
    "--project",
    "svc",
    "--evidence",
    '{"tests":12}',
    "--by",
    "ann",
    "--apply",
  ], opts);
  assert.equal(applied.code, 0, applied.stderr);
  const result = JSON.parse(applied.stdout);
  assert.equal(result.applied, true);
  assert.equal(result.card.owner, "local", "the command line acts as the owner local");
  assert.deepEqual(result.card.evidence, { tests: 12 });
  assert.equal(result.change.seq, 0);

  const take = await runCli(
    ["board", "write", "--action", "take", "--issue-id", "1", "--message", "on it", "--apply"],
    opts,
  );
  assert.equal(take.code, 0, take.stderr);

  const table = await runCli(["board", "list"], opts);
  assert.equal(table.code, 0, table.stderr);
  const [header, row] = table.stdout.trimEnd().split("\n");
  assert.match(header!, /^ID\s+STATE\s+TITLE\s+PROJECT/);
  assert.match(row!, /^\s*1\s+taken\s+Ship it\s+svc/);
  const taken = await runCli(["board", "list", "--state", "taken", "--json"], opts);
  assert.deepEqual(JSON.parse(taken.stdout).cards.map((c: { title: string }) => c.title), [
    "Ship it",
  ]);

  const shown = await runCli(["board", "show", "1"], opts);
  assert.equal(shown.code, 0, shown.stderr);
  const card = JSON.parse(shown.stdout);
  assert.equal(card.state, "taken");
  assert.deepEqual(card.log.map((e: { action: string }) => e.action), ["new", "take"]);
});

Deno.test("svc board errors exit by their code: unknown card 3, refused transition 4, bad request 2", async () => {
  await using home = await tempDir();
  const opts = { home: home.path };
  const missing = await runCli(["board", "show", "9"], opts);
  assert.equal(missing.code, 3);
  assert.match(missing.stderr, /Cannot find card "9": no such card/);
  const unknown = await runCli(["board", "write", "--action", "done", "--issue-id", "9"], opts);
  assert.equal(unknown.code, 3);

  await runCli(["board", "write", "--action", "new", "--title", "x", "--apply"], opts);
  await runCli(["board", "write", "--action", "drop", "--issue-id", "1", "--apply"], opts);
  const conflict = await runCli(["board", "write", "--action", "done", "--issue-id", "1"], opts);
  assert.equal(conflict.code, 4);
  assert.match(conflict.stderr, /Cannot finish card 1: it is dropped/);

  const noTitle = await runCli(["board", "write", "--action", "new"], opts);
  assert.equal(noTitle.code, 2);
  assert.match(noTitle.stderr, /'title' is required for new/);
  const badEvidence = await runCli(
    ["board", "write", "--action", "new", "--title", "x", "--evidence", "{nope"],
    opts,
  );
  assert.equal(badEvidence.code, 2);
  assert.match(badEvidence.stderr, /--evidence: it must be JSON/);
  const badAction = await runCli(["board", "write", "--action", "move"], opts);
  assert.equal(badAction.code, 2);
  const badCursor = await runCli(["board", "list", "--cursor", "zzz"], opts);
  assert.equal(badCursor.code, 2);
  assert.match(badCursor.stderr, /'cursor'/);

  // A hostile title never reaches the terminal: refused, and the message carries no escape.
  const hostile = await runCli(
    ["board", "write", "--action", "new", "--title", "\x1b]0;owned\x07", "--apply"],
    opts,
  );
  assert.equal(hostile.code, 2);
  assert.ok(!hostile.stderr.includes("\x1b"), "no escape sequence printed");
});

Deno.test("svc board acts as SVC_OWNER: another owner's cards are not found and not listed", async () => {
  await using home = await tempDir();
  const alice = { home: home.path, env: { SVC_OWNER: "alice" } };
  const made = await runCli(
    ["board", "write", "--action", "new", "--title", "alice's", "--apply"],
    alice,
  );
  assert.equal(JSON.parse(made.stdout).card.owner, "alice");
  const local = { home: home.path };
  assert.equal((await runCli(["board", "show", "1"], local)).code, 3);
  const listed = await runCli(["board", "list", "--json"], local);
  assert.deepEqual(JSON.parse(listed.stdout).cards, []);
  assert.equal((await runCli(["board", "show", "1"], alice)).code, 0);
});

Deno.test("concurrent svc board write --apply invocations get distinct card numbers, in SVC_DASHBOARD_BOARD_DIR", async () => {
  await using home = await tempDir();
  await using board = await tempDir("svc-board-");
  const opts = { home: home.path, env: { SVC_DASHBOARD_BOARD_DIR: board.path } };
  const results = await Promise.all(
    Array.from(
      { length: 3 },
      (_, i) =>
        runCli(["board", "write", "--action", "new", "--title", `card ${i}`, "--apply"], opts),
    ),
  );
  const numbers = results.map((r) => {
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout).card.issue_id;
  }).sort();
  assert.deepEqual(numbers, ["1", "2", "3"]);
  await Deno.stat(`${board.path}/board.kv`);
  await assert.rejects(Deno.stat(`${home.path}/board`), "nothing written under SVC_HOME/board");
});

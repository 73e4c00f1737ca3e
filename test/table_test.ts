import assert from "node:assert/strict";
import {
  clipCell,
  DEFAULT_CELL_WIDTH,
  displayWidth,
  formatAge,
  formatCost,
  renderTable,
  type TableColumn,
} from "../cli/table.ts";
import { runCli, tempDir } from "./helpers.ts";

interface Item {
  id: string;
  label: string;
  cost: number | null;
}

const COLUMNS: TableColumn<Item>[] = [
  { header: "ID", value: (i) => i.id },
  { header: "LABEL", value: (i) => i.label },
  { header: "COST", value: (i) => formatCost(i.cost), align: "right" },
];

/** No control character but the line's own end: nothing a terminal would act on. */
function assertInert(lines: string[]): void {
  for (const line of lines) {
    // deno-lint-ignore no-control-regex -- looking for control characters is the point
    assert.doesNotMatch(line, /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
  }
}

Deno.test("renderTable aligns columns under a header row, right-aligns numbers and leaves no trailing spaces", () => {
  const lines = renderTable(
    [
      { header: "ID", value: (i: Item) => i.id },
      { header: "COST", value: (i: Item) => formatCost(i.cost), align: "right" },
      { header: "LABEL", value: (i: Item) => i.label },
    ],
    [{ id: "task_1", label: "short", cost: 12.5 }, { id: "t2", label: "", cost: null }],
    { empty: "No tasks." },
  );
  assert.deepEqual(lines, [
    "ID        COST  LABEL",
    "task_1  $12.50  short",
    "t2           -",
  ]);
});

Deno.test("renderTable without rows prints one line, not an empty table", () => {
  assert.deepEqual(renderTable(COLUMNS, [], { empty: "No tasks." }), ["No tasks."]);
});

Deno.test("hostile cells cannot move the cursor, forge a row or push the other columns aside", () => {
  const rows: Item[] = [
    { id: "a", label: "\x1b]0;owned\x07title\x1b[2J", cost: 0 },
    { id: "b", label: "line one\nb  forged-row  $0.00\rover", cost: 0 },
    { id: "c", label: "x".repeat(100_000), cost: 1 },
    { id: "d", label: "\t\u202eexe \u2028 \x9b31m", cost: 0 },
    { id: "e", label: "宽字符".repeat(30), cost: 0 },
  ];
  const lines = renderTable(COLUMNS, rows, { empty: "none" });
  assert.equal(lines.length, rows.length + 1, "one line per row: a newline forges none");
  assertInert(lines);
  assert.match(lines[1]!, /\\e\]0;owned\\x07title\\e\[2J/, "escape sequences are shown, not run");
  assert.match(lines[2]!, /line one\\nb {2}forged-row {2}\$0\.00\\rover/);
  assert.match(lines[4]!, /^d +\\t\\u\{202e\}exe \\u\{2028\} \\x9b31m +\$0\.00$/);
  // Every row is as wide as the header: clipped cells keep the COST column in place.
  const width = displayWidth(lines[0]!);
  for (const line of lines.slice(1)) assert.equal(displayWidth(line), width, line);
  assert.ok(width < 2 + 2 + DEFAULT_CELL_WIDTH + 2 + 6, `the table is ${width} columns wide`);
  assert.match(lines[3]!, /^c +x{39}… {2}\$1\.00$/);
  assert.ok(lines[5]!.includes("…"), "wide characters are clipped by the columns they take");
});

Deno.test("clipCell cuts to the column width it is given and marks the cut", () => {
  assert.equal(clipCell("abcdef", 4), "abc…");
  assert.equal(clipCell("abcd", 4), "abcd");
  assert.equal(displayWidth(clipCell("界".repeat(10), 5)), 5);
  assert.equal(clipCell("\x1b[31m", 40), "\\e[31m");
  assert.equal(displayWidth("e\u0301"), 1, "a combining mark takes no column");
});

Deno.test("formatAge says how long ago in its largest whole unit", () => {
  const now = Date.parse("2026-01-10T12:00:00Z");
  const ago = (ms: number) => new Date(now - ms).toISOString();
  assert.equal(formatAge(ago(5_000), now), "5s");
  assert.equal(formatAge(ago(59_999), now), "59s");
  assert.equal(formatAge(ago(3 * 60_000 + 10_000), now), "3m");
  assert.equal(formatAge(ago(2 * 3_600_000 + 5), now), "2h");
  assert.equal(formatAge(ago(4 * 86_400_000 + 7_200_000), now), "4d");
  assert.equal(formatAge(ago(-60_000), now), "0s", "a clock ahead of ours is no negative age");
  assert.equal(formatAge("not a time", now), "-");
});

Deno.test("formatCost shows dollars and cents, less than a cent, and unknown", () => {
  assert.equal(formatCost(1.234), "$1.23");
  assert.equal(formatCost(0), "$0.00");
  assert.equal(formatCost(0.0004), "<$0.01");
  assert.equal(formatCost(null), "-");
  assert.equal(formatCost(Number.NaN), "-");
});

Deno.test("svc task list, session list, history and worktree list print tables by default and JSON with --json", async () => {
  await using home = await tempDir();
  const h = { home: home.path };
  const empty = await runCli(["task", "list"], h);
  assert.equal(empty.code, 0, empty.stderr);
  assert.equal(empty.stdout, "No tasks.\n");
  assert.equal((await runCli(["session", "list"], h)).stdout, "No sessions.\n");
  assert.equal((await runCli(["history"], h)).stdout, "No calls.\n");
  assert.equal((await runCli(["worktree", "list"], h)).stdout, "No stale worktrees.\n");

  const hostile = "evil\x1b]52;c;cGF5bG9hZA==\x07\nforged row\r" + "y".repeat(300);
  for (const label of ["plain", hostile]) {
    const done = await runCli(["dispatch", "hi", "--wait", "--fake-dispatch", "--label", label], h);
    assert.equal(done.code, 0, done.stderr);
  }
  // No label: the row shows `-` there, and the prompt, on one line, escaped and clipped.
  const prompt = "fix\nthe \x1b[2Jbuild\tplease " + "z".repeat(300);
  const bare = await runCli(["dispatch", prompt, "--wait", "--fake-dispatch"], h);
  assert.equal(bare.code, 0, bare.stderr);
  assert.equal((await runCli(["session", "new", "--name", "pair"], h)).code, 0);

  const tasks = await runCli(["task", "list"], h);
  assert.equal(tasks.code, 0, tasks.stderr);
  const lines = tasks.stdout.trimEnd().split("\n");
  assertInert(lines);
  assert.equal(lines.length, 4, tasks.stdout);
  assert.match(lines[0]!, /^ID +STATE +PROVIDER +LABEL +PROMPT +COST +AGE$/);
  assert.match(
    lines[1]!,
    /^task_\w+ +succeeded +fake +- +fix the \\e\[2Jbuild please z+… +\$0\.00 +\d+s$/,
  );
  assert.match(
    lines[2]!,
    /^task_\w+ +succeeded +fake +evil\\e\]52;c;cGF5bG9hZA=… +hi +\$0\.00 +\d+s$/,
  );
  assert.match(lines[3]!, /^task_\w+ +succeeded +fake +plain +hi +\$0\.00 +\d+s$/);
  const json = JSON.parse((await runCli(["task", "list", "--json"], h)).stdout);
  assert.deepEqual(json.map((t: { label: string }) => t.label), [null, hostile, "plain"]);
  assert.equal(json[0].prompt.length, 200, "the JSON's excerpt is bounded too");
  assert.ok(!json[0].prompt.includes("\n"));

  const sessions = (await runCli(["session", "list"], h)).stdout.trimEnd().split("\n");
  assert.match(sessions[0]!, /^ID +NAME +PROVIDER +TURNS +UPDATED$/);
  assert.match(sessions[1]!, /^ses_\w+ +pair +- +0 +\d+s$/);

  const history = (await runCli(["history"], h)).stdout.trimEnd().split("\n");
  assert.match(
    history[0]!,
    /^3 calls: 3 answered, 0 failed, 0 replayed, 0 refused; tokens \d+\/\d+ in\/out; cost \$0\.00$/,
  );
  assert.equal(history[1], "");
  assert.match(history[2]!, /^PROVIDER +CALLS +FAILED +MEDIAN +P95 +TOKENS IN\/OUT +COST$/);
  assert.match(history[3]!, /^fake +3 +0% +\d+ms +\d+ms +\d+\/\d+ +\$0\.00$/);
  assert.equal(history[4], "");
  assert.match(history[5]!, /^AGE +SOURCE +ID +SEQ +PROVIDER +OUTCOME +DURATION/);
  assert.match(history[6]!, /^ *\d+s +task +task_\w+ +1 +fake +live +\d+ms +\d+\/\d+ +\$0\.00$/);
  assert.equal(history.length, 9, history.join("\n"));
  const historyJson = JSON.parse((await runCli(["history", "--json"], h)).stdout);
  assert.equal(historyJson.summary.calls, 3);
});

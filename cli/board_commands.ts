/**
 * `svc board write|list|show`: the direct board entry. It calls the board service of the
 * services (`src/board/`) as the command line's owner, exactly as `POST /api/board/write` does
 * for a token's owner: a dry run unless `--apply`.
 * @module
 */
import type { Command } from "commander";
import { Option } from "commander";
import { SvcError } from "../src/errors/mod.ts";
import {
  BOARD_ACTIONS,
  type BoardCard,
  CARD_STATES,
  type CardState,
  type JsonValue,
} from "../src/schemas/mod.ts";
import { openHost } from "./host.ts";
import { EXIT } from "./exit_status.ts";
import { formatAge, renderTable, type TableColumn } from "./table.ts";
import { printJson, printOut } from "./terminal.ts";
import { UsageError } from "./workflow_input.ts";

/** Options of `svc board write`, as commander hands them over. */
interface WriteFlags {
  action: string;
  issueId?: string;
  title?: string;
  project?: string;
  priority?: string;
  desc?: string;
  labels?: string;
  message?: string;
  next?: string;
  by?: string;
  codename?: string;
  evidence?: string;
  apply?: boolean;
}

function evidenceOf(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw new UsageError("Cannot use --evidence: it must be JSON (quote a text: '\"done\"')");
  }
}

/** The request body the flags describe: the same body the HTTP route takes. */
function requestOf(flags: WriteFlags): Record<string, unknown> {
  const labels = flags.labels === undefined
    ? undefined
    : flags.labels.split(",").map((label) => label.trim()).filter((label) => label !== "");
  return Object.fromEntries(
    Object.entries({
      action: flags.action,
      mode: flags.apply ? "apply" : "dry_run",
      issue_id: flags.issueId,
      title: flags.title,
      project: flags.project,
      priority: flags.priority,
      desc: flags.desc,
      labels,
      message: flags.message,
      next: flags.next,
      by: flags.by,
      codename: flags.codename,
      evidence: flags.evidence === undefined ? undefined : evidenceOf(flags.evidence),
    }).filter(([, value]) => value !== undefined),
  );
}

async function boardWrite(flags: WriteFlags): Promise<number> {
  const request = requestOf(flags);
  await using host = await openHost();
  await printJson(await host.board.write(request, host.caller), 2);
  return EXIT.ok;
}

const CARD_COLUMNS: TableColumn<BoardCard>[] = [
  { header: "ID", value: (c) => c.issue_id, align: "right" },
  { header: "STATE", value: (c) => c.state },
  { header: "TITLE", value: (c) => c.title, maxWidth: 60 },
  { header: "PROJECT", value: (c) => c.project ?? "" },
  { header: "PRIORITY", value: (c) => c.priority ?? "" },
  { header: "LABELS", value: (c) => c.labels.join(","), maxWidth: 30 },
  { header: "BY", value: (c) => c.by, maxWidth: 20 },
  { header: "UPDATED", value: (c) => formatAge(c.updated_at), align: "right" },
];

async function boardList(
  flags: { state?: CardState; limit?: string; cursor?: string; json?: boolean },
): Promise<number> {
  const limit = flags.limit === undefined ? undefined : Number(flags.limit);
  if (flags.limit !== undefined && (!/^\d+$/.test(flags.limit) || !limit)) {
    throw new UsageError(`Cannot use --limit '${flags.limit}': it must be a whole number above 0`);
  }
  await using host = await openHost();
  const page = await host.board.list(host.caller, {
    ...(limit !== undefined ? { limit } : {}),
    ...(flags.cursor !== undefined ? { cursor: flags.cursor } : {}),
    ...(flags.state !== undefined ? { state: flags.state } : {}),
  });
  if (flags.json) {
    await printJson(page, 2);
    return EXIT.ok;
  }
  const lines = renderTable(CARD_COLUMNS, page.cards, { empty: "No cards." });
  if (page.next_cursor) lines.push("", `more: svc board list --cursor ${page.next_cursor}`);
  await printOut(lines);
  return EXIT.ok;
}

async function boardShow(issueId: string): Promise<number> {
  await using host = await openHost();
  const card = await host.board.get(issueId, host.caller);
  if (!card) {
    throw new SvcError(
      "not_found",
      `Cannot find card ${JSON.stringify(issueId.slice(0, 40))}: no such card`,
    );
  }
  await printJson(card, 2);
  return EXIT.ok;
}

/** Adds `board write`, `board list` and `board show` to the program; `run` sets the exit status. */
export function addBoardCommands(
  program: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  const board = program.command("board").description(
    "The board: cards taken, logged, done, dropped or cancelled (docs/BOARD.md)",
  ).exitOverride();
  board.command("write")
    .description(
      "Write to the board and print the result as JSON: a dry run (nothing written) unless --apply",
    )
    .addOption(
      new Option("--action <action>", "what to do").choices(BOARD_ACTIONS).makeOptionMandatory(),
    )
    .option("--issue-id <n>", "the card number (not with new: the board assigns it)")
    .option("--title <text>", "title (required with new)")
    .option("--project <text>", "project (empty clears it)")
    .option("--priority <text>", "priority (empty clears it)")
    .option("--desc <text>", "description (empty clears it)")
    .option("--labels <a,b>", "labels, comma-separated, replacing the card's")
    .option("--message <text>", "what to note in the card's log")
    .option("--next <text>", "the next step (empty clears it)")
    .option("--by <label>", "who acts (default: svc)")
    .option("--codename <text>", "codename (empty clears it)")
    .option("--evidence <json>", "any JSON value: the card's evidence")
    .option("--apply", "really write (default: a dry run that shows what would be written)")
    .exitOverride()
    .action((flags: WriteFlags) => run(() => boardWrite(flags)));
  board.command("list")
    .description("Your cards, newest first")
    .addOption(new Option("--state <state>", "only cards in this state").choices(CARD_STATES))
    .option("--limit <n>", "how many cards (default 100, at most 500)")
    .option("--cursor <cursor>", "continue a listing where it said `more`")
    .option("--json", "print JSON")
    .exitOverride()
    .action((flags: { state?: CardState; limit?: string; cursor?: string; json?: boolean }) =>
      run(() => boardList(flags))
    );
  board.command("show")
    .argument("<issue_id>", "the card number")
    .description("A card with its log, as JSON")
    .exitOverride()
    .action((issueId: string) => run(() => boardShow(issueId)));
}

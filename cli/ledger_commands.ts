/**
 * `svc ledger export` and `svc ledger import`: move a ledger between backends (this machine's
 * KV files and a shared Postgres database, `SVC_LEDGER_URL`). Export writes JSON Lines to
 * standard output; import reads them from a file (or `-`, standard input) into an empty ledger.
 * @module
 */
import type { Command } from "commander";
import { ledgerUrl, svcHome } from "../src/host_env/mod.ts";
import { exportLedger, importLedger, type TransferCounts } from "../src/services/mod.ts";
import { joinPath, platform } from "../src/platform/mod.ts";
import { EXIT } from "./exit_status.ts";
import { printLine, visible } from "./terminal.ts";

/** Most bytes `svc ledger import -` reads from standard input. */
const MAX_STDIN_BYTES = 4 * 1024 * 1024 * 1024;

function location() {
  const home = svcHome();
  const url = ledgerUrl();
  const boardDir = platform().env("SVC_DASHBOARD_BOARD_DIR") || joinPath(home, "board");
  return { home, boardDir, ...(url ? { url } : {}) };
}

function described(counts: TransferCounts): string {
  return `${counts.ledger} ledger record(s), ${counts.board} board record(s), ${counts.files} file(s)`;
}

async function exportCommand(): Promise<number> {
  const where = location();
  const counts: TransferCounts = { ledger: 0, board: 0, files: 0 };
  let chunk: string[] = [];
  let size = 0;
  for await (const line of exportLedger(where, counts)) {
    chunk.push(`${visible(line)}\n`);
    size += line.length;
    if (size >= 1024 * 1024) {
      await platform().writeStdout(chunk.join(""));
      chunk = [];
      size = 0;
    }
  }
  await platform().writeStdout(chunk.join(""));
  printLine(
    `svc: exported ${described(counts)} from ${where.url ? "the shared ledger" : where.home}`,
  );
  return EXIT.ok;
}

async function* linesOf(text: string): AsyncIterable<string> {
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = text.length;
    yield text.slice(start, end);
    start = end + 1;
  }
}

async function importCommand(file: string): Promise<number> {
  const p = platform();
  const text = file === "-"
    ? new TextDecoder().decode(await p.readStdin(MAX_STDIN_BYTES))
    : await p.readTextFile(file);
  const where = location();
  const counts = await importLedger(linesOf(text), where);
  printLine(
    `svc: imported ${described(counts)} into ${where.url ? "the shared ledger" : where.home}`,
  );
  return EXIT.ok;
}

/** Adds `svc ledger export|import`. */
export function addLedgerCommands(
  program: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  const ledger = program.command("ledger").description(
    'The ledger itself: move it between backends (docs/DEPLOYMENT.md, "Moving a ledger")',
  ).exitOverride();
  ledger.command("export")
    .description(
      "Print the ledger (SVC_LEDGER_URL's, else SVC_HOME's KV files) and its board as JSON Lines; stop the hosts first",
    )
    .exitOverride()
    .action(() => run(exportCommand));
  ledger.command("import")
    .description("Read an export (a file, or - for standard input) into an empty ledger")
    .argument("<file>", "the export")
    .exitOverride()
    .action((file: string) => run(() => importCommand(file)));
}

/**
 * `svc notifications` (the caller's notifications, newest first) and `svc notifications read`
 * (mark some, or all, read): the same service and request schema as the dashboard's
 * `/api/notifications` routes.
 * @module
 */
import type { Command } from "commander";
import { MarkReadRequestSchema } from "../src/schemas/mod.ts";
import type { NotificationView } from "../src/services/mod.ts";
import { openHost } from "./host.ts";
import { printJson, printLine, printOut } from "./terminal.ts";
import { EXIT } from "./exit_status.ts";
import { formatAge, renderTable, type TableColumn } from "./table.ts";
import { UsageError } from "./workflow_input.ts";

const COLUMNS: TableColumn<NotificationView>[] = [
  { header: "ID", value: (n) => n.id },
  { header: "", value: (n) => (n.read ? "" : "●") },
  { header: "KIND", value: (n) => n.kind },
  { header: "WHAT", value: (n) => n.title, maxWidth: 80 },
  { header: "AGE", value: (n) => formatAge(n.at), align: "right" },
];

/** Flags of `svc notifications`. */
interface ListFlags {
  unread?: boolean;
  json?: boolean;
  limit?: string;
}

async function list(flags: ListFlags): Promise<number> {
  const limit = flags.limit === undefined ? 50 : Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw new UsageError("Cannot list notifications: --limit must be a whole number from 1 to 100");
  }
  await using host = await openHost();
  const page = await host.notifications.list(host.caller, { limit, unread: flags.unread === true });
  if (flags.json) {
    await printJson({
      notifications: page.items,
      next_cursor: page.next_cursor,
      unread: page.unread,
    });
    return EXIT.ok;
  }
  await printOut(renderTable(COLUMNS, page.items, { empty: "No notifications." }));
  printLine(`${page.unread} unread`);
  return EXIT.ok;
}

async function markRead(ids: string[], flags: { all?: boolean }): Promise<number> {
  const parsed = MarkReadRequestSchema.safeParse(flags.all ? { all: true } : { ids });
  if (!parsed.success || (flags.all && ids.length > 0)) {
    throw new UsageError(
      "Cannot mark notifications read: name 1 to 100 ids like ntf_0123456789ab_42, or --all",
    );
  }
  await using host = await openHost();
  const result = await host.notifications.markRead(host.caller, parsed.data);
  printLine(`svc: marked ${result.marked} read; ${result.unread} unread`);
  return EXIT.ok;
}

/** Adds `svc notifications` and `svc notifications read`. */
export function addNotificationCommands(
  program: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  const notifications = program.command("notifications").description(
    "Your runs and tasks that ended badly or hit a limit, and calls waiting for you",
  ).option("--unread", "only unread ones").option("--limit <n>", "how many (1-100, default 50)")
    .option("--json", "print JSON").exitOverride()
    .action((flags: ListFlags) => run(() => list(flags)));
  notifications.command("read").argument("[ids...]").description(
    "Mark notifications read: the ids named, or --all",
  ).option("--all", "every notification").exitOverride()
    .action((ids: string[], flags: { all?: boolean }) => run(() => markRead(ids, flags)));
}

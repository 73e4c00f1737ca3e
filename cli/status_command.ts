/**
 * `svc status`: the pulse of this host for the command line's owner, as `GET /api/pulse`
 * answers it: work running, queued and waiting for a person, spend in the last hour and day,
 * providers' health and the newest failures. `--json` prints the pulse as the API does.
 * @module
 */
import type { Command } from "commander";
import type { Pulse } from "../src/schemas/mod.ts";
import { EXIT } from "./exit_status.ts";
import { openHost } from "./host.ts";
import { formatAge, formatCost } from "./table.ts";
import { printJson, printOut } from "./terminal.ts";

function spendLine(what: string, spend: Pulse["spend"]["hour"]): string {
  const unmetered = spend.unmetered_calls > 0 ? ` (${spend.unmetered_calls} unmetered)` : "";
  return `${what} ${
    formatCost(spend.cost_usd)
  } · ${spend.calls} calls${unmetered} · ${spend.tokens} tokens`;
}

function budgetLine(budgets: Pulse["spend"]["budgets"]): string | undefined {
  if (budgets.runs === 0) return undefined;
  const axes = [
    budgets.usd ? `${formatCost(budgets.usd.spent)} of ${formatCost(budgets.usd.total)}` : "",
    budgets.tokens ? `${budgets.tokens.spent} of ${budgets.tokens.total} tokens` : "",
  ].filter((axis) => axis !== "");
  return `budgets   ${budgets.runs} running runs: ${axes.join(", ")}`;
}

/** The pulse as lines for a terminal (control characters are made visible when printed). */
export function pulseLines(pulse: Pulse, now: number = Date.now()): string[] {
  const { runs, tasks, approvals, spend, providers } = pulse;
  const waiting = approvals.pending > 0
    ? `${approvals.pending} waiting for approval (longest ${
      formatAge(approvals.oldest_at ?? pulse.at, now)
    })`
    : "nothing waits for approval";
  const lines = [
    `runs      ${runs.running} running · ${runs.queued} queued · ${runs.waiting} waiting`,
    `tasks     ${tasks.running} running · ${tasks.queued} queued · ${tasks.waiting} waiting`,
    `approvals ${waiting}`,
    spendLine("spend 1h ", spend.hour),
    spendLine("spend 24h", spend.day) + (spend.complete ? "" : " (at least)"),
  ];
  const budgets = budgetLine(spend.budgets);
  if (budgets) lines.push(budgets);
  const down = providers.list.filter((p) => !p.available);
  lines.push(
    `providers ${providers.available}/${providers.total} available${
      down.length > 0 ? `; down: ${down.map((p) => `${p.name} (${p.reason})`).join(", ")}` : ""
    }`,
  );
  if (pulse.failures.length === 0) lines.push("failures  none recently");
  for (const [i, f] of pulse.failures.entries()) {
    const head = i === 0 ? "failures " : "         ";
    lines.push(`${head} ${f.id} ${f.state} ${formatAge(f.at, now)} ago: ${f.message}`);
  }
  return lines;
}

async function status(flags: { json?: boolean }): Promise<number> {
  await using host = await openHost();
  const pulse = await host.pulse.pulse(host.caller);
  if (flags.json) await printJson(pulse, 2);
  else await printOut(pulseLines(pulse));
  return EXIT.ok;
}

/** Adds `status` to the program; `run` sets the exit status. */
export function addStatusCommand(
  program: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  program
    .command("status")
    .description(
      "The pulse: your runs and tasks running, queued and waiting for approval, spend in the " +
        "last hour and day, providers' health, the newest failures",
    )
    .option("--json", "print the pulse as GET /api/pulse answers it")
    .exitOverride()
    .action((flags: { json?: boolean }) => run(() => status(flags)));
}

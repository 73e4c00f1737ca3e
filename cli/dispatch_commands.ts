import type { Command } from "commander";
import { Option } from "commander";
import type { CallRecord, SessionRecord, TaskStatus } from "../src/services/mod.ts";
import { platform } from "../src/platform/mod.ts";
import { dispatchHistory, type UsageSummary } from "../src/dispatch/mod.ts";
import { type StaleWorktree } from "../src/worktrees/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { EffortSchema } from "../src/schemas/mod.ts";
import { type Host, openHost } from "./host.ts";
import { type OutputLevel, parseOutputLevel, progressLines } from "./progress_lines.ts";
import { daemonAlive } from "../src/services/mod.ts";
import { printJson, printLine, printOut } from "./terminal.ts";
import { spawnWorker } from "./worker.ts";
import { EXIT, exitStatusOfState } from "./exit_status.ts";
import { formatAge, formatCost, renderTable, type TableColumn } from "./table.ts";
import { UsageError } from "./workflow_input.ts";

/** Options of `svc dispatch`, as commander hands them over. */
interface DispatchFlags {
  provider?: string;
  profile?: string;
  model?: string;
  sandbox?: string;
  sandboxMax?: string;
  workdir?: string;
  session?: string;
  tag?: string;
  effort?: string;
  isolation?: string;
  label?: string;
  timeout?: string;
  fakeDispatch?: boolean;
  wait?: boolean;
  json?: boolean;
  /** With --wait: the call's live output on standard error (`none`, `tools`, `all`). */
  output?: string;
}

function json(value: unknown): Promise<void> {
  return printJson(value, 2);
}

async function dispatch(prompt: string, flags: DispatchFlags): Promise<number> {
  const p = platform();
  const output = parseOutputLevel(flags.output, "none");
  if (output !== "none" && !flags.wait) {
    throw new UsageError("Cannot use --output without --wait: the task is not followed here");
  }
  const timeout = flags.timeout === undefined ? undefined : Number(flags.timeout);
  if (flags.timeout !== undefined && (!/^\d+$/.test(flags.timeout) || !timeout)) {
    throw new UsageError(
      `Cannot use --timeout '${flags.timeout}': it must be a whole number of seconds, at least 1`,
    );
  }
  const request = Object.fromEntries(
    Object.entries({
      prompt,
      provider: flags.provider,
      profile: flags.profile,
      model: flags.model,
      sandbox: flags.sandbox,
      sandbox_max: flags.sandboxMax,
      workdir: flags.workdir,
      session: flags.session,
      tag: flags.tag,
      effort: flags.effort,
      isolation: flags.isolation,
      label: flags.label,
      timeout,
      fake_dispatch: flags.fakeDispatch ? true : undefined,
    }).filter(([, value]) => value !== undefined),
  );
  await using host = await openHost();
  if (!flags.wait) {
    const task = await host.tasks.enqueue(request, host.caller);
    // A live daemon claims it from the queue; without one, a worker process of its own does.
    if (!(await daemonAlive(host.ledger))) {
      await spawnWorker("task", task.task_id);
    }
    printLine(`svc: task ${task.task_id} queued; follow it with: svc task status ${task.task_id}`);
    await json({ task_id: task.task_id, state: task.state });
    return EXIT.ok;
  }
  const started = await host.tasks.start(request, host.caller);
  printLine(`svc: task ${started.task_id} started`);
  let interrupts = 0;
  const removeInterrupt = p.onInterrupt(() => {
    if (++interrupts > 1) p.exit(130);
    printLine("svc: cancelling the task (press Ctrl-C again to quit at once)");
    void host.tasks.cancel(started.task_id, host.caller);
  });
  let task: TaskStatus;
  try {
    const watching = output === "none" ? undefined : printTaskOutput(host, started.task_id, output);
    task = await host.tasks.wait(started.task_id, host.caller);
    await watching;
  } finally {
    removeInterrupt();
  }
  const via = task.provider ? ` on ${task.provider}${task.model ? ` (${task.model})` : ""}` : "";
  if (task.sandbox_clamped) printLine(`! ${task.sandbox_clamped}`);
  printLine(
    `svc: task ${task.task_id} ${task.state}${via}${task.error ? `: ${task.error.message}` : ""}`,
  );
  if (flags.json) await json(task);
  else if (task.state === "succeeded") {
    await printJson(task.result ?? null);
  }
  return exitStatusOfState(task.state);
}

/** Prints a task's live output (its feed's progress events) until its feed ends. */
async function printTaskOutput(host: Host, taskId: string, level: OutputLevel): Promise<void> {
  const lines = progressLines(level);
  for await (const { event } of host.tasks.events(taskId, host.caller, { follow: true })) {
    if (event.progress) { for (const line of lines.lines(1, event.progress)) printLine(line); }
  }
  for (const line of lines.end(1)) printLine(line);
}

async function taskStatus(taskId: string): Promise<number> {
  await using host = await openHost();
  const task = await host.tasks.get(taskId, host.caller);
  if (!task) throw new SvcError("not_found", `Cannot find task '${taskId}': no such task`);
  // A loop, not Array.fromAsync: the npm package runs on Node 20, which lacks it.
  const events = [];
  for await (const item of host.tasks.events(taskId, host.caller, { follow: false })) {
    events.push(item);
  }
  await json({ ...task, events: events.map((item) => item.event) });
  return EXIT.ok;
}

async function taskCancel(taskId: string): Promise<number> {
  await using host = await openHost();
  let task = await host.tasks.cancel(taskId, host.caller);
  // A task of a worker process stops when the worker next polls: give it a moment.
  for (let i = 0; i < 50 && (task.state === "running" || task.state === "queued"); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    task = (await host.tasks.get(taskId, host.caller)) ?? task;
  }
  printLine(`svc: task ${taskId} ${task.state}`);
  await json(task);
  return EXIT.ok;
}

/** Options of the list-like commands. */
interface ListFlags {
  json?: boolean;
}

/** Longest prompt excerpt `svc task list --json` prints, in characters. */
const PROMPT_EXCERPT_CHARS = 200;

/** A prompt on one line: whitespace runs (newlines too) become one space, cut to `max`. */
function promptExcerpt(prompt: string, max: number): string {
  const flat = prompt.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

const TASK_COLUMNS: TableColumn<TaskStatus>[] = [
  { header: "ID", value: (t) => t.task_id },
  { header: "STATE", value: (t) => t.state },
  { header: "PROVIDER", value: (t) => t.provider ?? "-" },
  { header: "LABEL", value: (t) => t.label ?? "-", maxWidth: 24 },
  // The table escapes and clips every cell; the excerpt only puts the prompt on one line.
  {
    header: "PROMPT",
    value: (t) => promptExcerpt(t.prompt, PROMPT_EXCERPT_CHARS),
    maxWidth: 48,
  },
  { header: "COST", value: (t) => formatCost(t.cost_usd), align: "right" },
  { header: "AGE", value: (t) => formatAge(t.created_at), align: "right" },
];

async function taskList(flags: ListFlags): Promise<number> {
  await using host = await openHost();
  const tasks = await host.tasks.list(host.caller);
  if (!flags.json) {
    await printOut(renderTable(TASK_COLUMNS, tasks, { empty: "No tasks." }));
    return EXIT.ok;
  }
  await json(tasks.map((t) => ({
    task_id: t.task_id,
    state: t.state,
    provider: t.provider,
    label: t.label,
    prompt: promptExcerpt(t.prompt, PROMPT_EXCERPT_CHARS),
    created_at: t.created_at,
    cost_usd: t.cost_usd,
  })));
  return EXIT.ok;
}

async function taskWork(taskId: string): Promise<number> {
  await using host = await openHost();
  return exitStatusOfState((await host.tasks.work(taskId, host.caller)).state);
}

async function sessionNew(
  flags: { name?: string; provider?: string; profile?: string },
): Promise<number> {
  await using host = await openHost();
  const session = await host.sessions.create(flags, host.caller);
  await json(session);
  return EXIT.ok;
}

const SESSION_COLUMNS: TableColumn<SessionRecord>[] = [
  { header: "ID", value: (s) => s.session_id },
  { header: "NAME", value: (s) => s.name ?? "" },
  { header: "PROVIDER", value: (s) => s.provider ?? "-" },
  { header: "TURNS", value: (s) => String(s.turns), align: "right" },
  { header: "UPDATED", value: (s) => formatAge(s.updated_at), align: "right" },
];

async function sessionList(flags: ListFlags): Promise<number> {
  await using host = await openHost();
  const sessions = await host.sessions.list(host.caller);
  if (flags.json) await json(sessions);
  else await printOut(renderTable(SESSION_COLUMNS, sessions, { empty: "No sessions." }));
  return EXIT.ok;
}

async function sessionShow(ref: string): Promise<number> {
  await using host = await openHost();
  await json(await host.sessions.get(ref, host.caller));
  return EXIT.ok;
}

async function providers(flags: { json?: boolean }): Promise<number> {
  await using host = await openHost();
  const status = await host.dispatcher.status();
  if (flags.json) {
    await json({ config: host.configPath, providers: status });
    return EXIT.ok;
  }
  const source = host.configPath ?? "none (embedded default: the fake provider only)";
  const lines = [`configuration: ${source}`, ""];
  for (const s of status) {
    const load = `${s.running}/${s.concurrency ?? "-"}`;
    const price = s.price
      ? `$${s.price.input_per_mtok}/$${s.price.output_per_mtok} per Mtok`
      : "unpriced";
    lines.push(
      `${s.available ? "available  " : "unavailable"}  ${s.name.padEnd(12)} ${
        s.kind.padEnd(8)
      } load ${load.padEnd(6)} ${price}  ${s.reason}${s.version ? ` (${s.version})` : ""}`,
    );
  }
  await printOut(lines);
  return EXIT.ok;
}

function tokens(usage: { input_tokens: number; output_tokens: number }): string {
  return `${usage.input_tokens}/${usage.output_tokens}`;
}

const PROVIDER_COLUMNS: TableColumn<UsageSummary["by_provider"][number]>[] = [
  { header: "PROVIDER", value: (p) => p.provider },
  { header: "CALLS", value: (p) => String(p.calls), align: "right" },
  { header: "FAILED", value: (p) => `${Math.round(p.failure_rate * 100)}%`, align: "right" },
  { header: "MEDIAN", value: (p) => `${p.latency_ms.median}ms`, align: "right" },
  { header: "P95", value: (p) => `${p.latency_ms.p95}ms`, align: "right" },
  { header: "TOKENS IN/OUT", value: (p) => tokens(p.usage), align: "right" },
  { header: "COST", value: (p) => formatCost(p.cost_usd), align: "right" },
];

const CALL_COLUMNS: TableColumn<CallRecord>[] = [
  { header: "AGE", value: (c) => formatAge(c.at), align: "right" },
  { header: "SOURCE", value: (c) => c.source },
  { header: "ID", value: (c) => c.id },
  {
    header: "SEQ",
    // A resume's replayed calls share one record: its range of seqs.
    value: (c) => c.count && c.count > 1 ? `${c.seq}-${c.seq + c.count - 1}` : String(c.seq),
    align: "right",
  },
  { header: "PROVIDER", value: (c) => c.provider ?? "-" },
  { header: "OUTCOME", value: (c) => c.outcome },
  { header: "DURATION", value: (c) => `${c.duration_ms}ms`, align: "right" },
  { header: "TOKENS IN/OUT", value: (c) => tokens(c.usage), align: "right" },
  { header: "COST", value: (c) => formatCost(c.cost_usd), align: "right" },
];

/** `svc history` for people: the totals, the providers, then the recent calls. */
function historyLines(summary: UsageSummary, calls: readonly CallRecord[]): string[] {
  if (calls.length === 0) return ["No calls."];
  const unmetered = summary.unmetered_calls
    ? ` (${summary.unmetered_calls} ${
      summary.unmetered_calls === 1 ? "call" : "calls"
    } of unknown cost)`
    : "";
  return [
    `${summary.calls} ${summary.calls === 1 ? "call" : "calls"}: ${summary.answered} answered, ` +
    `${summary.failed} failed, ${summary.replayed} replayed, ${summary.refused} refused; tokens ${
      tokens(summary.usage)
    } in/out; ` +
    `cost ${formatCost(summary.cost_usd)}${unmetered}`,
    "",
    ...renderTable(PROVIDER_COLUMNS, summary.by_provider, { empty: "No providers." }),
    "",
    ...renderTable(CALL_COLUMNS, calls, { empty: "No calls." }),
  ];
}

async function history(flags: { limit?: string; json?: boolean }): Promise<number> {
  const limit = flags.limit === undefined ? 100 : Number(flags.limit);
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new UsageError(`Cannot use --limit '${flags.limit}': it must be a whole number above 0`);
  }
  await using host = await openHost();
  const { calls, summary } = await dispatchHistory(host.ledger, host.caller, { limit });
  if (flags.json) await json({ summary, calls });
  else await printOut(historyLines(summary, calls));
  return EXIT.ok;
}

const WORKTREE_COLUMNS: TableColumn<StaleWorktree>[] = [
  { header: "ID", value: (w) => w.id },
  // The path is for copying: wider than other cells before it is clipped.
  { header: "PATH", value: (w) => w.path, maxWidth: 120 },
  { header: "REASON", value: (w) => w.reason, maxWidth: 60 },
];

async function worktreeList(flags: ListFlags): Promise<number> {
  await using host = await openHost();
  const worktrees = await host.worktrees.stale();
  if (flags.json) await json(worktrees);
  else await printOut(renderTable(WORKTREE_COLUMNS, worktrees, { empty: "No stale worktrees." }));
  return EXIT.ok;
}

async function worktreeRemove(id: string): Promise<number> {
  await using host = await openHost();
  await host.worktrees.remove(id);
  printLine(`svc: worktree ${id} removed`);
  return EXIT.ok;
}

/** Adds `dispatch`, `task`, `session` and `providers` to the program; `run` sets the exit status. */
export function addDispatchCommands(
  program: Command,
  run: (action: () => Promise<number>) => Promise<void>,
): void {
  program
    .command("dispatch")
    .description(
      "Send one prompt to an agent as an asynchronous task (prints its task_id), or --wait for it",
    )
    .argument("<prompt>", "what to ask")
    .option("--provider <name>", "provider by name (default: auto routing)")
    .option("--profile <name>", "a configured profile (provider and model at once)")
    .option("--model <id>", "model id")
    .addOption(
      new Option("--sandbox <level>", "sandbox level").choices(["read-only", "write", "full"]),
    )
    .addOption(
      new Option(
        "--sandbox-max <level>",
        "highest sandbox level the call may get (a profile's too)",
      )
        .choices(["read-only", "write", "full"]),
    )
    .option("--workdir <dir>", "working directory of the agent")
    .option("--session <id|name>", "continue (or start, by name) a session")
    .option("--tag <tag>", "routing tag")
    .addOption(
      new Option("--effort <level>", "reasoning effort (the provider's setting; routing)")
        .choices(EffortSchema.options),
    )
    .addOption(
      new Option("--isolation <mode>", "run in a fresh git worktree").choices(["worktree"]),
    )
    .option("--label <text>", "label of the task")
    .option("--timeout <seconds>", "wall-clock limit of the task (default 1800)")
    .option("--fake-dispatch", "send the call to the fake provider")
    .option("--wait", "wait for the result and print it")
    .option("--json", "with --wait: print the whole task status")
    .option(
      "--output <level>",
      "with --wait: the call's live output on standard error: none (the default), tools or all",
    )
    .exitOverride()
    .action((prompt: string, flags: DispatchFlags) => run(() => dispatch(prompt, flags)));

  const task = program.command("task").description("Follow and control asynchronous dispatches")
    .exitOverride();
  task.command("status").argument("<task_id>").description(
    "Status, result, usage and events of a task",
  ).exitOverride()
    .action((id: string) => run(() => taskStatus(id)));
  task.command("cancel").argument("<task_id>").description("Cancel a task (idempotent)")
    .exitOverride()
    .action((id: string) => run(() => taskCancel(id)));
  task.command("list").description("Recent tasks").option("--json", "print JSON")
    .exitOverride()
    .action((flags: ListFlags) => run(() => taskList(flags)));
  task.command("work", { hidden: true }).argument("<task_id>").exitOverride()
    .action((id: string) => run(() => taskWork(id)));

  const session = program.command("session").description("Persistent multi-turn conversations")
    .exitOverride();
  session.command("new").description("Create a session")
    .option("--name <name>", "a name to find it by")
    .option("--provider <name>", "the provider it talks to (default: the first turn's)")
    .option("--profile <name>", "the profile it uses")
    .exitOverride()
    .action((flags: { name?: string; provider?: string; profile?: string }) =>
      run(() => sessionNew(flags))
    );
  session.command("list").description("Your sessions").option("--json", "print JSON")
    .exitOverride()
    .action((flags: ListFlags) => run(() => sessionList(flags)));
  session.command("show").argument("<id|name>").description("A session and its messages")
    .exitOverride()
    .action((ref: string) => run(() => sessionShow(ref)));

  const worktree = program.command("worktree").description(
    "Worktrees left by isolation: worktree calls",
  ).exitOverride();
  worktree.command("list").description(
    "Stale worktrees: kept with changes, or left by a host that died",
  ).option("--json", "print JSON").exitOverride()
    .action((flags: ListFlags) => run(() => worktreeList(flags)));
  worktree.command("remove").argument("<id>").description("Remove a stale worktree and its branch")
    .exitOverride()
    .action((id: string) => run(() => worktreeRemove(id)));

  program
    .command("history")
    .description(
      "Recent calls of runs and tasks, with counts, failure rates, latency, usage and costs",
    )
    .option("--limit <n>", "how many recent calls (default 100)")
    .option("--json", "print JSON")
    .exitOverride()
    .action((flags: { limit?: string; json?: boolean }) => run(() => history(flags)));

  program
    .command("providers")
    .description("Configured providers and their availability")
    .option("--json", "print JSON")
    .exitOverride()
    .action((flags: { json?: boolean }) => run(() => providers(flags)));
}

import type { RunStatus } from "../src/engine/mod.ts";
import { joinPath } from "../src/platform/mod.ts";

/** The flags of `svc workflow run` that decide what a run does, as the user typed them. */
export interface RerunFlags {
  args?: string;
  fakeDispatch?: boolean;
  timeout?: string;
  isolation?: string;
  sandboxDefault?: string;
  sandboxMax?: string;
  workdir?: string;
  budgetTokens?: string;
  budgetUsd?: string;
  maxAgents?: string;
  concurrency?: string;
}

/** Quotes one word for a POSIX shell, only when it needs it. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_\/.,:=@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The script a resume runs: the file the user named, or the copy svc kept of standard input. */
function scriptOf(ref: string | undefined, status: RunStatus, home: string): string {
  return ref !== undefined && ref !== "-"
    ? ref
    : joinPath(home, "runs", status.run_id, "script.js");
}

/**
 * The command that resumes a run that did not succeed: the same script and options, with
 * `--resume-from <run_id>`. From the flags as typed when they are known (the run this command
 * started), else from what the status recorded (a run another host left `interrupted`: its
 * `--args` were not recorded, so the hint says to pass them again).
 */
export function resumeCommand(
  status: RunStatus,
  options: { home: string; ref?: string; flags?: RerunFlags },
): string {
  const words = ["svc", "workflow", "run", scriptOf(options.ref, status, options.home)];
  const add = (flag: string, value: string | undefined) => {
    if (value !== undefined) words.push(flag, value);
  };
  const flags = options.flags;
  if (flags) {
    add("--args", flags.args);
    add("--workdir", flags.workdir);
    if (flags.timeout !== undefined && flags.timeout !== "3600") add("--timeout", flags.timeout);
    if (flags.isolation !== undefined && flags.isolation !== "unsafe-local") {
      add("--isolation", flags.isolation);
    }
    if (flags.sandboxDefault !== undefined && flags.sandboxDefault !== "read-only") {
      add("--sandbox-default", flags.sandboxDefault);
    }
    add("--sandbox-max", flags.sandboxMax);
    add("--budget-tokens", flags.budgetTokens);
    add("--budget-usd", flags.budgetUsd);
    add("--max-agents", flags.maxAgents);
    add("--concurrency", flags.concurrency);
    if (flags.fakeDispatch) words.push("--fake-dispatch");
  } else {
    add("--workdir", status.workdir ?? undefined);
    if (status.timeout !== 3600) add("--timeout", String(status.timeout));
    if (status.isolation !== "unsafe-local") add("--isolation", status.isolation);
    if (status.sandbox_default !== "read-only") add("--sandbox-default", status.sandbox_default);
    if (status.sandbox_max !== status.sandbox_default) add("--sandbox-max", status.sandbox_max);
    add("--budget-tokens", status.budget.tokens.cap?.toString());
    add("--budget-usd", status.budget.usd.cap?.toString());
    if (status.fake_dispatch) words.push("--fake-dispatch");
  }
  words.push("--resume-from", status.run_id);
  const command = words.map(shellWord).join(" ");
  return flags ? command : `${command} (and its --args, if it had any)`;
}

import type { RunStatus } from "../src/engine/mod.ts";

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

/**
 * The command that resumes a run that did not succeed. When this command started it from a
 * script file, the same file and flags with `--resume-from <run_id>`, so that the user can fix
 * the file first; otherwise (standard input, a run watched or left `interrupted`)
 * `svc workflow resume <run_id>`, which runs the script and args the ledger recorded.
 */
export function resumeCommand(
  status: RunStatus,
  options: { ref?: string; flags?: RerunFlags } = {},
): string {
  const { ref, flags } = options;
  if (ref === undefined || ref === "-" || flags === undefined) {
    return ["svc", "workflow", "resume", status.run_id].map(shellWord).join(" ");
  }
  const words = ["svc", "workflow", "run", ref];
  const add = (flag: string, value: string | undefined) => {
    if (value !== undefined) words.push(flag, value);
  };
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
  words.push("--resume-from", status.run_id);
  return words.map(shellWord).join(" ");
}

/**
 * The cli group: wall time of a whole `svc workflow run` (from a shell, through the launcher,
 * and the host alone) against a bare `deno run`.
 * @module
 */
import { hostModuleArgs } from "../../cli/host_entry.ts";
import { repoRoot, timeProcess } from "./common.ts";
import type { GroupContext, Report } from "./report.ts";

/** `deno run` arguments of `svc workflow run <script> --fake-dispatch` from the checkout. */
export async function cliArgs(script: string): Promise<string[]> {
  const argv = ["workflow", "run", script, "--fake-dispatch"];
  // The module the launcher starts for these arguments, resolved as it does (the bundle of the
  // lean program, with no configuration).
  return [
    "run",
    "--allow-read",
    "--allow-write",
    "--allow-run",
    "--allow-env",
    ...(await hostModuleArgs(argv)),
    ...argv,
  ];
}

/** A bare `deno run --no-prompt --no-config` of an empty file. */
export async function timeBareDeno(emptyScript: string): Promise<number> {
  const { ms } = await timeProcess("the bare deno run", Deno.execPath(), {
    args: ["run", "--no-prompt", "--no-config", emptyScript],
    env: { DENO_NO_UPDATE_CHECK: "1" },
  });
  return ms;
}

/** Wall time of a whole `svc workflow run <one-call script> --fake-dispatch` process. */
export async function timeCli(home: string, script: string): Promise<number> {
  const { ms, stdout } = await timeProcess("svc workflow run", Deno.execPath(), {
    args: await cliArgs(script),
    cwd: repoRoot(),
    env: { SVC_HOME: home, SVC_FAKE_LATENCY_MS: "0", DENO_NO_UPDATE_CHECK: "1" },
  });
  expectOneCallOutput("svc workflow run", stdout);
  return ms;
}

/** The `deno run` arguments of `deno task svc` (deno.json), so that the two never differ. */
export async function launcherArgs(): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(`${repoRoot()}/deno.json`)) as {
    tasks?: Record<string, string>;
  };
  const words = (config.tasks?.svc ?? "").split(/\s+/).filter(Boolean);
  if (words[0] !== "deno" || words[1] !== "run") {
    throw new Error(`deno.json's svc task is not a 'deno run': ${words.join(" ")}`);
  }
  return words.slice(1);
}

/** Checks that a whole CLI run printed a JSON string, the one call's value. */
export function expectOneCallOutput(what: string, stdout: string): void {
  let result: unknown;
  try {
    result = JSON.parse(stdout);
  } catch {
    throw new Error(`${what} printed something that is not JSON: ${stdout.trim()}`);
  }
  if (typeof result !== "string") {
    throw new Error(`${what} returned ${stdout.trim()}, not a string`);
  }
}

/**
 * Wall time of `svc workflow run <one-call script> --fake-dispatch` as `deno task svc` starts
 * it: the launcher (`cli/launch.ts`, its task flags), which spawns the host. With `viaTask`,
 * `deno task svc` itself, as typed in a shell.
 */
export async function timeCliLauncher(
  home: string,
  script: string,
  viaTask: boolean,
): Promise<number> {
  const args = viaTask
    ? ["task", "--quiet", "svc", "workflow", "run", script, "--fake-dispatch"]
    : [...await launcherArgs(), "workflow", "run", script, "--fake-dispatch"];
  const what = viaTask ? "deno task svc workflow run" : "the launcher's workflow run";
  const { ms, stdout } = await timeProcess(what, Deno.execPath(), {
    args,
    cwd: repoRoot(),
    env: { SVC_HOME: home, SVC_FAKE_LATENCY_MS: "0", DENO_NO_UPDATE_CHECK: "1" },
  });
  expectOneCallOutput(what, stdout);
  return ms;
}

/** The cli group: a whole CLI run against a bare `deno run`. */
export function reportCli(report: Report, context: GroupContext): void {
  // The whole CLI.
  if (context.only.has("cli")) {
    report.baseline(
      "bare_deno_ms",
      "baseline: bare deno run --no-config (empty file)",
      report.pick("bareDenoMs"),
      "ms",
    );
    report.figure(
      "cli_task_ms",
      "deno task svc workflow run, 1 call (from a shell)",
      report.pick("cliTaskMs"),
      "ms",
      "bare_deno_ms",
      "<= 8x",
    );
    report.figure(
      "cli_launcher_ms",
      "  launcher + host (the svc task's deno run)",
      report.pick("cliLauncherMs"),
      "ms",
      "bare_deno_ms",
    );
    report.figure(
      "cli_ms",
      "  host alone (deno run of the module the launcher picks)",
      report.pick("cliMs"),
      "ms",
      "bare_deno_ms",
    );
  }
}

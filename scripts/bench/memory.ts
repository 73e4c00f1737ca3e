/**
 * The memory group: peak RSS of the host and of its guest over a whole CLI run of the fan-out,
 * against a bare `deno run`.
 * @module
 */
import { cliArgs } from "./cli.ts";
import { FANOUT_CALLS, repoRoot } from "./common.ts";
import type { GroupContext, Report } from "./report.ts";

/**
 * Peak resident memory (VmHWM, KiB) of a process and of its children (the largest), sampled from
 * /proc until it exits. Deno wants --allow-all to read /proc; a shell reads it with run permission.
 */
export async function peakMemoryOf(
  child: Deno.ChildProcess,
): Promise<{ ownKb: number; childKb: number }> {
  const sampler = `pid=$1; own=0; kid=0
    while [ -d /proc/$pid ]; do
      v=$(awk '/VmHWM/{print $2}' /proc/$pid/status 2>/dev/null); [ -n "$v" ] && [ "$v" -gt "$own" ] && own=$v
      # Every descendant: a guest in bubblewrap is a grandchild or deeper (bwrap, its init, deno).
      todo=$(cat /proc/$pid/task/*/children 2>/dev/null)
      while [ -n "$todo" ]; do
        next=""
        for c in $todo; do
          v=$(awk '/VmHWM/{print $2}' /proc/$c/status 2>/dev/null); [ -n "$v" ] && [ "$v" -gt "$kid" ] && kid=$v
          next="$next $(cat /proc/$c/task/*/children 2>/dev/null)"
        done
        todo=$(echo $next)
      done
      sleep 0.002
    done
    echo "$own $kid"`;
  const sample = new Deno.Command("bash", {
    args: ["-c", sampler, "sampler", String(child.pid)],
    stdout: "piped",
  }).output();
  const status = await child.status;
  if (!status.success) throw new Error(`the measured process exited with status ${status.code}`);
  const [ownKb = 0, childKb = 0] = new TextDecoder().decode((await sample).stdout).trim().split(" ")
    .map(Number);
  return { ownKb, childKb };
}

/** Peak memory of the host and of its guest during a whole CLI run of the 200-call fan-out. */
export async function peakMemory(
  home: string,
  script: string,
): Promise<{ hostKb: number; guestKb: number }> {
  const host = new Deno.Command(Deno.execPath(), {
    args: await cliArgs(script),
    cwd: repoRoot(),
    env: { SVC_HOME: home, SVC_FAKE_LATENCY_MS: "0", DENO_NO_UPDATE_CHECK: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const { ownKb, childKb } = await peakMemoryOf(host);
  if (!ownKb || !childKb) throw new Error("the memory sampler saw no host or no guest");
  return { hostKb: ownKb, guestKb: childKb };
}

/** Peak memory (KiB) of a bare `deno run` of an empty file: the baseline. */
export async function peakMemoryBare(emptyScript: string): Promise<number> {
  const bare = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--no-config", emptyScript],
    env: { DENO_NO_UPDATE_CHECK: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  return (await peakMemoryOf(bare)).ownKb;
}

/** The memory group: the host's and its guest's peak RSS against a bare `deno run`. */
export function reportMemory(report: Report, context: GroupContext): void {
  // Memory.
  const mib = (key: "hostKb" | "guestKb" | "bareKb") => report.stat((r) => r[key] / 1024);
  if (context.only.has("memory")) {
    report.baseline(
      "bare_rss_mib",
      "baseline: peak RSS of a bare deno run (empty file)",
      mib("bareKb"),
      "MiB",
    );
    report.figure(
      "host_rss_mib",
      `peak RSS of the host, ${FANOUT_CALLS}-call CLI run`,
      mib("hostKb"),
      "MiB",
      "bare_rss_mib",
    );
    report.figure("guest_rss_mib", "peak RSS of its guest", mib("guestKb"), "MiB", "bare_rss_mib");
  }
}

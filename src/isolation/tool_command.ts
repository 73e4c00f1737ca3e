import { hostEnv } from "../host_env/mod.ts";
import { platform, readBounded } from "../platform/mod.ts";
import type { ChildProcess } from "../platform/mod.ts";

/** How a VM tool's command ended. */
export interface ToolResult {
  /** Exit code; -1 when it was killed (timed out or aborted). */
  code: number;
  stdout: string;
  stderr: string;
  /** It ran past its time bound and was killed. */
  timedOut: boolean;
}

/** Most output kept of a tool's command: `limactl list --json` of one instance is a few KiB. */
const OUTPUT_LIMIT = 1024 * 1024;

/**
 * The environment of a VM tool: PATH (limactl runs ssh, krunvm runs buildah) and HOME (where
 * they keep their VMs), LIMA_HOME when set. Nothing else of the host's reaches them.
 */
export function toolEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "LIMA_HOME"]) {
    const value = hostEnv(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Starts a VM tool's command in its own process group, with {@linkcode toolEnv}. */
export function spawnTool(command: string, args: readonly string[]): ChildProcess {
  return platform().spawn(command, {
    args,
    clearEnv: true,
    env: toolEnv(),
    cwd: "/",
    newProcessGroup: true,
  });
}

async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  try {
    return new TextDecoder().decode(await readBounded(stream, OUTPUT_LIMIT));
  } catch {
    return "";
  }
}

/**
 * Runs a VM tool's command to its end, or for at most `timeoutMs` (then its whole group is
 * killed): a hanging tool never holds a run, or its teardown, forever.
 */
export async function runTool(
  command: string,
  args: readonly string[],
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<ToolResult> {
  const child = spawnTool(command, args);
  await child.stdin.close().catch(() => {});
  let timedOut = false;
  const kill = () => child.kill("SIGKILL");
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, options.timeoutMs);
  options.signal?.addEventListener("abort", kill, { once: true });
  try {
    const [stdout, stderr, status] = await Promise.all([
      text(child.stdout),
      text(child.stderr),
      child.status,
    ]);
    const killed = timedOut || status.signal !== null;
    return { code: killed ? -1 : status.code, stdout, stderr, timedOut };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", kill);
  }
}

/**
 * A tool's output as an error message may quote it: the last non-empty line of its stderr and
 * of its stdout (krunvm prints its errors there), clipped and printable.
 */
export function toolMessage(result: ToolResult): string {
  const parts: string[] = [];
  for (const output of [result.stderr, result.stdout]) {
    const last = output.split("\n").map((line) => line.trim()).filter((line) => line !== "").at(-1);
    if (last !== undefined) parts.push(last.slice(0, 240).replace(/[^\x20-\x7e]/g, "?"));
  }
  if (result.timedOut) parts.push("it did not answer in time");
  return parts.join("; ") || `it exited with code ${result.code}`;
}

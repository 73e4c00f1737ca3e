/**
 * How every `deno task` script ends when something it needs is missing: one line on standard
 * error that names the missing package, tool or file and the command that provides it, exit
 * status 1, and no stack trace. A script runs its work through {@linkcode runTask}; a tool it
 * starts that is not installed (Deno's `NotFound` from spawning it) becomes
 * `Cannot <task>: <tool> is not installed; install it with: <command>`.
 * @module
 */

/** The command that installs each tool the tasks start (Debian, as docs/ISOLATION.md). */
export const INSTALL_COMMANDS: Readonly<Record<string, string>> = {
  npm: "apt-get install -y nodejs npm",
  node: "apt-get install -y nodejs",
  tar: "apt-get install -y tar",
  git: "apt-get install -y git",
  bwrap: "apt-get install -y bubblewrap",
  chromium: "apt-get install -y chromium",
  "dpkg-query": "apt-get install -y dpkg (the micro-VM image is built from Debian's packages)",
  "qemu-system-x86_64": "apt-get install -y --no-install-recommends qemu-system-x86",
  mksquashfs: "apt-get install -y --no-install-recommends squashfs-tools",
  cpio: "apt-get install -y --no-install-recommends cpio",
  busybox: "apt-get install -y --no-install-recommends busybox-static",
  find: "apt-get install -y findutils",
  touch: "apt-get install -y coreutils",
  ps: "apt-get install -y procps",
  bash: "apt-get install -y bash",
  psql: "apt-get install -y postgresql",
  prometheus: "apt-get install -y prometheus",
};

/** A failure a task explains itself: its message is the one line printed. */
export class TaskFailure extends Error {
  override name = "TaskFailure";
}

/** The line for a tool that is not installed, with the command that installs it. */
export function missingTool(action: string, tool: string): string {
  const install = INSTALL_COMMANDS[tool];
  return `Cannot ${action}: ${tool} is not installed${
    install ? `; install it with: ${install}` : " (or not on PATH)"
  }`;
}

/** The tool a spawn failed to find: Deno says `Failed to spawn '<tool>': No such file ...`. */
function unspawned(error: unknown): string | undefined {
  if (!(error instanceof Deno.errors.NotFound)) return undefined;
  return /spawn '([^']+)'/.exec(error.message)?.[1];
}

/** One line for `error`: never a stack, never more than one line. */
export function failureLine(action: string, error: unknown): string {
  const tool = unspawned(error);
  if (tool !== undefined) return missingTool(action, tool.split("/").at(-1) ?? tool);
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split("\n").find((line) => line.trim() !== "")?.trim() ?? "it failed";
  return first.startsWith("Cannot ") ? first : `Cannot ${action}: ${first}`;
}

/**
 * Runs a task's work; what it returns is the exit status (0 when nothing). A failure prints one
 * line ({@linkcode failureLine}) and exits 1.
 */
export async function runTask(
  action: string,
  work: () => Promise<number | void>,
): Promise<never> {
  let status: number;
  try {
    status = (await work()) ?? 0;
  } catch (error) {
    console.error(failureLine(action, error));
    status = 1;
  }
  Deno.exit(status);
}

/**
 * Git as the host runs it on repositories an agent may have touched. A write agent can edit
 * the files of its working directory, `.git/config` and `.git/hooks` included, and can replace a
 * worktree's `.git` file with one pointing at a git directory of its own making. Git runs
 * commands named by configuration (`core.fsmonitor`, hooks, filter and diff drivers), so the
 * host's own `git status` would run whatever the agent planted, outside any sandbox. Here every
 * git command gets: a cleared environment without system or global configuration, the git
 * directory and work tree the host computed itself (never discovered from a `.git` file), and
 * every command-valued setting switched off on its command line, where it overrides the
 * repository's own.
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import { hostEnv } from "../host_env/mod.ts";
import { platform } from "../platform/mod.ts";

/** How one git command ended. */
export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
  /** True when stdout passed `maxStdoutBytes`: git was stopped and `stdout` holds its start. */
  truncated?: boolean;
}

/** Stderr kept of a git command: its messages are short, and it is only shown clipped. */
const STDERR_LIMIT = 64 * 1024;

/** Where a git command works. */
export interface GitPlace {
  /** Directory it runs in (for commands that discover their repository from it). */
  cwd: string;
  /** The git directory, as the host computed it; discovery from `cwd` when absent. */
  gitDir?: string;
  /** The work tree, as the host computed it. */
  workTree?: string;
}

/** Settings whose value is a command git would run, switched off for every host-side command. */
const FIXED_OVERRIDES: readonly string[] = [
  "core.fsmonitor=false",
  "core.hooksPath=/dev/null",
  "core.sshCommand=",
  "core.askPass=",
  "core.pager=cat",
  "core.editor=:",
  "core.alternateRefsCommand=",
  "diff.external=",
  "credential.helper=",
  "protocol.allow=never",
  "gc.auto=0",
  "maintenance.auto=false",
];

/** Per-driver settings that name commands: `filter.<x>.clean`, `diff.<x>.textconv`, ... */
const DRIVER_KEYS =
  /^(filter\.[^\n]+\.(clean|smudge|process)|diff\.[^\n]+\.(command|textconv)|merge\.[^\n]+\.driver)$/i;

/** Most command-naming driver settings a repository may have before the host refuses it. */
const MAX_DRIVERS = 256;

/** Git's environment: nothing inherited but PATH, no system or global configuration. */
function gitEnv(): Record<string, string> {
  return {
    PATH: hostEnv("PATH") ?? "/usr/bin:/bin",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_OPTIONAL_LOCKS: "0",
    LC_ALL: "C",
  };
}

async function spawnGit(
  args: readonly string[],
  cwd: string,
  maxStdoutBytes: number = Infinity,
): Promise<GitResult> {
  const p = platform();
  const command = p.which("git");
  if (!command) {
    throw new SvcError(
      "unavailable",
      "Cannot run git: it is not installed (install it with: apt-get install -y git)",
    );
  }
  const child = p.spawn(command, { args, cwd, clearEnv: true, env: gitEnv() });
  await child.stdin.close().catch(() => {});
  const [stdout, stderr, status] = await Promise.all([
    readAtMost(child.stdout, maxStdoutBytes, () => child.kill("SIGKILL")),
    readAtMost(child.stderr, STDERR_LIMIT),
    child.status,
  ]);
  return {
    code: status.code,
    stdout: stdout.text,
    stderr: stderr.text,
    ...(stdout.truncated ? { truncated: true } : {}),
  };
}

/**
 * A stream's text up to `max` bytes; past it the rest is drained unread (or, with `stop`, the
 * writer is stopped), so that output of any size costs at most `max` bytes of memory.
 */
async function readAtMost(
  stream: ReadableStream<Uint8Array>,
  max: number,
  stop?: () => void,
): Promise<{ text: string; truncated: boolean }> {
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  let truncated = false;
  for await (const chunk of stream) {
    if (truncated) continue;
    const room = max - size;
    if (chunk.length > room) {
      text += decoder.decode(chunk.subarray(0, Math.max(0, room)), { stream: true });
      truncated = true;
      stop?.();
      continue;
    }
    size += chunk.length;
    text += decoder.decode(chunk, { stream: true });
  }
  return { text: text + decoder.decode(), truncated };
}

function placeArgs(place: GitPlace): string[] {
  return [
    ...(place.gitDir !== undefined ? [`--git-dir=${place.gitDir}`] : []),
    ...(place.workTree !== undefined ? [`--work-tree=${place.workTree}`] : []),
  ];
}

function overrideArgs(settings: readonly string[]): string[] {
  return settings.flatMap((setting) => ["-c", setting]);
}

/**
 * The driver settings of the repository's configuration that name commands, each switched off
 * (an empty value disables a filter or diff driver). Reading configuration runs nothing.
 */
async function driverOverrides(place: GitPlace): Promise<string[]> {
  const listed = await spawnGit([
    ...overrideArgs(FIXED_OVERRIDES),
    ...placeArgs(place),
    "config",
    "--name-only",
    "--list",
  ], place.cwd);
  if (listed.code !== 0) return [];
  const keys = new Set(
    listed.stdout.split("\n").map((key) => key.trim()).filter((key) => DRIVER_KEYS.test(key)),
  );
  if (keys.size > MAX_DRIVERS) {
    // Each would cost two arguments: a configuration this large is refused, not half-disabled.
    throw new SvcError(
      "invalid_request",
      `Cannot use the repository: its configuration names ${keys.size} filter, diff or merge commands (at most ${MAX_DRIVERS})`,
    );
  }
  return [...keys].map((key) => `${key}=`);
}

/**
 * Runs `git <args>` so that nothing the repository's configuration names can run: see the
 * module documentation. With `maxStdoutBytes`, git is stopped once its output passes it (the
 * result says `truncated`). Throws `unavailable` when git is not installed.
 */
export async function safeGit(
  args: readonly string[],
  place: GitPlace,
  options: { maxStdoutBytes?: number } = {},
): Promise<GitResult> {
  const drivers = await driverOverrides(place);
  return await spawnGit(
    [
      ...overrideArgs(FIXED_OVERRIDES),
      ...overrideArgs(drivers),
      ...placeArgs(place),
      ...args,
    ],
    place.cwd,
    options.maxStdoutBytes,
  );
}

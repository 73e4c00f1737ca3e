import { joinPath, platform } from "../../platform/mod.ts";
import { ScriptCallError } from "../guest_session.ts";

/** Longest `workdir` a script may name. */
const MAX_WORKDIR_CHARS = 4096;

/** Whether `path` is `root` or lies under it (both real, absolute paths). */
function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`);
}

/**
 * The working directory of one `agent()` call. The run's `workdir` is chosen by whoever started
 * the run; a script's `workdir` option may only narrow it: a path relative to it (or absolute)
 * that, with every symbolic link resolved, is the run's workdir or a directory inside it. So a
 * script cannot send a write agent, or a worktree, to another repository on the machine.
 * Without a run workdir the option is refused, and the call gets no cwd (a harness then runs in
 * a fresh scratch directory). `checkedRoot` is the run's workdir as checked at its start; the
 * harness checks the call's directory against it again right before the process starts.
 */
export async function callWorkdir(
  runWorkdir: string | undefined,
  asked: string | undefined,
  checkedRoot?: string,
): Promise<string | undefined> {
  if (asked === undefined) return runWorkdir;
  const refuse = (why: string) =>
    new ScriptCallError("Error", `agent(): option 'workdir' cannot be used: ${why}`);
  if (runWorkdir === undefined) {
    throw refuse("the run has no workdir, and a call's workdir must lie inside the run's");
  }
  if (asked.length > MAX_WORKDIR_CHARS || asked.includes("\0")) {
    throw refuse(`it must be a path of at most ${MAX_WORKDIR_CHARS} characters`);
  }
  const p = platform();
  // The run's workdir as checked at its start, not as it resolves now: a link made since
  // must not move the root the option is confined to.
  const root = checkedRoot ?? await p.realPath(runWorkdir).catch(() => undefined);
  if (root === undefined) throw refuse("the run's workdir does not exist");
  const target = asked.startsWith("/") ? asked : joinPath(root, asked);
  const real = await p.realPath(target).catch(() => undefined);
  if (real === undefined) throw refuse(`'${asked}' does not exist`);
  if (!within(real, root)) throw refuse(`'${asked}' is outside the run's workdir`);
  if (!(await p.stat(real)).isDirectory) throw refuse(`'${asked}' is not a directory`);
  return real;
}

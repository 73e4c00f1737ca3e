/**
 * How a child is started in a session (and so a process group) of its own, for a kill of its
 * group to reach its whole tree. Deno's `detached` makes the child call setsid() between fork
 * and exec, which rules out the vfork-style spawn: a full fork() copies the parent's page
 * tables, so its cost grows with the parent's memory (3.7 ms a spawn at 200 MiB against 0.2 ms
 * without it), and the host's event loop waits for it at every guest start. A host admitting N
 * runs at once, its memory growing with them, paid N spawns each dearer than the last.
 * util-linux's setsid(1), started by the plain spawn, makes the session and executes the program
 * in the same process: pid, group and session id stay one, as with `detached`.
 * @module
 */

/** The program to spawn for a command that needs a group of its own. */
export interface GroupStart {
  /** The program and its arguments. */
  command: string;
  args: string[];
  /** True when the spawn itself must make the session (setsid(1) is not at hand). */
  detached: boolean;
}

/** setsid(1)'s path when this process may run it, once looked up. */
let starter: string | null | undefined;

function setsidStarter(which: (command: string) => string | undefined): string | null {
  if (starter !== undefined) return starter;
  starter = null;
  if (Deno.build.os !== "linux") return starter;
  const found = which("setsid");
  if (found && Deno.permissions.querySync({ name: "run", command: found }).state === "granted") {
    starter = found;
  }
  return starter;
}

/** Whether `command` names an existing file by its absolute path. */
function existingAbsolute(command: string): boolean {
  if (!command.startsWith("/")) return false;
  try {
    return Deno.statSync(command).isFile;
  } catch {
    return false;
  }
}

/**
 * How to spawn `command` with `args` in a session of its own: through setsid(1) where it may
 * run and `command` is an existing absolute path (so that a missing program still fails the
 * spawn itself, as before), else with Deno's `detached`.
 */
export function groupStart(
  command: string,
  args: readonly string[],
  which: (command: string) => string | undefined,
): GroupStart {
  const setsid = setsidStarter(which);
  if (setsid === null || !existingAbsolute(command)) {
    return { command, args: [...args], detached: true };
  }
  return { command: setsid, args: ["--", command, ...args], detached: false };
}

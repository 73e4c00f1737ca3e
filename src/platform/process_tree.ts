/**
 * The descendants of a process. A process group does not hold every descendant: a tool may
 * start its commands in sessions of their own (Claude Code's shell tool does), and killing the
 * tool's group leaves those running. Killing the descendants found here as well ends the tree.
 * @module
 */

/** Each running process's pid and its parent's pid. */
export type ParentTable = ReadonlyArray<readonly [pid: number, ppid: number]>;

/** Synchronous reads of `/proc`, which may throw (no such file, no grant). */
export interface ProcReader {
  readDir(path: string): string[];
  readFile(path: string): string;
}

/** The parent pid in a `/proc/<pid>/stat` line; the name before it may hold spaces and `)`. */
function parentOf(stat: string): number | undefined {
  const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  return Number.isInteger(ppid) ? ppid : undefined;
}

/** The parent table read from `/proc` (Linux); undefined where it cannot be read. */
export function procParents(proc: ProcReader): ParentTable | undefined {
  let entries: string[];
  try {
    entries = proc.readDir("/proc");
  } catch {
    return undefined;
  }
  const table: [number, number][] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = parentOf(proc.readFile(`/proc/${entry}/stat`));
      if (ppid !== undefined) table.push([Number(entry), ppid]);
    } catch {
      // It ended meanwhile.
    }
  }
  return table;
}

/** The parent table of `ps -A -o pid=,ppid=` output. */
export function psParents(output: string): ParentTable {
  return output.split("\n").flatMap((line) => {
    const [pid, ppid] = line.trim().split(/\s+/).map(Number);
    return Number.isInteger(pid) && Number.isInteger(ppid) ? [[pid!, ppid!] as const] : [];
  });
}

/** The pids of every descendant of `root`, parents first. */
export function descendantsOf(root: number, table: ParentTable): number[] {
  // Linear in the table: a host of hundreds of children reads it at every kill of one.
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of table) {
    const siblings = children.get(ppid);
    if (siblings) siblings.push(pid);
    else children.set(ppid, [pid]);
  }
  const seen = new Set<number>();
  const found: number[] = [];
  for (let next = [root]; next.length > 0;) {
    const level: number[] = [];
    for (const pid of next) {
      for (const child of children.get(pid) ?? []) {
        if (seen.has(child)) continue;
        seen.add(child);
        found.push(child);
        level.push(child);
      }
    }
    next = level;
  }
  return found;
}

import { platform } from "../platform/mod.ts";

/**
 * Which process owns a scratch directory: its pid, and its start time in clock ticks after boot
 * (field 22 of `/proc/<pid>/stat`), so that a later process that reuses the pid is not taken
 * for the owner. `start` is 0 where the start time cannot be read (no `/proc`).
 */
export interface ScratchOwner {
  pid: number;
  start: number;
}

/** The start time of process `pid` in clock ticks after boot; 0 when it cannot be read. */
export async function processStart(pid: number): Promise<number> {
  let stat: string;
  try {
    stat = await platform().readTextFile(`/proc/${pid}/stat`);
  } catch {
    return 0;
  }
  // The command name (field 2) is in parentheses and may itself hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const start = Number(fields[19]);
  return Number.isSafeInteger(start) && start > 0 ? start : 0;
}

let self: Promise<ScratchOwner> | undefined;

/** This process, as the owner of the scratch directories it makes. */
export function selfOwner(): Promise<ScratchOwner> {
  const pid = platform().pid();
  self ??= processStart(pid).then((start) => ({ pid, start }));
  return self;
}

/**
 * Whether `owner` still runs: false when its pid is free or now belongs to a process that
 * started at another time, true when it runs or when the host may not find out.
 */
export async function ownerAlive(owner: ScratchOwner): Promise<boolean> {
  const me = await selfOwner();
  if (owner.pid === me.pid && owner.start === me.start) return true;
  if (platform().processAlive(owner.pid) === false) return false;
  if (owner.start === 0) return true;
  const start = await processStart(owner.pid);
  return start === 0 || start === owner.start;
}

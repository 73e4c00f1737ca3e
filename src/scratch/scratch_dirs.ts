import { SvcError } from "../errors/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import { ownerAlive, type ScratchOwner, selfOwner } from "./owner.ts";

/**
 * A directory under the scratch root whose name carries no owner, or an owner that cannot be
 * parsed, is removed once it is older than this: longer than any run or dispatch may last
 * (7 days), so that an unmarked directory still in use is never taken away.
 */
export const UNMARKED_MAX_AGE_MS = 8 * 24 * 3600 * 1000;

const PREFIX = /^[a-z][a-z0-9_]*-$/;
/** `<prefix><pid>.<start>-<random>`: what {@linkcode makeScratchDir} names a directory. */
const MARKED = /^[a-z][a-z0-9_]*-(\d{1,10})\.(\d{1,20})-[A-Za-z0-9_]+$/;
const MAX_PID = 2 ** 31 - 1;

/** Options of {@linkcode makeScratchDir}. */
export interface ScratchDirOptions {
  /** Lower-case letters, digits and `_`, ending with `-`: `guest-`, `call-`. */
  prefix: string;
}

/**
 * Makes a fresh private directory under `root` (created if needed), named
 * `<prefix><pid>.<start>-<random>` after this process, so that {@linkcode sweepScratch} in any
 * later host knows whose it is and removes it once this process is gone.
 */
export async function makeScratchDir(root: string, options: ScratchDirOptions): Promise<string> {
  if (!PREFIX.test(options.prefix)) {
    throw new SvcError(
      "internal",
      `Cannot make a scratch directory: the prefix '${options.prefix}' is not lower-case letters, digits and _ ending with -`,
    );
  }
  const owner = await selfOwner();
  const p = platform();
  await p.mkdir(root);
  return await p.makeTempDir({
    dir: root,
    prefix: `${options.prefix}${owner.pid}.${owner.start}-`,
  });
}

/** The owner a directory name carries, or undefined when it carries none. */
export function scratchOwner(name: string): ScratchOwner | undefined {
  const match = MARKED.exec(name);
  if (!match) return undefined;
  const pid = Number(match[1]);
  const start = Number(match[2]);
  // Never 0 or negative: signalling those reaches whole process groups.
  if (!(pid >= 1 && pid <= MAX_PID) || !Number.isSafeInteger(start)) return undefined;
  return { pid, start };
}

/** Options of {@linkcode sweepScratch}. */
export interface SweepOptions {
  /** Age after which a directory without an owner is removed; {@linkcode UNMARKED_MAX_AGE_MS}. */
  unmarkedMaxAgeMs?: number;
}

/**
 * Removes every directory under `root` that belongs to no live process: one whose owner is gone,
 * and one without an owner that is older than `unmarkedMaxAgeMs`. Files are left alone, and so
 * is whatever cannot be inspected. Returns the paths removed. A missing root is empty.
 */
export async function sweepScratch(root: string, options: SweepOptions = {}): Promise<string[]> {
  const maxAge = options.unmarkedMaxAgeMs ?? UNMARKED_MAX_AGE_MS;
  const p = platform();
  let names: string[];
  try {
    names = await p.readDir(root);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names.sort()) {
    const path = joinPath(root, name);
    try {
      const info = await p.stat(path);
      if (!info.isDirectory) continue;
      const owner = scratchOwner(name);
      const stale = owner
        ? !(await ownerAlive(owner))
        : info.mtimeMs !== null && Date.now() - info.mtimeMs > maxAge;
      if (!stale) continue;
      await p.remove(path);
      removed.push(path);
    } catch {
      // Gone already, or removed by another host sweeping at the same time.
    }
  }
  return removed;
}

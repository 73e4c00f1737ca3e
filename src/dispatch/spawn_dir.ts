/**
 * The spawn-time check of a call's working directory. A run's or task's workdir is checked
 * (for a remote caller against its owner's roots) and recorded at its real path when it
 * starts; an agent of that run, a checkout or a local user may later rename a directory and
 * leave a symbolic link with its name. So right before a process starts, the call's directory
 * is resolved again, every link followed, and must still lie inside the directory that was
 * checked; the process then starts in that real path, never in the recorded string.
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import { platform } from "../platform/mod.ts";

/** Whether `path` is `root` or lies under it (both real, absolute paths). */
export function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`);
}

/**
 * The real path to start a process in for a call whose directory is `cwd`: its real path now,
 * when that is a directory inside `root` (the real path checked when the run or task started;
 * any place when absent). A `forbidden` SvcError otherwise, which names no host path (a remote
 * caller must not learn where a link leads).
 */
export async function spawnDir(cwd: string, root: string | undefined): Promise<string> {
  const p = platform();
  const real = await p.realPath(cwd).catch(() => undefined);
  if (real === undefined) {
    throw new SvcError(
      "invalid_request",
      "Cannot start the call: its working directory no longer exists",
    );
  }
  if (root !== undefined && !within(real, root)) {
    throw new SvcError(
      "forbidden",
      "Cannot start the call: its working directory now leads outside the directory checked when the run or task started (a symbolic link replaced a directory on its path), so nothing was started there",
    );
  }
  const info = await p.stat(real).catch(() => undefined);
  if (!info?.isDirectory) {
    throw new SvcError(
      "invalid_request",
      "Cannot start the call: its working directory is not a directory",
    );
  }
  return real;
}

/**
 * The real path of a directory svc made for a call (a session's, a scratch one) under `root`:
 * it must be a directory itself, not a link, and lie inside `root`'s real path, since the agent
 * of an earlier turn could have replaced it.
 */
export async function ownDir(path: string, root: string): Promise<string> {
  const p = platform();
  const own = await p.fileIdentity(path).catch(() => undefined);
  const [real, realRoot] = await Promise.all([
    p.realPath(path).catch(() => undefined),
    p.realPath(root).catch(() => undefined),
  ]);
  if (
    !own?.isDirectory || own.isSymlink || real === undefined || realRoot === undefined ||
    !within(real, realRoot)
  ) {
    throw new SvcError(
      "forbidden",
      "Cannot start the call: the directory svc keeps for it was replaced (by a symbolic link or a file), so nothing was started there",
    );
  }
  return real;
}

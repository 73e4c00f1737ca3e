/**
 * Reading the very file that was checked. A script file (a run's `scriptPath` or `name`, a
 * `workflow()` ref, a meta-name scan) is found at its real path and checked to lie where it
 * must; reading it again by path would let a swap between the check and the read (a folder on
 * the way replaced by a link that leads out) hand over another file. So the file is opened
 * once, and read from that handle only when the handle's identity (device and inode) is the
 * identity of the checked real path, and that path is still its own real path (no link on the
 * way) after the open.
 * @module
 */
import { SvcError } from "../errors/mod.ts";
import { type FileIdentity, platform } from "../platform/mod.ts";

/** Options of {@linkcode readCheckedFile}. */
export interface CheckedReadOptions {
  /** Largest file read; a larger one is refused. */
  maxBytes: number;
  /** How messages name the file (never its host path): `'review.js'`. */
  shown: string;
}

function same(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev !== null && a.ino !== null && a.dev === b.dev && a.ino === b.ino;
}

/**
 * The text of the file at `real`, a real path that was checked: read from one open handle,
 * whose identity must be that of `real` as it stands after the open. An SvcError
 * (`invalid_argument`) when the file changed, is no regular file, or is over the limit.
 */
export async function readCheckedFile(real: string, options: CheckedReadOptions): Promise<string> {
  const p = platform();
  const swapped = () =>
    new SvcError(
      "invalid_argument",
      `${options.shown} changed after it was checked (a symbolic link or another file now stands on its path), so it was not read`,
    );
  let file;
  try {
    file = await p.openRead(real);
  } catch {
    throw swapped();
  }
  try {
    const opened = await file.identity();
    // After the open: the checked path must still be its own real path, and name the file held.
    const now = await p.realPath(real).catch(() => undefined);
    const there = await p.fileIdentity(real).catch(() => undefined);
    if (now !== real || there === undefined || there.isSymlink || !same(opened, there)) {
      throw swapped();
    }
    if (!opened.isFile) {
      throw new SvcError("invalid_argument", `${options.shown} is not a regular file`);
    }
    if (opened.size > options.maxBytes) {
      throw new SvcError("invalid_argument", `${options.shown} is over ${options.maxBytes} bytes`);
    }
    try {
      return await file.readText(options.maxBytes);
    } catch {
      throw new SvcError("invalid_argument", `${options.shown} could not be read`);
    }
  } finally {
    file.close();
  }
}

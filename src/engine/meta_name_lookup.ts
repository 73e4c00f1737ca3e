/**
 * Finding a saved workflow by its `meta.name`, as Claude Code's Workflow tool does: the `.js`
 * files of one workflows folder are read for the name their `export const meta` gives. Bounded,
 * because a folder is the project's and may hold anything: at most
 * {@linkcode MAX_SCANNED_FILES} files (in name order), none over {@linkcode MAX_SCANNED_BYTES},
 * none whose real path leaves the folders it must stay in, and of each only the meta literal
 * is parsed; nothing is evaluated.
 * @module
 */
import { joinPath, platform } from "../platform/mod.ts";
import { readCheckedFile } from "../workspace/mod.ts";
import { metaNameOf } from "./script_check.ts";

/** Most `.js` files of one folder whose meta is read when a name is looked up. */
export const MAX_SCANNED_FILES = 256;
/** Largest file whose meta is read: Claude Code's limit of a script's size. */
export const MAX_SCANNED_BYTES = 512 * 1024;

function inside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

/** The real paths of `dirs`; undefined when one of them does not exist. */
async function realDirs(dirs: readonly string[]): Promise<string[] | undefined> {
  const out: string[] = [];
  for (const dir of dirs) {
    try {
      out.push(await platform().realPath(dir));
    } catch {
      return undefined;
    }
  }
  return out;
}

/** The real path of `path` when it is a file small enough to read inside every one of `roots`. */
async function readable(path: string, roots: readonly string[]): Promise<string | undefined> {
  const p = platform();
  try {
    const real = await p.realPath(path);
    if (!roots.every((root) => inside(real, root))) return undefined;
    const info = await p.stat(real);
    return info.isFile && info.size <= MAX_SCANNED_BYTES ? real : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The real path of the first `.js` file of `dir` (in name order) whose `meta.name` is `name`,
 * reading only files whose real path stays inside every folder of `within` (a link out of the
 * project is skipped, not followed). Undefined when none is.
 */
export async function fileWithMetaName(
  dir: string,
  name: string,
  within: readonly string[],
): Promise<string | undefined> {
  const p = platform();
  const roots = await realDirs(within);
  if (roots === undefined) return undefined;
  const entries = await p.readDir(dir).catch(() => [] as string[]);
  const files = entries.filter((entry) => entry.endsWith(".js")).sort()
    .slice(0, MAX_SCANNED_FILES);
  for (const file of files) {
    const real = await readable(joinPath(dir, file), roots);
    if (real === undefined) continue;
    const source = await readCheckedFile(real, { maxBytes: MAX_SCANNED_BYTES, shown: file })
      .catch(() => undefined);
    if (source !== undefined && metaNameOf(source) === name) return real;
  }
  return undefined;
}

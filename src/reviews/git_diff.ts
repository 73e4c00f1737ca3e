import { type GitPlace, safeGit } from "../worktrees/mod.ts";
import { SvcError } from "../errors/mod.ts";
import { platform } from "../platform/mod.ts";

/** How much of a diff a review takes. */
export const DIFF_LIMITS = {
  /** Changed files reviewed; later ones are counted as skipped. */
  files: 50,
  /** Characters of one file's patch; a longer one is cut and marked `truncated`. */
  patchChars: 32 * 1024,
  /** Bytes of `git diff` output read; git is stopped past it and the last file marked `truncated`. */
  totalBytes: 1024 * 1024,
} as const;

/** Longest git ref a review accepts as its base. */
export const REF_LIMIT = 200;

/** One changed file as the review workflow receives it. */
export interface DiffFile {
  /** Its path, relative to the reviewed directory. */
  path: string;
  /** Its unified diff (`git diff` output for this file), possibly cut. */
  patch: string;
  /** Present when the patch was cut to the limits. */
  truncated?: true;
}

/** The changes of a working directory against a commit. */
export interface WorkdirDiff {
  /** The directory's real path. */
  workdir: string;
  /** The commit the base ref named. */
  commit: string;
  /** The changed files, up to the file limit. */
  files: DiffFile[];
  /** Changed files past the file limit. */
  skipped_files: number;
  /** Whether some patch was cut. */
  truncated: boolean;
}

// Branch and tag names, `HEAD~2`, `v1.2^`, `main@{1}`, commit ids. Not `-x` (an option), not
// `a..b` (a range), not `HEAD:path` (a blob), nothing with spaces or control characters.
const REF = /^[A-Za-z0-9_][A-Za-z0-9_./~^@{}+-]*$/;

function shown(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

/** Refuses a base ref that is not a plain revision: it is a caller's string on git's command line. */
export function checkRef(ref: string): void {
  if (ref.length === 0 || ref.length > REF_LIMIT || !REF.test(ref) || ref.includes("..")) {
    throw new SvcError(
      "invalid_argument",
      `Cannot review against ${
        shown(ref)
      }: 'base' must be a branch, tag, commit or revision like HEAD~1 (at most ${REF_LIMIT} characters, no '..', no leading '-')`,
    );
  }
}

/** The real path of an existing directory, or an `invalid_argument` refusal. */
async function realDir(workdir: string): Promise<string> {
  const p = platform();
  try {
    const real = await p.realPath(workdir);
    if ((await p.stat(real)).isDirectory) return real;
  } catch {
    // Refused below.
  }
  throw new SvcError(
    "invalid_argument",
    `Cannot review ${shown(workdir)}: it is not an existing directory`,
  );
}

/** The git directory and work tree holding `dir`, or an `invalid_argument` refusal. */
async function repositoryOf(dir: string): Promise<GitPlace> {
  const found = await safeGit(["rev-parse", "--absolute-git-dir", "--show-toplevel"], {
    cwd: dir,
  });
  const [gitDir, workTree] = found.stdout.split("\n");
  if (found.code !== 0 || !gitDir || !workTree) {
    throw new SvcError(
      "invalid_argument",
      `Cannot review ${shown(dir)}: it is not in a git repository with a working tree`,
    );
  }
  return { cwd: dir, gitDir, workTree };
}

/** Undoes git's C-style quoting of a path (`"a\\tb"`), which it uses for unusual characters. */
function unquote(path: string): string {
  if (!path.startsWith('"') || !path.endsWith('"')) return path;
  const bytes: number[] = [];
  const body = path.slice(1, -1);
  const simple: Record<string, number> = { n: 10, t: 9, r: 13, b: 8, f: 12, a: 7, v: 11 };
  for (let i = 0; i < body.length; i++) {
    const char = body[i]!;
    if (char !== "\\") {
      bytes.push(...new TextEncoder().encode(char));
      continue;
    }
    const next = body[i + 1] ?? "";
    if (/[0-7]/.test(next)) {
      bytes.push(parseInt(body.slice(i + 1, i + 4), 8));
      i += 3;
    } else {
      bytes.push(simple[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** The path a file section of `git diff` is about: its new name, or its old one when deleted. */
function pathOf(section: string): string {
  const lines = section.split("\n", 12);
  const after = lines.find((line) => line.startsWith("+++ "))?.slice(4);
  const before = lines.find((line) => line.startsWith("--- "))?.slice(4);
  const renamed = lines.find((line) => line.startsWith("rename to "))?.slice(10);
  const named = after !== undefined && after !== "/dev/null"
    ? after
    : before !== undefined && before !== "/dev/null"
    ? before
    : undefined;
  if (named !== undefined) return unquote(named).replace(/^[ab]\//, "");
  if (renamed !== undefined) return unquote(renamed);
  // Binary and mode-only changes: `diff --git a/<p> b/<p>`, both halves the same.
  const header = (lines[0] ?? "").slice("diff --git ".length);
  const half = header.slice((header.length + 1) / 2);
  return unquote(half).replace(/^b\//, "");
}

/**
 * The uncommitted and committed changes of `workdir` against `base` (`git diff <base>`, for
 * the files under `workdir`), bounded by {@linkcode DIFF_LIMITS}. The ref is checked, then
 * resolved to a commit, and only that commit id reaches the diff. Git runs as `safeGit` runs
 * it: nothing the repository's configuration names runs. Untracked files are not part of it.
 */
export async function diffWorkdir(workdir: string, base: string): Promise<WorkdirDiff> {
  checkRef(base);
  const dir = await realDir(workdir);
  const place = await repositoryOf(dir);
  const resolved = await safeGit(
    ["rev-parse", "--verify", "--quiet", "--end-of-options", `${base}^{commit}`],
    place,
  );
  const commit = resolved.stdout.trim();
  if (resolved.code !== 0 || !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(commit)) {
    throw new SvcError(
      "invalid_argument",
      `Cannot review ${shown(dir)} against ${shown(base)}: it names no commit of the repository`,
    );
  }
  const diff = await safeGit(
    [
      "diff",
      "--no-color",
      "--no-ext-diff",
      "--no-textconv",
      "--relative",
      "--src-prefix=a/",
      "--dst-prefix=b/",
      commit,
      "--",
    ],
    place,
    { maxStdoutBytes: DIFF_LIMITS.totalBytes },
  );
  if (diff.code !== 0 && !diff.truncated) {
    throw new SvcError(
      "invalid_argument",
      `Cannot review ${shown(dir)}: git diff failed: ${diff.stderr.trim().slice(0, 300)}`,
    );
  }
  const sections = diff.stdout.split(/^(?=diff --git )/m).filter((s) =>
    s.startsWith("diff --git ")
  );
  const files: DiffFile[] = [];
  let truncated = false;
  for (const [index, section] of sections.slice(0, DIFF_LIMITS.files).entries()) {
    const cut = section.length > DIFF_LIMITS.patchChars ||
      (diff.truncated === true && index === sections.length - 1);
    truncated ||= cut;
    files.push({
      path: pathOf(section),
      patch: section.slice(0, DIFF_LIMITS.patchChars),
      ...(cut ? { truncated: true as const } : {}),
    });
  }
  return {
    workdir: dir,
    commit,
    files,
    skipped_files: Math.max(0, sections.length - DIFF_LIMITS.files),
    truncated,
  };
}

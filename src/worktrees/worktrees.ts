import { SvcError } from "../errors/mod.ts";
import { newId } from "../ledger/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import { safeGit } from "./safe_git.ts";

/** A worktree a call runs in. */
export interface Worktree {
  /** The worktree's id, also the last part of its branch and directory. */
  id: string;
  /** The worktree's directory, under `$SVC_HOME/worktrees/`. */
  path: string;
  /** Its branch, `svc/<id>`. */
  branch: string;
  /** The repository it belongs to (its top-level directory). */
  repo: string;
  /** The repository's git directory (`.git`), as the host found it before any agent ran. */
  repoGitDir: string;
  /** The worktree's own git directory, inside the repository's. */
  gitDir: string;
}

/** What became of a worktree after its call: removed when clean, kept with its changes. */
export interface WorktreeResult {
  /** The worktree's directory. */
  path: string;
  /** Its branch, which keeps the changes when the worktree is kept. */
  branch: string;
  /** Whether it was kept: the call changed something (or git could not tell). */
  kept: boolean;
  /** `git status --short` and `git diff --stat` of a kept worktree. */
  diff?: string;
}

/** A worktree left behind: kept with changes, or by a host that died. */
export interface StaleWorktree {
  /** The worktree's id. */
  id: string;
  /** The worktree's directory. */
  path: string;
  /** Why it is stale: kept with changes, or its host is gone. */
  reason: string;
}

/**
 * What the host knows of a worktree, written beside it at creation: the repository and the
 * worktree's git directory as the host computed them (so that no later git command has to ask
 * the worktree's own `.git` file, which the agent could have replaced), and while a call uses
 * it, the pid of its host.
 */
interface WorktreeRecord {
  repo: string;
  gitDir: string;
  branch: string;
  pid?: number;
}

function recordOf(value: unknown): WorktreeRecord | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const { repo, gitDir, branch, pid } = value as Record<string, unknown>;
  if (typeof repo !== "string" || typeof gitDir !== "string" || typeof branch !== "string") {
    return undefined;
  }
  return { repo, gitDir, branch, ...(typeof pid === "number" ? { pid } : {}) };
}

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1) ?? "git failed";
}

/**
 * Git worktrees for `isolation: "worktree"`: each call gets a fresh worktree of `workdir`'s
 * repository on a branch of its own. A worktree in use is marked by a lock file naming its
 * host's pid, and is never removed; `stale()` lists the ones left behind for cleanup.
 */
export class WorktreeManager {
  readonly #root: string;
  readonly #inUse = new Set<string>();

  /** Keeps worktrees under `<home>/worktrees/`. */
  constructor(options: { home: string }) {
    this.#root = joinPath(options.home, "worktrees");
  }

  /** Creates a worktree of the repository around `workdir`, at its HEAD, on branch `svc/<id>`. */
  async create(workdir: string): Promise<Worktree> {
    const found = await safeGit(
      ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"],
      { cwd: workdir },
    ).catch((error) => {
      if (error instanceof SvcError) throw error;
      throw new SvcError("invalid_request", `Cannot use a worktree: '${workdir}' cannot be read`);
    });
    const [repo, repoGitDir] = found.stdout.trim().split("\n");
    if (found.code !== 0 || !repo || !repoGitDir) {
      throw new SvcError(
        "invalid_request",
        `Cannot use a worktree: '${workdir}' is not inside a git repository`,
      );
    }
    const id = newId("wt");
    const path = joinPath(this.#root, id);
    const branch = `svc/${id}`;
    // `git worktree add` names the worktree's git directory after the last part of its path.
    const gitDir = joinPath(repoGitDir, "worktrees", id);
    const p = platform();
    await p.mkdir(this.#root);
    await this.#writeRecord(id, { repo, gitDir, branch, pid: p.pid() });
    this.#inUse.add(id);
    const inRepo = { cwd: repo, gitDir: repoGitDir, workTree: repo };
    const added = await safeGit(["worktree", "add", "-b", branch, path, "HEAD"], inRepo);
    if (added.code !== 0) {
      this.#inUse.delete(id);
      await p.remove(this.#recordPath(id)).catch(() => {});
      throw new SvcError(
        "internal",
        `Cannot create a worktree of ${repo}: ${lastLine(added.stderr)}`,
      );
    }
    return { id, path, branch, repo, repoGitDir, gitDir };
  }

  /** Ends a call's use of its worktree: removes it when unchanged, else keeps it with a diff summary. */
  async finish(worktree: Worktree): Promise<WorktreeResult> {
    const inTree = { cwd: worktree.path, gitDir: worktree.gitDir, workTree: worktree.path };
    const inRepo = { cwd: worktree.repo, gitDir: worktree.repoGitDir, workTree: worktree.repo };
    let kept = true;
    try {
      const status = await safeGit(["status", "--porcelain"], inTree);
      const changed = status.code !== 0 || status.stdout.trim() !== "";
      if (!changed) {
        await safeGit(["worktree", "remove", worktree.path], inRepo);
        await safeGit(["branch", "-D", worktree.branch], inRepo);
        kept = false;
        return { path: worktree.path, branch: worktree.branch, kept: false };
      }
      const stat = await safeGit(
        ["diff", "--no-ext-diff", "--no-textconv", "--stat", "HEAD"],
        inTree,
      );
      const diff = [status.stdout.trim(), stat.stdout.trim()].filter(Boolean).join("\n");
      return {
        path: worktree.path,
        branch: worktree.branch,
        kept: true,
        diff: diff.slice(0, 8192),
      };
    } finally {
      this.#inUse.delete(worktree.id);
      const p = platform();
      if (kept) {
        // Kept for a person to look at: the record stays, without a pid, for `svc worktree remove`.
        const { repo, gitDir, branch } = worktree;
        await this.#writeRecord(worktree.id, { repo, gitDir, branch }).catch(() => {});
      } else await p.remove(this.#recordPath(worktree.id)).catch(() => {});
    }
  }

  #recordPath(id: string): string {
    return joinPath(this.#root, `${id}.lock`);
  }

  async #writeRecord(id: string, record: WorktreeRecord): Promise<void> {
    await platform().writeTextFile(this.#recordPath(id), JSON.stringify(record));
  }

  async #readRecord(id: string): Promise<WorktreeRecord | undefined> {
    try {
      return recordOf(JSON.parse(await platform().readTextFile(this.#recordPath(id))));
    } catch {
      return undefined;
    }
  }

  /** Worktrees under `$SVC_HOME/worktrees` that no live host is using. */
  async stale(): Promise<StaleWorktree[]> {
    const p = platform();
    let names: string[];
    try {
      names = await p.readDir(this.#root);
    } catch {
      return [];
    }
    const out: StaleWorktree[] = [];
    for (const name of names.filter((n) => !n.endsWith(".lock")).sort()) {
      if (this.#inUse.has(name)) continue;
      const record = await this.#readRecord(name);
      if (record?.pid !== undefined && p.processAlive(record.pid) !== false) continue;
      out.push({
        id: name,
        path: joinPath(this.#root, name),
        reason: record?.pid !== undefined
          ? `its host (pid ${record.pid}) is gone`
          : "kept with changes",
      });
    }
    return out;
  }

  /**
   * Removes a stale worktree and its branch (never one in use). Git is pointed at the
   * repository recorded when the worktree was made; without a record, only the directory goes.
   */
  async remove(id: string): Promise<void> {
    const stale = (await this.stale()).find((w) => w.id === id);
    if (!stale) {
      throw new SvcError("not_found", `Cannot remove worktree '${id}': no such stale worktree`);
    }
    const record = await this.#readRecord(id);
    // The directory goes first, by the host's own hand: `git worktree remove` would consult the
    // worktree's `.git` file. Pruning then forgets it, which frees its branch for deletion.
    await platform().remove(stale.path).catch(() => {});
    if (record) {
      const repoGitDir = record.gitDir.replace(/\/worktrees\/[^/]+$/, "");
      const inRepo = { cwd: record.repo, gitDir: repoGitDir, workTree: record.repo };
      await safeGit(["worktree", "prune"], inRepo);
      await safeGit(["branch", "-D", record.branch], inRepo);
    }
    await platform().remove(this.#recordPath(id)).catch(() => {});
  }
}

import { SvcError } from "../errors/mod.ts";
import { newId } from "../ledger/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";

/** A worktree a call runs in. */
export interface Worktree {
  id: string;
  /** The worktree's directory, under `$SVC_HOME/worktrees/`. */
  path: string;
  branch: string;
  /** The repository it belongs to. */
  repo: string;
}

/** What became of a worktree after its call: removed when clean, kept with its changes. */
export interface WorktreeResult {
  path: string;
  branch: string;
  kept: boolean;
  /** `git status --short` and `git diff --stat` of a kept worktree. */
  diff?: string;
}

/** A worktree left behind: kept with changes, or by a host that died. */
export interface StaleWorktree {
  id: string;
  path: string;
  /** Why it is stale: kept with changes, or its host is gone. */
  reason: string;
}

async function git(
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = platform();
  const command = p.which("git");
  if (!command) throw new SvcError("unavailable", "Cannot use a worktree: git is not installed");
  const child = p.spawn(command, { args, cwd });
  await child.stdin.close().catch(() => {});
  const [stdout, stderr, status] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.status,
  ]);
  return { code: status.code, stdout, stderr };
}

/**
 * Git worktrees for `isolation: "worktree"`: each call gets a fresh worktree of `workdir`'s
 * repository on a branch of its own. A worktree in use is marked by a lock file naming its
 * host's pid, and is never removed; `stale()` lists the ones left behind for cleanup.
 */
export class WorktreeManager {
  readonly #root: string;
  readonly #inUse = new Set<string>();

  constructor(options: { home: string }) {
    this.#root = joinPath(options.home, "worktrees");
  }

  /** Creates a worktree of the repository around `workdir`, at its HEAD, on branch `svc/<id>`. */
  async create(workdir: string): Promise<Worktree> {
    const top = await git(["rev-parse", "--show-toplevel"], workdir).catch((error) => {
      if (error instanceof SvcError) throw error;
      throw new SvcError("invalid_request", `Cannot use a worktree: '${workdir}' cannot be read`);
    });
    if (top.code !== 0) {
      throw new SvcError(
        "invalid_request",
        `Cannot use a worktree: '${workdir}' is not inside a git repository`,
      );
    }
    const repo = top.stdout.trim();
    const id = newId("wt");
    const path = joinPath(this.#root, id);
    const branch = `svc/${id}`;
    const p = platform();
    await p.mkdir(this.#root);
    await p.writeTextFile(
      joinPath(this.#root, `${id}.lock`),
      JSON.stringify({ pid: p.pid(), repo, branch }),
    );
    this.#inUse.add(id);
    const added = await git(["worktree", "add", "-b", branch, path, "HEAD"], repo);
    if (added.code !== 0) {
      this.#inUse.delete(id);
      await p.remove(joinPath(this.#root, `${id}.lock`)).catch(() => {});
      throw new SvcError(
        "internal",
        `Cannot create a worktree of ${repo}: ${
          added.stderr.trim().split("\n").at(-1) ?? "git failed"
        }`,
      );
    }
    return { id, path, branch, repo };
  }

  /** Ends a call's use of its worktree: removes it when unchanged, else keeps it with a diff summary. */
  async finish(worktree: Worktree): Promise<WorktreeResult> {
    const p = platform();
    try {
      const status = await git(["status", "--porcelain"], worktree.path);
      const changed = status.code !== 0 || status.stdout.trim() !== "";
      if (!changed) {
        await git(["worktree", "remove", worktree.path], worktree.repo);
        await git(["branch", "-D", worktree.branch], worktree.repo);
        return { path: worktree.path, branch: worktree.branch, kept: false };
      }
      const stat = await git(["diff", "--stat", "HEAD"], worktree.path);
      const diff = [status.stdout.trim(), stat.stdout.trim()].filter(Boolean).join("\n");
      return {
        path: worktree.path,
        branch: worktree.branch,
        kept: true,
        diff: diff.slice(0, 8192),
      };
    } finally {
      this.#inUse.delete(worktree.id);
      await p.remove(joinPath(this.#root, `${worktree.id}.lock`)).catch(() => {});
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
      let lock: { pid: number } | undefined;
      try {
        lock = JSON.parse(await p.readTextFile(joinPath(this.#root, `${name}.lock`)));
      } catch {
        lock = undefined;
      }
      if (lock && p.processAlive(lock.pid) !== false) continue;
      out.push({
        id: name,
        path: joinPath(this.#root, name),
        reason: lock ? `its host (pid ${lock.pid}) is gone` : "kept with changes",
      });
    }
    return out;
  }

  /** Removes a stale worktree and its branch (never one in use). */
  async remove(id: string): Promise<void> {
    const stale = (await this.stale()).find((w) => w.id === id);
    if (!stale) {
      throw new SvcError("not_found", `Cannot remove worktree '${id}': no such stale worktree`);
    }
    const top = await git(["rev-parse", "--path-format=absolute", "--git-common-dir"], stale.path);
    const repo = top.code === 0 ? top.stdout.trim().replace(/\/\.git$/, "") : undefined;
    if (repo) {
      await git(["worktree", "remove", "--force", stale.path], repo);
      await git(["branch", "-D", `svc/${id}`], repo);
    } else await platform().remove(stale.path);
    await platform().remove(joinPath(this.#root, `${id}.lock`)).catch(() => {});
  }
}

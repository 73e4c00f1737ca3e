/**
 * Worktrees: the git worktree an `isolation: "worktree"` call runs in, and the one way the host
 * runs git (`safeGit`: nothing a repository configures is run).
 *
 * Layer: below dispatch (the dispatcher opens and finishes a call's worktree); it imports only
 * the ledger's id maker, the platform and the error table.
 * @module
 */
export { type GitPlace, type GitResult, safeGit } from "./safe_git.ts";
export {
  type StaleWorktree,
  type Worktree,
  WorktreeManager,
  type WorktreeResult,
} from "./worktrees.ts";

/**
 * Where a harness call runs when it names no working directory: never the host's own (from a
 * checkout, svc's source tree, which a writing agent could rewrite), but a fresh empty
 * directory `call-*` directly under the scratch root (`$SVC_HOME/tmp`), named after its host so
 * that the next host removes it if this one dies, and removed when the call ends. The turns of
 * a session share one directory instead, under the session root (`$SVC_HOME/session_dirs`),
 * kept for the session's next turn: Claude Code and Gemini find a session by the directory it
 * ran in.
 * @module
 */
import { joinPath, platform } from "../../platform/mod.ts";
import { makeScratchDir } from "../../scratch/mod.ts";
import { ownDir, spawnDir } from "../spawn_dir.ts";

/** The directory a call runs in, and how to give it back. */
export interface WorkingDir {
  path: string;
  /** Removes a call's scratch directory; nothing for a given or a session's directory. */
  release(): Promise<void>;
}

/** Prefix of the per-call scratch directories (a sweeper removes orphans by it). */
export const CALL_DIR_PREFIX = "call-";

async function sessionKey(provider: string, session: string): Promise<string> {
  const bytes = new TextEncoder().encode(`${provider}\u0000${session}`);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...digest.slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Options of {@linkcode workingDir}. */
export interface WorkingDirOptions {
  /** The call's directory, as recorded. */
  cwd?: string;
  /** The real path checked when the run or task started, which `cwd` must still lie inside. */
  cwdRoot?: string;
  /** The session of a session's turn. */
  session?: string;
  /** Where a call without a directory gets a fresh one. */
  root: string;
  /** Where a session's turns share one. */
  sessionRoot: string;
}

/**
 * The working directory of one call, checked right before its process starts and given as a
 * real path to start it in: `cwd` when given (inside `cwdRoot`, see `spawnDir`); else, for a
 * session's turn, its own directory under `sessionRoot`; else a new empty `call-*` directory
 * under `root`. A directory svc keeps must not have been replaced by a link.
 */
export async function workingDir(
  provider: string,
  options: WorkingDirOptions,
): Promise<WorkingDir> {
  const p = platform();
  if (options.cwd !== undefined) {
    const path = await spawnDir(options.cwd, options.cwdRoot);
    return { path, release: () => Promise.resolve() };
  }
  if (options.session !== undefined) {
    const key = await sessionKey(provider, options.session);
    const kept = joinPath(options.sessionRoot, `session-${key}`);
    await p.mkdir(kept);
    return { path: await ownDir(kept, options.sessionRoot), release: () => Promise.resolve() };
  }
  const made = await makeScratchDir(options.root, { prefix: CALL_DIR_PREFIX });
  let path: string;
  try {
    path = await ownDir(made, options.root);
  } catch (error) {
    await p.remove(made).catch(() => {});
    throw error;
  }
  return { path, release: () => p.remove(made).catch(() => {}) };
}

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

/**
 * The working directory of one call: `cwd` when given; else, for a session's turn, its own
 * directory under `sessionRoot`; else a new empty `call-*` directory under `root`.
 */
export async function workingDir(
  provider: string,
  options: { cwd?: string; session?: string; root: string; sessionRoot: string },
): Promise<WorkingDir> {
  const p = platform();
  if (options.cwd !== undefined) return { path: options.cwd, release: () => Promise.resolve() };
  if (options.session !== undefined) {
    const key = await sessionKey(provider, options.session);
    const path = joinPath(options.sessionRoot, `session-${key}`);
    await p.mkdir(path);
    return { path, release: () => Promise.resolve() };
  }
  const path = await makeScratchDir(options.root, { prefix: CALL_DIR_PREFIX });
  return { path, release: () => p.remove(path).catch(() => {}) };
}

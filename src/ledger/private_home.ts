import { platform } from "../platform/mod.ts";

/** Data directories already warned about: once per directory and process is enough. */
const warned = new Set<string>();

/**
 * Warns on stderr, once per process, when the data directory can be reached by other local
 * users: svc creates it private, but one made before (or by hand) keeps its mode, and every
 * owner's scripts, inputs and results lie under it. Nothing is changed: the mode is the
 * operator's to fix.
 */
export async function warnIfHomeShared(home: string): Promise<void> {
  if (warned.has(home)) return;
  const p = platform();
  let mode: number | null;
  try {
    mode = (await p.stat(home)).mode;
  } catch {
    // Opening the ledger reports an unusable directory better than this check would.
    return;
  }
  if (mode === null || (mode & 0o077) === 0) return;
  warned.add(home);
  p.writeStderr(
    `svc: warning: the data directory ${home} (SVC_HOME) is open to other users of this machine ` +
      `(mode ${mode.toString(8).padStart(4, "0")}), and so are the scripts, inputs and results ` +
      `under it; make it private with: chmod 700 ${home}\n`,
  );
}

import { joinPath, platform } from "../platform/mod.ts";
import type { SharedKvStore } from "../platform/postgres.ts";

/**
 * Where the ledger keeps what does not fit its records: a run's script and input, and values
 * too large to keep inline. Paths are relative (`runs/<id>/script.js`) and made by the ledger
 * from ids it checked, never from a caller's text. On the KV backend they are files under
 * `SVC_HOME`; on a shared ledger they are rows of the database, so any host reads them.
 */
export interface LedgerFiles {
  /** Writes a file whole: a reader sees it complete or not at all. */
  write(path: string, text: string): Promise<void>;
  /** A file's text, or undefined when there is none. */
  read(path: string): Promise<string | undefined>;
  /** Where a path is, for messages. */
  where(path: string): string;
}

/** Files under `home`, written to a temporary name and renamed into place. */
export function localFiles(home: string): LedgerFiles {
  const at = (path: string) => joinPath(home, ...path.split("/"));
  return {
    async write(path, text) {
      const p = platform();
      const target = at(path);
      const dir = target.slice(0, target.lastIndexOf("/"));
      await p.mkdir(dir);
      const temp = `${dir}/.${target.slice(dir.length + 1)}.tmp`;
      await p.writeTextFile(temp, text);
      await p.rename(temp, target);
    },
    async read(path) {
      try {
        return await platform().readTextFile(at(path));
      } catch (error) {
        if (error instanceof Error && error.name === "NotFound") return undefined;
        throw error;
      }
    },
    where: (path) => at(path),
  };
}

/** Files in the shared ledger's database. */
export function sharedFiles(store: SharedKvStore): LedgerFiles {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  return {
    write: (path, text) => store.writeFile(path, encoder.encode(text)),
    async read(path) {
      const bytes = await store.readFile(path);
      return bytes === undefined ? undefined : decoder.decode(bytes);
    },
    where: (path) => `${path} in the shared ledger`,
  };
}

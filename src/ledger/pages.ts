import { SvcError } from "../errors/mod.ts";
import type { KvKey, KvStore } from "../platform/mod.ts";
import { isId } from "./ids.ts";
import { fromBytes } from "./json_bytes.ts";

/** Options of a paged, newest-first listing. */
export interface PageOptions {
  /** Only this owner's records; every owner's when absent. */
  owner?: string;
  /** Most records returned. */
  limit: number;
  /** The id of the last record of the previous page: the page starts after it. */
  cursor?: string;
}

/** One page of a newest-first listing. */
export interface Page<T> {
  /** The records, newest first. */
  items: T[];
  /** What to pass as `cursor` for the next page; null when this page is the last. */
  next_cursor: string | null;
}

const ALNUM = "0123456789abcdefghijklmnopqrstuvwxyz";

/**
 * A key part that sorts an id's records newest first in KV's forward order: ids sort by creation
 * time ({@linkcode newId}), and each character of the body is mirrored in `[0-9a-z]`. KV lists
 * forward from a start key, so a cursor is a start key and a page costs what it holds, however
 * many records come before it.
 */
export function newestFirstKey(id: string): string {
  const at = id.indexOf("_");
  let body = "";
  for (const char of id.slice(at + 1)) body += ALNUM[35 - ALNUM.indexOf(char)] ?? char;
  return `${id.slice(0, at + 1)}${body}`;
}

/** Refuses a cursor that is no id of `prefix`: it is a caller's string and becomes a key. */
export function checkCursor(prefix: string, cursor: string | undefined): void {
  if (cursor !== undefined && !isId(prefix, cursor)) {
    throw new SvcError(
      "invalid_request",
      `Cannot list: 'cursor' must be an id like ${prefix}_01abc from a previous page`,
    );
  }
}

/**
 * Lists records kept under `[...table, newestFirstKey(id)]` (and, per owner, an index
 * `[...byOwner, owner, newestFirstKey(id)]` pointing at them), newest first, one page at a time.
 */
export async function listNewestFirst<T>(
  kv: KvStore,
  places: { table: KvKey; byOwner: KvKey; idOf: (record: T) => string },
  options: PageOptions,
): Promise<Page<T>> {
  const prefix = options.owner === undefined ? places.table : [...places.byOwner, options.owner];
  const start = options.cursor === undefined
    ? undefined
    : [...prefix, newestFirstKey(options.cursor)];
  const items: T[] = [];
  let more = false;
  const list = kv.list(prefix, {
    ...(start !== undefined ? { start } : {}),
    limit: options.limit + 2,
  });
  for await (const entry of list) {
    const keyPart = entry.key.at(-1);
    if (typeof keyPart !== "string") continue;
    // The start key is inclusive: the cursor's own record closed the previous page.
    if (start !== undefined && keyPart === start.at(-1)) continue;
    if (items.length === options.limit) {
      more = true;
      break;
    }
    const bytes = options.owner === undefined
      ? entry.value
      : (await kv.get([...places.table, keyPart])).value;
    if (bytes) items.push(fromBytes<T>(bytes));
  }
  const last = items.at(-1);
  return { items, next_cursor: more && last !== undefined ? places.idOf(last) : null };
}

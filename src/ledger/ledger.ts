import { SvcError } from "../errors/mod.ts";
import { joinPath, platform } from "../platform/mod.ts";
import { fromBytes, toBytes } from "./json_bytes.ts";
import { localFiles, sharedFiles } from "./files.ts";
import { KEYS, MIGRATIONS, SCHEMA_VERSION } from "./keys.ts";
import { warnIfHomeShared } from "./private_home.ts";
import { LedgerContext } from "./context.ts";
import { feedLedger } from "./feed.ts";
import { runDir, runLedger } from "./runs.ts";
import { taskLedger } from "./tasks.ts";
import { sessionLedger } from "./sessions.ts";
import { callLedger } from "./calls.ts";
import { hostLedger, thisMachine } from "./hosts.ts";
import { queueLedger } from "./queue.ts";
import {
  a2aTaskLedger,
  approvalLedger,
  collaborationLedger,
  daemonLedger,
  notificationLedger,
  reviewLedger,
} from "./domains.ts";
import { openStore } from "./store.ts";
import type { Ledger } from "./interface.ts";

export { INLINE_LIMIT } from "./context.ts";
export { RUN_SCAN_LIMIT } from "./runs.ts";

/** How often a ledger with readers waiting for events looks for other processes' writes, in ms. */
const POLL_MS = 25;
/**
 * The same on a shared ledger, where other hosts' writes wake readers through the database's
 * notifications: the poll only covers a notification lost while a connection was down.
 */
const SHARED_POLL_MS = 1_000;

/** Options of {@linkcode openLedger}. */
export interface OpenLedgerOptions {
  /**
   * How often readers waiting for events look for other processes' writes, in ms. Default 25;
   * 1000 on a shared ledger, where other hosts' writes wake readers through the database.
   */
  pollMs?: number;
  /**
   * The database of a ledger several hosts share (`postgres://...`, `SVC_LEDGER_URL`). Without
   * it, the ledger is the Deno KV file under `home`, this machine's alone.
   */
  url?: string;
}

/** Brings the schema of the ledger's store up to date. */
async function migrate(ctx: LedgerContext): Promise<void> {
  const entry = await ctx.kv.get(KEYS.schema);
  const version = entry.value ? fromBytes<{ version: number }>(entry.value).version : 0;
  if (version > SCHEMA_VERSION) {
    throw new SvcError(
      "internal",
      `Cannot open the ledger in ${ctx.home}: it has schema version ${version}, this svc knows up to ${SCHEMA_VERSION}`,
    );
  }
  // An empty ledger starts at the current version; older ones run the missing steps.
  for (let v = Math.max(version, 1); v < SCHEMA_VERSION; v++) await MIGRATIONS[v - 1]?.(ctx.kv);
  if (version !== SCHEMA_VERSION) {
    await ctx.kv.atomic().check(KEYS.schema, entry.versionstamp).set(
      KEYS.schema,
      toBytes({ version: SCHEMA_VERSION }),
    ).commit();
  }
}

/**
 * The ledger over one context: one object made of the domain ledgers (runs, feeds, tasks,
 * sessions, hosts, the queue, ...), each a module of functions over the shared store and
 * notifier. Several processes may open the same KV file: readers in one see the writes of
 * another, through a key every event-adding write rewrites and waiting readers poll.
 */
function composeLedger(ctx: LedgerContext): Ledger {
  let closed = false;
  return {
    home: ctx.home,
    shared: ctx.shared !== undefined,
    async close() {
      if (closed) return;
      closed = true;
      ctx.notifier.close();
      await ctx.kv.close();
    },
    runDir: (runId) => runDir(ctx, runId),
    taskDir: (taskId) => joinPath(ctx.home, "tasks", taskId),
    ...runLedger(ctx),
    ...feedLedger(ctx),
    ...hostLedger(ctx),
    ...taskLedger(ctx),
    ...sessionLedger(ctx),
    ...callLedger(ctx),
    ...reviewLedger(ctx.kv),
    ...collaborationLedger(ctx.kv),
    ...approvalLedger(ctx),
    ...queueLedger(ctx),
    ...daemonLedger(ctx),
    ...a2aTaskLedger(ctx.kv),
    ...notificationLedger(ctx.kv),
  };
}

/**
 * Opens (creating if needed) the ledger of a data directory, in a Deno KV file under it, or the
 * shared ledger in the database of `options.url`, and brings its schema up to date.
 */
export async function openLedger(home: string, options: OpenLedgerOptions = {}): Promise<Ledger> {
  await platform().mkdir(home);
  await warnIfHomeShared(home);
  const where = await thisMachine();
  const { kv, shared } = await openStore({
    ...(options.url ? { url: options.url } : {}),
    dir: home,
    file: "svc.kv",
    namespace: "ledger",
    watch: [KEYS.feedTick],
  });
  const ctx = new LedgerContext(home, kv, {
    pollMs: options.pollMs ?? (shared ? SHARED_POLL_MS : POLL_MS),
    files: shared ? sharedFiles(shared) : localFiles(home),
    ...(shared ? { shared } : {}),
    ...where,
  });
  const ledger = composeLedger(ctx);
  try {
    await migrate(ctx);
  } catch (error) {
    await ledger.close();
    throw error;
  }
  return ledger;
}

import { SvcError } from "../errors/mod.ts";
import { fromBytes, toBytes } from "./json_bytes.ts";
import { fitRecord } from "./fit.ts";
import { KEYS } from "./keys.ts";
import { checkBefore } from "./cursor.ts";
import { below, type LedgerContext } from "./context.ts";
import type { ListOptions, SessionLedger } from "./interface.ts";
import type { SessionRecord } from "./records.ts";
import type { ChatMessage } from "./chat.ts";

/** Records a new session; a name must be unique per owner. */
async function createSession(ctx: LedgerContext, session: SessionRecord): Promise<void> {
  const atomic = ctx.kv.atomic()
    .check(KEYS.session(session.session_id), null)
    .set(KEYS.session(session.session_id), toBytes(session))
    .set(KEYS.sessionsByOwner(session.owner, session.session_id), toBytes({}));
  if (session.name !== null) {
    atomic.check(KEYS.sessionName(session.owner, session.name), null)
      .set(
        KEYS.sessionName(session.owner, session.name),
        toBytes({ session_id: session.session_id }),
      );
  }
  if (!(await atomic.commit()).ok) {
    throw new SvcError(
      "conflict",
      `Cannot create session '${session.name ?? session.session_id}': it exists already`,
    );
  }
}

/** A session by id, or undefined. */
async function getSession(
  ctx: LedgerContext,
  sessionId: string,
): Promise<SessionRecord | undefined> {
  const entry = await ctx.kv.get(KEYS.session(sessionId));
  return entry.value ? fromBytes<SessionRecord>(entry.value) : undefined;
}

/** An owner's session by name, or undefined. */
async function findSession(
  ctx: LedgerContext,
  owner: string,
  name: string,
): Promise<SessionRecord | undefined> {
  const entry = await ctx.kv.get(KEYS.sessionName(owner, name));
  if (!entry.value) return undefined;
  return await getSession(ctx, fromBytes<{ session_id: string }>(entry.value).session_id);
}

/** Sessions, newest first (older than `before` when given); only `owner`'s when given. */
async function listSessions(
  ctx: LedgerContext,
  options: ListOptions = {},
): Promise<SessionRecord[]> {
  const limit = options.limit ?? 100;
  const before = options.before === undefined
    ? undefined
    : checkBefore("ses", options.before, "sessions");
  const out: SessionRecord[] = [];
  if (options.owner === undefined) {
    const prefix = KEYS.allSessions;
    for await (
      const entry of ctx.kv.list(prefix, { reverse: true, limit, ...below(prefix, before) })
    ) {
      if (entry.value) out.push(fromBytes<SessionRecord>(entry.value));
    }
    return out;
  }
  const prefix = KEYS.sessionsByOwner(options.owner);
  for await (
    const entry of ctx.kv.list(prefix, { reverse: true, limit, ...below(prefix, before) })
  ) {
    const id = entry.key.at(-1);
    const session = typeof id === "string" ? await getSession(ctx, id) : undefined;
    if (session) out.push(session);
  }
  return out;
}

/**
 * Saves a session after a turn, with the turn's messages, in one atomic write. A message over
 * what one value holds is stored clipped (saying how much was cut): the turn has run, and its
 * answer must reach the caller whatever its size.
 */
async function saveSessionTurn(
  ctx: LedgerContext,
  session: SessionRecord,
  messages: ChatMessage[],
): Promise<void> {
  const atomic = ctx.kv.atomic().set(KEYS.session(session.session_id), toBytes(session));
  let seq = (await ctx.lastSeq(KEYS.sessionMessages(session.session_id))) + 1;
  for (const message of messages) {
    atomic.set(KEYS.sessionMessages(session.session_id, seq++), fitRecord(message).bytes);
  }
  await atomic.commit();
}

/** The sessions of a ledger's context. */
export function sessionLedger(ctx: LedgerContext): SessionLedger {
  return {
    createSession: (session) => createSession(ctx, session),
    getSession: (sessionId) => getSession(ctx, sessionId),
    findSession: (owner, name) => findSession(ctx, owner, name),
    listSessions: (options) => listSessions(ctx, options),
    getSessionMessages: (sessionId) => ctx.list<ChatMessage>(KEYS.sessionMessages(sessionId)),
    saveSessionTurn: (session, messages) => saveSessionTurn(ctx, session, messages),
  };
}

import { SvcError } from "../errors/mod.ts";
import {
  type Caller,
  type ChatMessage,
  isId,
  mayAccess,
  newId,
  ownerScope,
  type SessionLedger,
  type SessionRecord,
  shownId,
} from "../ledger/mod.ts";
import {
  describeIssue,
  SESSION_NAME_LIMIT,
  type SessionCreateRequest,
  SessionCreateSchema,
  SessionNameSchema,
} from "../schemas/mod.ts";
import type {
  DispatchContext,
  Dispatcher,
  DispatchInput,
  DispatchOutcome,
} from "../dispatch/mod.ts";

/** A session with its messages, for `svc session show` and `GET /api/sessions/{id}`. */
export interface SessionDetail extends SessionRecord {
  /** An API session's history, oldest first (empty for a harness session). */
  messages: ChatMessage[];
}

/** Where a turn goes: the owner's session `ref`, and who hears which session it took. */
export type TurnContext = DispatchContext & {
  owner: string;
  ref: string;
  /** Told the session's id before its turn is dispatched (a new one's too). */
  onSession?: (sessionId: string) => void;
};

/**
 * Persistent multi-turn conversations. A session talks to one provider: a harness continues
 * its own session id (updated after every turn, as some tools hand out a new one), a model API
 * gets the stored message history. Turns of one session run one at a time.
 */
export class SessionStore {
  readonly #ledger: SessionLedger;
  readonly #locks = new Map<string, Promise<unknown>>();

  /** A store over `ledger`, where sessions and their messages live. */
  constructor(ledger: SessionLedger) {
    this.#ledger = ledger;
  }

  /** Creates a session owned by the caller. Refuses a name the owner already uses. */
  async create(input: unknown, caller: Caller): Promise<SessionRecord> {
    const parsed = SessionCreateSchema.safeParse(input ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new SvcError(
        "invalid_request",
        `Cannot create the session: '${issue.path.join(".")}' ${issue.message}`,
      );
    }
    return await this.#create(parsed.data, caller.owner);
  }

  async #create(request: SessionCreateRequest, owner: string): Promise<SessionRecord> {
    const at = new Date().toISOString();
    const session: SessionRecord = {
      session_id: newId("ses"),
      owner,
      name: request.name ?? null,
      provider: request.provider ?? null,
      profile: request.profile ?? null,
      harness_session_id: null,
      turns: 0,
      created_at: at,
      updated_at: at,
    };
    await this.#ledger.createSession(session);
    return session;
  }

  /**
   * The caller's sessions (everyone's for an administrator), newest first; with `before` (a
   * session id), only older ones. Anything but a session id as `before` is refused with
   * `invalid_request`.
   */
  list(
    caller: Caller,
    options: { limit?: number; before?: string } = {},
  ): Promise<SessionRecord[]> {
    const owner = ownerScope(caller);
    return this.#ledger.listSessions({
      ...(owner !== undefined ? { owner } : {}),
      ...(options.limit !== undefined ? { limit: options.limit } : {}),
      ...(options.before !== undefined ? { before: options.before } : {}),
    });
  }

  /**
   * A session (by id, or by a name of the caller's) with its messages; not_found alike for
   * an unknown one and for one the caller may not see.
   */
  async get(ref: string, caller: Caller): Promise<SessionDetail> {
    const found = await this.#lookup(ref, caller.owner);
    const session = found && mayAccess(caller, found.owner) ? found : undefined;
    if (!session) {
      throw new SvcError("not_found", `Cannot find session '${shownId(ref)}': no such session`);
    }
    return { ...session, messages: await this.#ledger.getSessionMessages(session.session_id) };
  }

  /** The owner's session by id or name: a turn only ever continues its own owner's sessions. */
  async #find(ref: string, owner: string): Promise<SessionRecord | undefined> {
    const session = await this.#lookup(ref, owner);
    return session && session.owner === owner ? session : undefined;
  }

  /** A session by id, or by a name of `owner`'s; a reference of no valid shape finds nothing. */
  async #lookup(ref: string, owner: string): Promise<SessionRecord | undefined> {
    if (isId("ses", ref)) return await this.#ledger.getSession(ref);
    if (ref.length > SESSION_NAME_LIMIT) return undefined;
    return await this.#ledger.findSession(owner, ref);
  }

  /**
   * Dispatches one turn of a session: `ref` is a session id, or a name, which starts a new
   * session on first use. The call goes to the session's provider and continues its history.
   * Under fake dispatch (`fakeOnly`) the turn is a shadow: the session is looked up (so that a
   * bad reference fails as it would for real) but neither created nor changed, and its history
   * and harness session id are not sent; a fake run never rebinds a real session to `fake`.
   * A `ref` outside the rule of session names is refused before anything is dispatched.
   */
  dispatch(
    dispatcher: Dispatcher,
    input: DispatchInput,
    context: TurnContext,
  ): Promise<DispatchOutcome> {
    const ref = SessionNameSchema.safeParse(context.ref);
    if (!ref.success) {
      return Promise.reject(
        new SvcError("invalid_request", `Cannot continue the session: ${describeIssue(ref.error)}`),
      );
    }
    const key = `${context.owner}\u0000${context.ref}`;
    const turn = (this.#locks.get(key) ?? Promise.resolve()).then(() =>
      context.fakeOnly
        ? this.#shadowTurn(dispatcher, input, context)
        : this.#turn(dispatcher, input, context)
    );
    this.#locks.set(key, turn.catch(() => {}));
    return turn;
  }

  async #shadowTurn(
    dispatcher: Dispatcher,
    input: DispatchInput,
    context: TurnContext,
  ): Promise<DispatchOutcome> {
    const session = await this.#find(context.ref, context.owner);
    if (!session && context.ref.startsWith("ses_")) {
      throw new SvcError("not_found", `Cannot continue session '${context.ref}': no such session`);
    }
    const options = session ? this.#bind(session, input, context.ref) : input.options;
    const { history: _history, resumeSession: _resume, ...call } = input;
    return await dispatcher.dispatch({ ...call, options }, context);
  }

  /** The call's options bound to the session's provider (or profile); refuses another provider. */
  #bind(session: SessionRecord, input: DispatchInput, ref: string): DispatchInput["options"] {
    const options = { ...input.options };
    if (session.provider !== null) {
      if (
        options.provider !== undefined && options.provider !== "auto" &&
        options.provider !== session.provider
      ) {
        throw new SvcError(
          "invalid_request",
          `Cannot continue session '${ref}': it talks to ${session.provider}, not ${options.provider}`,
        );
      }
      options.provider = session.provider;
      delete options.profile;
    } else if (session.profile !== null) options.profile ??= session.profile;
    return options;
  }

  async #turn(
    dispatcher: Dispatcher,
    input: DispatchInput,
    context: TurnContext,
  ): Promise<DispatchOutcome> {
    let session = await this.#find(context.ref, context.owner);
    if (!session) {
      if (context.ref.startsWith("ses_")) {
        throw new SvcError(
          "not_found",
          `Cannot continue session '${context.ref}': no such session`,
        );
      }
      session = await this.#create({ name: context.ref }, context.owner).catch(async (error) => {
        // Another turn created it first.
        const found = await this.#find(context.ref, context.owner);
        if (!found) throw error;
        return found;
      });
    }
    const options = this.#bind(session, input, context.ref);
    context.onSession?.(session.session_id);
    const history = await this.#ledger.getSessionMessages(session.session_id);
    const outcome = await dispatcher.dispatch({
      ...input,
      // The session's own id from here on: a name is per owner, and the harness keys its
      // session directory on this value.
      options: { ...options, session: session.session_id },
      history,
      ...(session.harness_session_id !== null ? { resumeSession: session.harness_session_id } : {}),
    }, context);
    const answer = typeof outcome.output === "string"
      ? outcome.output
      : JSON.stringify(outcome.output);
    const updated: SessionRecord = {
      ...session,
      provider: outcome.provider,
      harness_session_id: outcome.session_id ?? session.harness_session_id,
      turns: session.turns + 1,
      updated_at: new Date().toISOString(),
    };
    await this.#ledger.saveSessionTurn(updated, [
      { role: "user", content: input.prompt },
      { role: "assistant", content: answer },
    ]);
    return outcome;
  }
}

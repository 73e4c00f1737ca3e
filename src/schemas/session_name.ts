import * as z from "zod";

/** Longest session name: a name is part of a ledger key. */
export const SESSION_NAME_LIMIT = 128;

/**
 * The one rule for a session name, wherever one enters (a session's creation, `session` of a
 * dispatch or of `agent()`, a name svc derives): letters, digits, `.`, `_` and `-`, starting
 * with a letter or digit, at most {@linkcode SESSION_NAME_LIMIT} characters. A name reaches
 * ledger keys, terminals and tables, so nothing else may pass; a session id (`ses_…`) has this
 * form too, so the rule also checks a reference to a session.
 */
export const SessionNameSchema = z.string()
  .min(1, "must not be empty")
  .max(SESSION_NAME_LIMIT, `must be at most ${SESSION_NAME_LIMIT} characters`)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    "must start with a letter or digit and hold only letters, digits, '.', '_' or '-'",
  );

/**
 * The one table that says what each error code means on every surface: its HTTP status, its
 * JSON-RPC error code and the exit status of the command line. Surfaces look codes up here and
 * never decide a mapping of their own, so the same error answers the same way everywhere
 * (docs/ERRORS.md shows the table).
 * @module
 */

/** Machine codes used across svc. */
export type ErrorCode =
  | "invalid_request"
  | "invalid_script"
  | "invalid_argument"
  | "not_found"
  | "conflict"
  | "unavailable"
  | "isolation_unavailable"
  | "provider_failed"
  | "guest_failed"
  | "provider_timeout"
  | "provider_unauthenticated"
  | "unauthenticated"
  | "forbidden"
  | "payload_too_large"
  | "rate_limited"
  | "internal";

/**
 * Exit statuses of the command line (docs/CLI.md, "Exit statuses"). 0, 1, 2 and 124 are those svc
 * always had; 3, 4 and 5 let a script tell "no such id" and "not now" from a failure.
 */
export const EXIT_STATUS = {
  /** The command did what was asked; a run or task it waited for succeeded. */
  ok: 0,
  /** A run or task failed, was cancelled or interrupted; or svc itself failed. */
  failed: 1,
  /** The command line or the request is wrong: fix it and try again. */
  usage: 2,
  /** The task, run, session or worktree named is not there (or not yours). */
  not_found: 3,
  /** It exists, but its state does not allow the action (e.g. resuming a run still running). */
  conflict: 4,
  /** Something svc needs is not available here: a provider, its login, an isolation backend, git. */
  unavailable: 5,
  /** A run or task hit its time limit (as `timeout(1)` exits). */
  timeout: 124,
  /** A second Ctrl-C quit at once (128 + SIGINT). */
  interrupted: 130,
} as const;

/** How one error code shows on each surface. */
export interface ErrorMapping {
  /** The HTTP status of a response carrying the error. */
  readonly http: number;
  /** The JSON-RPC 2.0 `error.code` (A2A; MCP reports tool failures inside results). */
  readonly jsonRpc: number;
  /** The exit status of the command line. */
  readonly exit: number;
  /** What the code means, for the documentation and for people. */
  readonly meaning: string;
}

/**
 * Every error code and its mapping. JSON-RPC uses the standard codes where they fit (-32602
 * invalid params, -32603 internal error); `not_found` and `conflict` are A2A's TaskNotFound
 * (-32001) and TaskNotCancelable (-32002), which carry HTTP 404 and 409 there too. The other
 * codes are svc's own in the server-error range, from -32050, clear of the -32001..-32009 that
 * A2A v1.0 assigns.
 */
export const ERROR_TABLE: Readonly<Record<ErrorCode, ErrorMapping>> = {
  invalid_request: {
    http: 400,
    jsonRpc: -32602,
    exit: EXIT_STATUS.usage,
    meaning: "the request is malformed: a field is missing, of the wrong type or out of range",
  },
  invalid_argument: {
    http: 400,
    jsonRpc: -32602,
    exit: EXIT_STATUS.usage,
    meaning:
      "a value is well-formed but cannot be used: an unknown provider or profile, a bad path, " +
      "a configuration svc cannot read",
  },
  invalid_script: {
    http: 400,
    jsonRpc: -32602,
    exit: EXIT_STATUS.usage,
    meaning: "the script was refused by the static check (syntax, meta, imports)",
  },
  not_found: {
    http: 404,
    jsonRpc: -32001,
    exit: EXIT_STATUS.not_found,
    meaning: "no such run, task, session, worktree or workflow (another owner's answers the same)",
  },
  conflict: {
    http: 409,
    jsonRpc: -32002,
    exit: EXIT_STATUS.conflict,
    meaning: "its state does not allow the action (resuming a run still running, working a task " +
      "that ended)",
  },
  unavailable: {
    http: 503,
    jsonRpc: -32050,
    exit: EXIT_STATUS.unavailable,
    meaning: "no provider can take the call now, a tool svc needs (git) is missing, or the " +
      "ledger cannot be used now (its disk is full, its file locked by another program)",
  },
  isolation_unavailable: {
    http: 503,
    jsonRpc: -32051,
    exit: EXIT_STATUS.unavailable,
    meaning: "the isolation tier asked for has no backend on this host",
  },
  provider_unauthenticated: {
    http: 503,
    jsonRpc: -32052,
    exit: EXIT_STATUS.unavailable,
    meaning:
      "the provider's tool or API is not logged in or has no key, or the API refused the key (401, 403)",
  },
  provider_failed: {
    http: 502,
    jsonRpc: -32053,
    exit: EXIT_STATUS.failed,
    meaning: "the provider answered with an error, or its tool failed",
  },
  provider_timeout: {
    http: 504,
    jsonRpc: -32054,
    exit: EXIT_STATUS.timeout,
    meaning:
      "the provider did not answer within the time limit, or the call stalled (no progress for its `stallMs`)",
  },
  guest_failed: {
    http: 500,
    jsonRpc: -32055,
    exit: EXIT_STATUS.failed,
    meaning: "the script's process could not start or crashed",
  },
  unauthenticated: {
    http: 401,
    jsonRpc: -32056,
    exit: EXIT_STATUS.usage,
    meaning: "no valid bearer token came with a request that needs one",
  },
  forbidden: {
    http: 403,
    jsonRpc: -32057,
    exit: EXIT_STATUS.usage,
    meaning: "the request is refused whoever asks: an origin not allowed, a token bound to no " +
      "owner where owners are required, a field the server fixes itself (`board_dir`), a path " +
      "outside the workspace roots of the caller's owner",
  },
  payload_too_large: {
    http: 413,
    jsonRpc: -32058,
    exit: EXIT_STATUS.usage,
    meaning: "the request body is larger than the server accepts",
  },
  rate_limited: {
    http: 429,
    jsonRpc: -32059,
    exit: EXIT_STATUS.unavailable,
    meaning: "a cap of the host or of the caller's owner is reached (live or queued runs and " +
      "tasks, open event streams, automations): nothing was started; retry after the " +
      "`Retry-After` seconds",
  },
  internal: {
    http: 500,
    jsonRpc: -32603,
    exit: EXIT_STATUS.failed,
    meaning: "a bug in svc: the message holds no details",
  },
};

/** Every error code, in the table's order. */
export const ERROR_CODES: readonly ErrorCode[] = Object.keys(ERROR_TABLE) as ErrorCode[];

/** Whether `value` is one of the codes, e.g. a code read back from a stored error. */
export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_TABLE, value);
}

/** The HTTP status of `code`. */
export function httpStatusOf(code: ErrorCode): number {
  return ERROR_TABLE[code].http;
}

/** The JSON-RPC 2.0 error code of `code`. */
export function jsonRpcCodeOf(code: ErrorCode): number {
  return ERROR_TABLE[code].jsonRpc;
}

/** The command line's exit status for `code`. */
export function exitStatusOf(code: ErrorCode): number {
  return ERROR_TABLE[code].exit;
}

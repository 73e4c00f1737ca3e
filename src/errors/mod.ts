/**
 * The one error type of svc: a machine code, an HTTP status and a message for people.
 * Surfaces map it to their wire format in one place each; anything else is an internal error.
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
  | "internal";

/** An error that is safe to show to a client: its message names what is wrong and holds no internals. */
export class SvcError extends Error {
  /** What went wrong, for programs: every surface maps it the same way. */
  readonly code: ErrorCode;
  /** The HTTP status it answers with; the code's default unless given. */
  readonly status: number;

  /** `message` says "Cannot <action>: <reason>"; `cause` keeps the underlying error for logs. */
  constructor(
    code: ErrorCode,
    message: string,
    options: { status?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "SvcError";
    this.code = code;
    this.status = options.status ?? defaultStatus(code);
  }
}

function defaultStatus(code: ErrorCode): number {
  switch (code) {
    case "invalid_request":
    case "invalid_script":
    case "invalid_argument":
      return 400;
    case "not_found":
      return 404;
    case "conflict":
      return 409;
    case "unavailable":
    case "isolation_unavailable":
    case "provider_unauthenticated":
      return 503;
    case "provider_failed":
      return 502;
    case "provider_timeout":
      return 504;
    case "guest_failed":
    case "internal":
      return 500;
  }
}

/** The public form of any thrown value: an SvcError as is, anything else as an internal error without details. */
export function toSvcError(error: unknown): SvcError {
  if (error instanceof SvcError) return error;
  return new SvcError("internal", "Internal error", { cause: error });
}

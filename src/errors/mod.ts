/**
 * The one error type of svc: a machine code, an HTTP status and a message for people.
 * Surfaces map it to their wire format through the one table in `codes.ts`; anything else is
 * an internal error.
 * @module
 */
import { type ErrorCode, httpStatusOf } from "./codes.ts";

export {
  ERROR_CODES,
  ERROR_TABLE,
  type ErrorCode,
  type ErrorMapping,
  EXIT_STATUS,
  exitStatusOf,
  httpStatusOf,
  isErrorCode,
  jsonRpcCodeOf,
} from "./codes.ts";

/** An error that is safe to show to a client: its message names what is wrong and holds no internals. */
export class SvcError extends Error {
  /** What went wrong, for machines: the key into the error table. */
  readonly code: ErrorCode;
  /** The HTTP status: the error table's for the code unless the thrower chose another. */
  readonly status: number;
  /**
   * Seconds after which the same request may succeed (`rate_limited`): HTTP answers carry it
   * as `Retry-After`, JSON-RPC errors as `data.retry_after_s`.
   */
  readonly retryAfterS?: number;

  /** An error with `code` and a message "Cannot <action>: <reason>"; `options.status` overrides the table's. */
  constructor(
    code: ErrorCode,
    message: string,
    options: { status?: number; cause?: unknown; retryAfterS?: number } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "SvcError";
    this.code = code;
    this.status = options.status ?? httpStatusOf(code);
    if (options.retryAfterS !== undefined) this.retryAfterS = options.retryAfterS;
  }
}

/** The public form of any thrown value: an SvcError as is, anything else as an internal error without details. */
export function toSvcError(error: unknown): SvcError {
  if (error instanceof SvcError) return error;
  return new SvcError("internal", "Internal error", { cause: error });
}

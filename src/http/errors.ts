/**
 * The one place HTTP errors are rendered: every error of the API answers the object of
 * DESIGN.md, `{"error": {"status", "code", "message"}}`, with the status of the error table.
 * Nothing else ever reaches a client: an unknown error is `internal` without details.
 * @module
 */
import { HTTPException } from "hono/http-exception";
import { type ErrorCode, SvcError, toSvcError } from "../errors/mod.ts";
import { describeIssue, type SchemaIssue } from "../schemas/mod.ts";

/** The body of every API error. */
export interface ApiErrorBody {
  /** The error. */
  error: {
    /** The HTTP status of the response. */
    status: number;
    /** The machine code (docs/ERRORS.md). */
    code: ErrorCode;
    /** What is wrong, for people: "Cannot <action>: <reason>". */
    message: string;
  };
}

/** Longest message a client gets: messages can repeat parts of a hostile request. */
const MESSAGE_LIMIT = 1000;

/** Headers of every JSON answer, errors included. */
const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" } as const;

/** The API-shaped error response of `error`, with extra `headers` (e.g. `WWW-Authenticate`). */
export function errorResponse(
  error: SvcError,
  options: { headers?: Record<string, string> } = {},
): Response {
  const message = error.message.length > MESSAGE_LIMIT
    ? `${error.message.slice(0, MESSAGE_LIMIT)}...`
    : error.message;
  const body: ApiErrorBody = { error: { status: error.status, code: error.code, message } };
  const retry: Record<string, string> = error.retryAfterS !== undefined
    ? { "retry-after": String(Math.max(1, Math.ceil(error.retryAfterS))) }
    : {};
  return new Response(JSON.stringify(body), {
    status: error.status,
    headers: { ...JSON_HEADERS, ...retry, ...options.headers },
  });
}

/** Shorthand: the API error response of `code` with `message`. */
export function apiError(code: ErrorCode, message: string): Response {
  return errorResponse(new SvcError(code, message));
}

/**
 * Maps anything a handler or middleware threw to an API error. Hono's own exceptions (a body
 * it could not parse, a limit it enforced) keep their status under a code of the table; any
 * other non-SvcError is `internal` and says nothing more.
 */
export function renderError(error: unknown): Response {
  if (error instanceof HTTPException) {
    const code = codeOfStatus(error.status);
    const reason = code === "internal" ? "Internal error" : error.message || "bad request";
    return errorResponse(
      new SvcError(code, code === "internal" ? reason : `Cannot read the request: ${reason}`),
    );
  }
  return errorResponse(toSvcError(error));
}

function codeOfStatus(status: number): ErrorCode {
  if (status === 413) return "payload_too_large";
  if (status === 401) return "unauthenticated";
  if (status === 403) return "forbidden";
  if (status === 404) return "not_found";
  if (status >= 400 && status < 500) return "invalid_request";
  return "internal";
}

/** Where a request value came from, as messages name it. */
const TARGETS: Record<string, string> = {
  json: "body",
  query: "query",
  param: "path",
  header: "header",
};

/** The 400 answer of a request that failed validation, naming the field and where it is. */
export function validationError(target: string, issues: SchemaIssue[]): Response {
  const where = TARGETS[target] ?? target;
  return errorResponse(
    new SvcError(
      "invalid_request",
      `Cannot accept the request ${where}: ${describeIssue({ issues })}`,
    ),
  );
}

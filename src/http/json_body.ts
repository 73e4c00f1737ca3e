/**
 * Reading a request body before any handler runs: a size limit (413), JSON only, parsed with a
 * 400 that says what is wrong with it. Validation against the route's schema comes after.
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { SvcError } from "../errors/mod.ts";
import { readBody } from "../platform/mod.ts";
import type { DashboardEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";

/** Default largest request body, in bytes: a long script with its `args` fits. */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

function tooLarge(limit: number): Response {
  return errorResponse(
    new SvcError(
      "payload_too_large",
      `Cannot read the request body: it is larger than ${limit} bytes`,
    ),
  );
}

function invalid(message: string): Response {
  return errorResponse(new SvcError("invalid_request", `Cannot read the request body: ${message}`));
}

/**
 * The body middleware: for requests that carry a body, refuses one over `maxBytes` (by its
 * `Content-Length` before reading, and while reading), one that is not declared JSON, and one
 * that does not parse, naming the problem. The parsed body is then what validation reads.
 */
export function jsonBody(options: { maxBytes?: number } = {}): MiddlewareHandler<DashboardEnv> {
  const limit = options.maxBytes ?? MAX_BODY_BYTES;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new SvcError(
      "invalid_argument",
      "Cannot limit request bodies: maxBytes must be a positive integer",
    );
  }
  return async function readJsonBody(c, next) {
    const method = c.req.method;
    if (method === "GET" || method === "HEAD" || method === "OPTIONS") return await next();
    const bytes = await readBody(c.req.raw, limit);
    if (bytes === undefined) return tooLarge(limit);
    const type = c.req.header("content-type") ?? "";
    const declaredJson = /^application\/json\s*(;|$)/i.test(type);
    if (bytes.byteLength === 0) {
      // An action without a body (a cancel, a resume) is fine; a route that needs one says so.
      // A client that declares JSON on every request and sends nothing has sent an empty
      // object: the route's validation reads that rather than failing to parse nothing.
      c.req.bodyCache.json = Promise.resolve(declaredJson ? {} : undefined);
      return await next();
    }
    if (!declaredJson) {
      return invalid("send it as JSON with the header 'Content-Type: application/json'");
    }
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      return invalid("it is not UTF-8 text");
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const reason = error instanceof SyntaxError ? error.message.slice(0, 200) : "parse error";
      return invalid(`it is not valid JSON (${reason})`);
    }
    c.req.bodyCache.json = Promise.resolve(value);
    return await next();
  };
}

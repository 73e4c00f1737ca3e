/**
 * DNS-rebinding protection for a server on a loopback address: a page of another site whose
 * name an attacker points at 127.0.0.1 reaches the server with that name in `Host`. A request
 * is answered only when its `Host` is one of the server's own names.
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { SvcError } from "../errors/mod.ts";
import { errorResponse } from "./errors.ts";

/** The names of this machine's loopback addresses, as they appear in `Host`. */
export const LOOPBACK_HOSTS: readonly string[] = ["127.0.0.1", "localhost", "[::1]"];

/** The host name of a `Host` header, lower-cased and without its port. */
function hostnameOf(header: string): string {
  const bracketed = /^(\[[0-9a-f:.]+\])(:\d+)?$/i.exec(header);
  if (bracketed) return bracketed[1]!.toLowerCase();
  const colon = header.lastIndexOf(":");
  return (colon === -1 ? header : header.slice(0, colon)).toLowerCase();
}

/**
 * The middleware: refuses (403, the API's error object) a request whose `Host` names none of
 * `allowed` (host names without ports, e.g. {@linkcode LOOPBACK_HOSTS}).
 */
export function hostCheck(allowed: readonly string[]): MiddlewareHandler {
  const names = new Set(allowed.map((name) => name.toLowerCase()));
  return async function checkHost(c, next) {
    const header = c.req.header("host") ?? new URL(c.req.url).host;
    if (!names.has(hostnameOf(header.slice(0, 300)))) {
      return errorResponse(
        new SvcError(
          "forbidden",
          "Cannot accept the request: its Host is not this server's (DNS rebinding protection)",
        ),
      );
    }
    await next();
    return undefined;
  };
}

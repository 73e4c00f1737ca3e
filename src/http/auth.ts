/**
 * The dashboard's security layer over `/api/*`, in the specification's decision order: an
 * origin not allowed is refused before anything else; a preflight answers 204; the bearer
 * token is compared in constant time with every configured one; without a valid token (when
 * one is required) 401; with owners required, a token bound to none 403.
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { callerOf } from "../services/mod.ts";
import { SvcError } from "../errors/mod.ts";
import { type AuthSettings, LOCAL_OWNER } from "./auth_settings.ts";
import type { DashboardEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { tokenMatcher } from "./token_match.ts";

/** Options of {@linkcode dashboardAuth}. */
export interface DashboardAuthOptions {
  /** Tokens, owners, origins. */
  settings: AuthSettings;
  /**
   * The server's own origins (the page it serves calls the API from there), e.g.
   * `http://127.0.0.1:41521`. With `sameOrigin` the request URL's own origin counts too (a
   * server bound to every interface cannot know the names it is reached by).
   */
  ownOrigins?: readonly string[];
  /** Count the request URL's origin as the server's own. Default false. */
  sameOrigin?: boolean;
}

/** Methods and headers a page of an allowed origin may use. */
const CORS_HEADERS = {
  "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
  "access-control-allow-headers":
    "Authorization, Content-Type, Last-Event-ID, Mcp-Protocol-Version, Mcp-Session-Id",
  "access-control-max-age": "600",
} as const;

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
function bearerOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer[ ]+([\x21-\x7e]+)[ ]*$/i.exec(header.slice(0, 1024));
  return match?.[1];
}

function unauthenticated(message: string): Response {
  return errorResponse(new SvcError("unauthenticated", message), {
    headers: { "www-authenticate": 'Bearer realm="svc"' },
  });
}

/**
 * The middleware of the `/api/*` layer. It checks its options once; per request it sets the
 * `caller` the routes act as. Tokens are hashed before comparing, so neither their content
 * nor their length shows in the time an answer takes, and every configured token is
 * compared, whichever matches ({@linkcode tokenMatcher}).
 */
export function dashboardAuth(options: DashboardAuthOptions): MiddlewareHandler<DashboardEnv> {
  const { settings } = options;
  const allowed = new Set([...settings.allowedOrigins, ...(options.ownOrigins ?? [])]);
  const sameOrigin = options.sameOrigin ?? false;
  const matchToken = tokenMatcher(settings.tokens);
  // A token bound to no owner (or none, with authentication off) is the operator's.
  const local = callerOf(LOCAL_OWNER, { remote: true, operator: true });

  return async function authenticate(c, next) {
    const origin = c.req.header("origin");
    const crossSite = origin !== undefined &&
      !allowed.has(origin) &&
      !(sameOrigin && origin === new URL(c.req.url).origin);
    if (crossSite) {
      return errorResponse(
        new SvcError("forbidden", "Cannot accept the request: its origin is not allowed"),
      );
    }
    const cors: Record<string, string> = origin
      ? { "access-control-allow-origin": origin, vary: "Origin" }
      : {};
    if (c.req.method === "OPTIONS") {
      return new Response(null, { status: 204, headers: { ...CORS_HEADERS, ...cors } });
    }
    const presented = bearerOf(c.req.header("authorization"));
    const match = presented !== undefined ? matchToken(presented) : undefined;
    if (match === undefined && settings.required) {
      return unauthenticated(
        presented === undefined
          ? "Cannot accept the request: it needs an 'Authorization: Bearer <token>' header"
          : "Cannot accept the request: the bearer token is not valid",
      );
    }
    if (match !== undefined && match.owner === undefined && settings.requireOwner) {
      return errorResponse(
        new SvcError(
          "forbidden",
          "Cannot accept the request: this server requires tokens bound to an owner, and this token is bound to none",
        ),
      );
    }
    c.set(
      "caller",
      match?.owner !== undefined ? callerOf(match.owner, { remote: true }) : local,
    );
    await next();
    for (const [name, value] of Object.entries(cors)) c.res.headers.set(name, value);
    return undefined;
  };
}

/**
 * The tool protocol over Streamable HTTP, as a web-standard handler the dashboard mounts at
 * `/mcp` behind its bearer authentication. Both protocol eras are served, each instance built
 * for the caller the token names: 2026-07-28 requests statelessly, one server instance per
 * request (the SDK's `createMcpHandler`), and 2025-era clients in sessions
 * ({@linkcode LegacySessions}), which their concurrent streams and notifications need.
 * @module
 */
import { createMcpHandler, isLegacyRequest } from "@modelcontextprotocol/server";
import { SvcError } from "../errors/mod.ts";
import { type Caller, callerOf } from "../services/mod.ts";
import type { Services } from "../services/mod.ts";
import { svcMcpServer } from "./server.ts";
import { LegacySessions } from "./sessions.ts";

/** Options of {@linkcode mcpHttpHandler}. */
export interface McpHttpOptions {
  /** Largest request body in bytes. Default 2 MiB, as the dashboard's API. */
  maxBodyBytes?: number;
  /** 2025-era sessions kept at most. Default 256. */
  maxSessions?: number;
  /** Where internal errors are reported (never to the client). Default: dropped. */
  logError?: (message: string) => void;
}

/** The `/mcp` endpoint: answers one request for an authenticated caller. */
export interface McpHttpHandler {
  /** Serves one protocol request as `caller`, whom the surface's authentication named. */
  fetch(request: Request, caller: Caller): Promise<Response>;
  /** Ends the sessions and the requests in flight. */
  close(): Promise<void>;
}

/** Marks an administrator in the SDK's pass-through authentication record. */
const ADMIN_SCOPE = "svc:admin";

/** Builds the `/mcp` handler over open services. */
export function mcpHttpHandler(services: Services, options: McpHttpOptions = {}): McpHttpHandler {
  const logError = options.logError;
  const maxBodyBytes = options.maxBodyBytes ?? 2 * 1024 * 1024;
  const build = (caller: Caller) =>
    svcMcpServer({ services, caller, ...(logError ? { logError } : {}) });
  const modern = createMcpHandler((request) => {
    const auth = request.authInfo;
    // Only fetch() below calls the handler, always with the caller: never serve without one.
    if (!auth) throw new SvcError("unauthenticated", "Cannot serve /mcp: no caller");
    return build(
      callerOf(auth.clientId, { admin: auth.scopes.includes(ADMIN_SCOPE), remote: true }),
    );
  }, {
    legacy: "reject",
    maxRequestBodySize: maxBodyBytes,
    ...(logError ? { onerror: (error: Error) => logError(`svc: /mcp: ${error.message}`) } : {}),
  });
  const legacy = new LegacySessions({
    build,
    maxBodyBytes,
    ...(options.maxSessions !== undefined ? { maxSessions: options.maxSessions } : {}),
  });
  return {
    fetch: async (request, caller) => {
      if (await isLegacyRequest(request, undefined, { maxRequestBodySize: maxBodyBytes })) {
        return await legacy.handle(request, caller);
      }
      return await modern.fetch(request, {
        // The token itself stays in the authentication layer; the owner is all that passes.
        authInfo: {
          token: "",
          clientId: caller.owner,
          scopes: caller.admin ? [ADMIN_SCOPE] : [],
        },
      });
    },
    close: async () => {
      await legacy.close();
      await modern.close();
    },
  };
}

/**
 * Sessions of the 2025 protocol era over Streamable HTTP: `initialize` opens one (its id comes
 * back in `Mcp-Session-Id`), later requests of the same client carry that id, `DELETE` ends
 * it. A session belongs to the caller that opened it: another caller's id is unknown (404),
 * as another owner's run is. They live in this process's memory, bounded in number and idle
 * time; a client whose session was dropped is told 404 and opens a new one, as the protocol says.
 * @module
 */
import {
  type McpServer,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { Caller } from "../services/mod.ts";

/** Options of {@linkcode LegacySessions}. */
export interface LegacySessionsOptions {
  /** Builds the server instance a new session talks to, for its caller. */
  build: (caller: Caller) => McpServer;
  /** Sessions kept at most; opening one more ends the longest idle. Default 256. */
  maxSessions?: number;
  /** Milliseconds without a request after which a session ends. Default 30 minutes. */
  idleMs?: number;
  /** Largest request body in bytes. */
  maxBodyBytes: number;
}

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
  owner: string;
  admin: boolean;
  lastUsed: number;
}

/** A JSON-RPC error answer outside any session, as the SDK's transports shape them. */
function rpcError(status: number, message: string): Response {
  return Response.json(
    { jsonrpc: "2.0", error: { code: -32000, message }, id: null },
    { status },
  );
}

/** The 2025-era sessions of one `/mcp` endpoint. */
export class LegacySessions {
  readonly #sessions = new Map<string, Session>();
  readonly #options: Required<LegacySessionsOptions>;

  /** Sessions start empty; each `initialize` opens one. */
  constructor(options: LegacySessionsOptions) {
    this.#options = { maxSessions: 256, idleMs: 30 * 60_000, ...options };
  }

  /** How many sessions are open. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Answers one 2025-era request of `caller`. */
  async handle(request: Request, caller: Caller): Promise<Response> {
    this.#sweep();
    const id = request.headers.get("mcp-session-id");
    if (id === null) {
      if (request.method !== "POST") {
        return rpcError(400, "Bad Request: an Mcp-Session-Id header is required");
      }
      return await this.#open(request, caller);
    }
    const session = this.#sessions.get(id.slice(0, 200));
    if (!session || session.owner !== caller.owner || session.admin !== (caller.admin ?? false)) {
      return rpcError(404, "Session not found");
    }
    session.lastUsed = Date.now();
    return await session.transport.handleRequest(request);
  }

  /** Ends every session. */
  async close(): Promise<void> {
    const open = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.allSettled(open.map((session) => session.server.close()));
  }

  /** A request without a session: an `initialize` opens one; the transport refuses the rest. */
  async #open(request: Request, caller: Caller): Promise<Response> {
    if (this.#sessions.size >= this.#options.maxSessions) this.#evictIdlest();
    const server = this.#options.build(caller);
    const session: Session = {
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sessionId) => void this.#sessions.set(sessionId, session),
        onsessionclosed: (sessionId) => void this.#sessions.delete(sessionId),
        maxRequestBodySize: this.#options.maxBodyBytes,
      }),
      server,
      owner: caller.owner,
      admin: caller.admin ?? false,
      lastUsed: Date.now(),
    };
    await server.connect(session.transport);
    const response = await session.transport.handleRequest(request);
    // Not an initialize (or a failed one): nothing to keep.
    if (session.transport.sessionId === undefined) await server.close();
    return response;
  }

  #sweep(): void {
    const oldest = Date.now() - this.#options.idleMs;
    for (const [id, session] of this.#sessions) {
      if (session.lastUsed < oldest) this.#end(id, session);
    }
  }

  #evictIdlest(): void {
    let idlest: [string, Session] | undefined;
    for (const entry of this.#sessions) {
      if (!idlest || entry[1].lastUsed < idlest[1].lastUsed) idlest = entry;
    }
    if (idlest) this.#end(...idlest);
  }

  #end(id: string, session: Session): void {
    this.#sessions.delete(id);
    void session.server.close().catch(() => {});
  }
}

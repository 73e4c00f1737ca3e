/**
 * The JSON-RPC binding of the A2A server, over the SDK's transport handlers: 1.0 for requests
 * with `A2A-Version: 1.0`, 0.3 for requests without the header (or naming 0.3). The body is
 * bounded and checked before the SDK sees it (size, nesting, parts, ids, metadata); every error
 * is a JSON-RPC error object, an internal one without details. A streaming answer keeps being
 * drained when its client goes away, so the task still reaches its final state in the store.
 * @module
 */
import { formatSSEErrorEvent, formatSSEEvent, SSE_HEADERS } from "@a2a-js/sdk";
import {
  type A2ARequestHandler,
  JsonRpcTransportHandler,
  ServerCallContext,
  validateVersion,
} from "@a2a-js/sdk/server";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import { jsonRpcCodeOf, toSvcError } from "../errors/mod.ts";
import type { Caller } from "../services/mod.ts";
import { readBody } from "../platform/mod.ts";
import { CallerUser } from "./caller_user.ts";

/** Largest JSON-RPC request body, in bytes. */
export const BODY_LIMIT = 1024 * 1024;
/** Most parts one message may have. */
export const PARTS_LIMIT = 32;
/** Largest part (or message metadata), in bytes of JSON. */
export const PART_LIMIT = 256 * 1024;
/** Deepest nesting of arrays and objects in a request. */
export const DEPTH_LIMIT = 64;
/** Most tasks one message may reference. */
const REFERENCES_LIMIT = 16;
/** Longest id (task, context, message) a request may carry. */
const ID_LIMIT = 256;

/**
 * JSON-RPC error codes. Those of the protocol itself (a body that is not JSON, not a request,
 * a method this server does not offer) are JSON-RPC's and A2A's; those of svc's own errors come
 * from the error table, as every other surface's answers do.
 */
const CODES = {
  parse: -32700,
  invalidRequest: -32600,
  pushNotSupported: -32003,
  invalidParams: jsonRpcCodeOf("invalid_request"),
  internal: jsonRpcCodeOf("internal"),
};

/**
 * Push-notification configuration methods of both protocol versions. svc sends none (its card
 * says `pushNotifications: false`), so they are answered here: the 0.3 SDK's handler reads their
 * params before it checks the capability, and crashes on missing ones.
 */
const PUSH_CONFIG_METHOD = /pushnotificationconfig/i;

/** The methods that start work, in both protocol versions: admission may refuse them first. */
const SEND_METHOD = /^(SendMessage|SendStreamingMessage|message\/send|message\/stream)$/;

/** A JSON-RPC error object. */
interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

function rpcError(id: unknown, error: RpcError, status = 200): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", id: safeId(id), error }), {
    status,
    headers: JSON_HEADERS,
  });
}

/** A request id echoed back: a string or number of a sane size, else null. */
function safeId(id: unknown): string | number | null {
  if (typeof id === "number" && Number.isFinite(id)) return id;
  if (typeof id === "string" && id.length <= ID_LIMIT) return id;
  return null;
}

/** An error as a client gets it: an internal one says nothing more than that. */
function safeError(error: RpcError): RpcError {
  if (error.code === CODES.internal) return { code: CODES.internal, message: "Internal error" };
  const message = typeof error.message === "string" ? error.message.slice(0, 1000) : "Error";
  return { ...error, message };
}

/** Whether nesting in JSON text stays within `limit` (strings skipped). */
function nestingWithin(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return false;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return true;
}

function bytesOf(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value) ?? "").length;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * An id of a sane size and without control characters: ids reach the SDK's log lines (the
 * server's terminal) and the ledger's keys.
 */
function isSafeId(value: unknown): boolean {
  if (typeof value !== "string" || value.length > ID_LIMIT) return false;
  // deno-lint-ignore no-control-regex -- refusing control characters is the point
  return !/[\u0000-\u001f\u007f-\u009f]/.test(value);
}

/** What is wrong with a request's params, in words; undefined when they are within bounds. */
function boundsProblem(params: unknown): string | undefined {
  if (params === undefined) return undefined;
  if (!isRecord(params)) return "'params' must be an object";
  for (const key of ["id", "taskId", "contextId", "pageToken", "tenant"]) {
    const value = params[key];
    if (value !== undefined && !isSafeId(value)) {
      return `'params.${key}' must be a string of at most ${ID_LIMIT} characters without control characters`;
    }
  }
  const message = params.message;
  if (message === undefined) return undefined;
  if (!isRecord(message)) return "'params.message' must be an object";
  for (const key of ["messageId", "taskId", "contextId"]) {
    const value = message[key];
    if (value !== undefined && !isSafeId(value)) {
      return `'params.message.${key}' must be a string of at most ${ID_LIMIT} characters without control characters`;
    }
  }
  const parts = message.parts;
  if (!Array.isArray(parts)) return "'params.message.parts' must be an array";
  if (parts.length > PARTS_LIMIT) return `a message has at most ${PARTS_LIMIT} parts`;
  for (const part of parts) {
    if (!isRecord(part)) return "each part must be an object";
    if (bytesOf(part) > PART_LIMIT) return `a part is over ${PART_LIMIT} bytes`;
  }
  if (message.metadata !== undefined && bytesOf(message.metadata) > PART_LIMIT) {
    return `'params.message.metadata' is over ${PART_LIMIT} bytes`;
  }
  const references = message.referenceTaskIds;
  if (
    references !== undefined &&
    (!Array.isArray(references) || references.length > REFERENCES_LIMIT ||
      references.some((r) => !isSafeId(r)))
  ) {
    return `'params.message.referenceTaskIds' is at most ${REFERENCES_LIMIT} ids`;
  }
  return undefined;
}

/** Whether a request asks for the 0.3 binding: no `A2A-Version` header, or a 0.3 one. */
export function isLegacyRequest(version: string | undefined): boolean {
  return version === undefined || version.trim() === "" || /^0\.3(\.\d+)?$/.test(version.trim());
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}

/**
 * A server-sent-event answer of a stream whose first item is already read. The stream is read
 * to its end whatever the client does: once it goes away nothing more is written, but every
 * event still passes through the request handler, which saves it.
 */
function sseResponse(
  first: IteratorResult<unknown>,
  iterator: AsyncIterator<unknown>,
  onError: (error: unknown) => unknown,
): Response {
  const encoder = new TextEncoder();
  let open = true;
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {
      open = false;
    },
  });
  const write = (text: string) => {
    if (!open) return;
    try {
      controller?.enqueue(encoder.encode(text));
    } catch {
      open = false;
    }
  };
  (async () => {
    try {
      if (!first.done) write(formatSSEEvent(first.value));
      while (true) {
        const next = await iterator.next();
        if (next.done) break;
        write(formatSSEEvent(next.value));
      }
    } catch (error) {
      write(formatSSEErrorEvent(onError(error)));
    } finally {
      if (open) {
        open = false;
        try {
          controller?.close();
        } catch {
          // Already closed by the client.
        }
      }
    }
  })();
  return new Response(body, { headers: { ...SSE_HEADERS } });
}

/** Options of {@linkcode jsonRpcHandler}. */
export interface JsonRpcOptions {
  /** Largest body, in bytes. Default {@linkcode BODY_LIMIT}. */
  maxBodyBytes?: number;
  /**
   * Admission of a send (its `params`) before the SDK makes a task of it: what it throws
   * (`rate_limited`) is the JSON-RPC error of the table, with `data.retry_after_s`.
   */
  admit?: (caller: Caller, params: unknown) => Promise<void>;
}

/** The JSON-RPC error of a refusal of svc's own (the error table's code). */
function refusalOf(error: unknown): RpcError {
  const refusal = toSvcError(error);
  return {
    code: jsonRpcCodeOf(refusal.code),
    message: refusal.code === "internal" ? "Internal error" : refusal.message,
    ...(refusal.retryAfterS !== undefined ? { data: { retry_after_s: refusal.retryAfterS } } : {}),
  };
}

/**
 * The JSON-RPC endpoint: `(request, caller) => response`, the caller being who the bearer token
 * says (the route's authentication runs first).
 */
export function jsonRpcHandler(
  handler: A2ARequestHandler,
  options: JsonRpcOptions = {},
): (request: Request, caller: Caller) => Promise<Response> {
  const current = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);
  const limit = options.maxBodyBytes ?? BODY_LIMIT;
  return async function serveJsonRpc(request, caller) {
    const version = request.headers.get("a2a-version") ?? undefined;
    const useLegacy = isLegacyRequest(version);
    const mapError = (error: unknown): RpcError =>
      safeError(
        useLegacy
          ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error)
          : JsonRpcTransportHandler.mapToJSONRPCError(error),
      );
    let text: string;
    try {
      const bytes = await readBody(request, limit);
      if (bytes === undefined) {
        return rpcError(null, {
          code: CODES.invalidRequest,
          message: `Cannot read the request: its body is larger than ${limit} bytes`,
        }, 413);
      }
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      return rpcError(null, {
        code: CODES.parse,
        message: "Cannot read the request: it is not UTF-8",
      });
    }
    if (!nestingWithin(text, DEPTH_LIMIT)) {
      return rpcError(null, {
        code: CODES.invalidRequest,
        message: `Cannot read the request: it nests deeper than ${DEPTH_LIMIT} levels`,
      });
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return rpcError(null, {
        code: CODES.parse,
        message: "Cannot read the request: it is not JSON",
      });
    }
    if (!isRecord(body)) {
      return rpcError(null, {
        code: CODES.invalidRequest,
        message: "Cannot read the request: a JSON-RPC request is an object",
      });
    }
    const id = body.id;
    if (typeof body.method === "string" && PUSH_CONFIG_METHOD.test(body.method)) {
      return rpcError(id, {
        code: CODES.pushNotSupported,
        message: "Cannot configure push notifications: this server does not send them",
      });
    }
    const problem = boundsProblem(body.params);
    if (problem !== undefined) {
      return rpcError(id, {
        code: CODES.invalidParams,
        message: `Cannot take the request: ${problem}`,
      });
    }
    if (options.admit && typeof body.method === "string" && SEND_METHOD.test(body.method)) {
      try {
        await options.admit(caller, body.params);
      } catch (error) {
        return rpcError(id, safeError(refusalOf(error)));
      }
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of request.headers) {
      if (name !== "authorization") headers[name] = value;
    }
    const context = new ServerCallContext({
      user: new CallerUser(caller),
      ...(version !== undefined ? { requestedVersion: version.trim() } : {}),
      state: new Map<string, unknown>([["headers", headers]]),
    });
    let answer: unknown;
    try {
      validateVersion(context.requestedVersion, await handler.getAgentCard(), "JSONRPC");
      answer = await (useLegacy ? legacy : current).handle(body, context);
    } catch (error) {
      return rpcError(id, mapError(error));
    }
    if (isAsyncIterable(answer)) {
      const iterator = answer[Symbol.asyncIterator]();
      let first: IteratorResult<unknown>;
      try {
        first = await iterator.next();
      } catch (error) {
        return rpcError(id, mapError(error));
      }
      return sseResponse(first, iterator, (error) => ({
        jsonrpc: "2.0",
        id: safeId(id),
        error: mapError(error),
      }));
    }
    const envelope = answer as { error?: RpcError };
    if (envelope.error) envelope.error = safeError(envelope.error);
    return new Response(JSON.stringify(envelope), { status: 200, headers: JSON_HEADERS });
  };
}

import { abortableSleep } from "../../concurrency/mod.ts";
/**
 * What the model API clients share: the API key's lookup, the POST with its retry policy
 * (exponential backoff with jitter, `Retry-After`), the per-attempt timeout, and error messages
 * that name the state and never the key.
 * @module
 */
import * as z from "zod";
import { SvcError } from "../../errors/mod.ts";
import { hostEnv } from "../../host_env/mod.ts";
import { platform } from "../../platform/mod.ts";
import { redactSecrets } from "../redaction.ts";
import type { Availability, ChatMessage, DispatchRequest } from "../types.ts";
import { SseFramingError } from "./sse.ts";
import type { ProgressChannel } from "../progress.ts";

/** Options every API client takes beside its wire-specific ones. */
export interface ApiClientOptions {
  /**
   * Limit of one attempt in ms; default 600 000. A JSON answer must arrive whole within it; a
   * streamed one must start within it, and then never fall silent for as long.
   */
  timeoutMs?: number;
  /** Retries after a 429, a 5xx, a network failure or a timeout; default 3 (4 attempts). */
  maxRetries?: number;
  /** First backoff wait in ms, doubled on each retry (before jitter); default 500. */
  retryBaseMs?: number;
  /** Longest single wait in ms, `Retry-After` included; default 60 000. */
  maxRetryWaitMs?: number;
  /** Waits between attempts; rejects with the signal's reason when it aborts. Tests inject a recorder. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Source of jitter in [0, 1); default `Math.random`. */
  random?: () => number;
  /** The clock (ms since the epoch) that an HTTP-date `Retry-After` is measured against. */
  now?: () => number;
}

/** The retry policy in effect: {@linkcode ApiClientOptions} with their defaults filled in. */
export type RetryPolicy = Required<ApiClientOptions>;

/** Fills in the defaults of {@linkcode ApiClientOptions}, refusing nonsense values. */
export function retryPolicy(name: string, options: ApiClientOptions): RetryPolicy {
  const policy: RetryPolicy = {
    timeoutMs: options.timeoutMs ?? 600_000,
    maxRetries: options.maxRetries ?? 3,
    retryBaseMs: options.retryBaseMs ?? 500,
    maxRetryWaitMs: options.maxRetryWaitMs ?? 60_000,
    sleep: options.sleep ?? abortableSleep,
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
  };
  for (const key of ["timeoutMs", "maxRetries", "retryBaseMs", "maxRetryWaitMs"] as const) {
    const value = policy[key];
    if (!Number.isFinite(value) || value < 0 || (key === "timeoutMs" && value === 0)) {
      throw new SvcError(
        "invalid_argument",
        `Cannot configure provider '${name}': ${key} must be a ${
          key === "timeoutMs" ? "positive" : "non-negative"
        } number, got ${value}`,
      );
    }
  }
  if (!Number.isInteger(policy.maxRetries)) {
    throw new SvcError(
      "invalid_argument",
      `Cannot configure provider '${name}': maxRetries must be an integer, got ${policy.maxRetries}`,
    );
  }
  return policy;
}

/** Reads an environment variable, mapping a refused read to `undefined` with the grant it needs. */
function readEnv(name: string): { value: string | undefined; refused?: string } {
  try {
    return { value: hostEnv(name) };
  } catch (error) {
    const grant = platform().missingGrant(error);
    return { value: undefined, refused: grant ? `svc needs ${grant}` : `${name} cannot be read` };
  }
}

/** The `probe()` of an API provider: available when its key variable is set (no network call). */
export function probeKey(keyEnv: string | null): Availability {
  if (keyEnv === null) return { available: true, reason: "no API key needed" };
  const { value, refused } = readEnv(keyEnv);
  if (refused) return { available: false, reason: refused };
  return value
    ? { available: true, reason: `${keyEnv} is set` }
    : { available: false, reason: `${keyEnv} is not set` };
}

/**
 * The API key, read from its variable at call time (never kept). Undefined when the provider
 * needs none; throws a provider_unauthenticated SvcError naming the variable when it is missing
 * (provider_failed when the host may not read it: that is svc's permissions, not the key).
 */
export function apiKey(provider: string, keyEnv: string | null): string | undefined {
  if (keyEnv === null) return undefined;
  const { value, refused } = readEnv(keyEnv);
  if (refused) throw new SvcError("provider_failed", `Cannot dispatch to ${provider}: ${refused}`);
  if (!value) {
    throw new SvcError(
      "provider_unauthenticated",
      `Cannot dispatch to ${provider}: ${keyEnv} is not set`,
    );
  }
  return value;
}

/**
 * Makes text from an API safe to show: the key blanked out in every spelling, other
 * credentials too (the shared {@linkcode redactSecrets}), whitespace folded, length bounded.
 */
export function redact(text: string, key: string | undefined): string {
  let safe = redactSecrets(text, { secrets: key ? [key] : [] });
  safe = safe.replace(/\s+/g, " ").trim();
  return safe.length > 500 ? `${safe.slice(0, 500)}…` : safe;
}

/**
 * A failure worth another attempt (a dropped connection, a truncated stream, an overload
 * reported inside a stream); its message is the state, e.g. `the stream ended before [DONE]`.
 */
export class RetryableFailure extends Error {
  /** What the API asked us to wait, in ms (`Retry-After`), when it said. */
  readonly retryAfterMs: number | undefined;
  /** The API's own words, shown after the state. */
  readonly detail: string | undefined;

  constructor(state: string, options: { detail?: string; retryAfterMs?: number } = {}) {
    super(state);
    this.name = "RetryableFailure";
    this.detail = options.detail;
    this.retryAfterMs = options.retryAfterMs;
  }
}

const REASONS: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  408: "Request Timeout",
  409: "Conflict",
  413: "Payload Too Large",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  529: "Overloaded",
};

/** `429 Too Many Requests`: the status and its reason phrase. */
export function statusLine(response: Response): string {
  const reason = REASONS[response.status] ?? response.statusText;
  return reason ? `${response.status} ${reason}` : String(response.status);
}

const ErrorBodySchema = z.union([
  // OpenAI {error:{message,type,code}}, Anthropic {type:"error",error:{type,message}}
  z.object({ error: z.object({ message: z.string(), type: z.string().nullish() }) }),
  // Some compatible gateways: {error:"..."} or {message:"..."}
  z.object({ error: z.string() }),
  z.object({ message: z.string() }),
]);

/** The message of an API's JSON error body (OpenAI's and Anthropic's shapes), if it has one. */
export function apiErrorMessage(body: unknown): string | undefined {
  const parsed = ErrorBodySchema.safeParse(body);
  if (!parsed.success) return undefined;
  const value = parsed.data;
  if ("error" in value) {
    if (typeof value.error === "string") return value.error;
    return value.error.type ? `${value.error.message} (${value.error.type})` : value.error.message;
  }
  return value.message;
}

/**
 * How long a `retry-after-ms` or `Retry-After` header (seconds, or an HTTP date) asks us to wait,
 * in ms; undefined when there is no usable header.
 */
export function retryAfterMs(headers: Headers, now: number): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Number(ms);
  const value = headers.get("retry-after");
  if (value === null) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** One POST to a model API, as a client builds it. */
export interface ApiPost {
  /** Provider name, for messages. */
  provider: string;
  url: string;
  headers: Headers;
  body: unknown;
  /** The key's variable (named in authentication failures); null when none is used. */
  keyEnv: string | null;
  /** The key, only to blank it out of any text shown. */
  key: string | undefined;
  /** The call's signal: aborting it ends the call at once with its reason. */
  signal: AbortSignal;
  /** Where a streamed answer's text goes as it arrives (the call's progress). */
  progress?: ProgressChannel;
  /** Called as each chunk of a streamed answer arrives (the stall watch's progress). */
  activity?: () => void;
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A signal for one attempt: the call's signal, or the attempt's timeout. `touch()` (bytes of a
 * stream arrived) restarts the timeout, so that a long answer that keeps streaming is not cut,
 * as a stalled one is.
 */
function attemptScope(parent: AbortSignal, timeoutMs: number) {
  const controller = new AbortController();
  let timedOut = false;
  let touched = false;
  const onAbort = () => controller.abort(parent.reason);
  parent.addEventListener("abort", onAbort, { once: true });
  const expire = () => {
    timedOut = true;
    controller.abort(new DOMException("the attempt timed out", "TimeoutError"));
  };
  let timer = setTimeout(expire, timeoutMs);
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    touched: () => touched,
    touch() {
      if (timedOut) return;
      touched = true;
      clearTimeout(timer);
      timer = setTimeout(expire, timeoutMs);
    },
    dispose() {
      clearTimeout(timer);
      parent.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * Largest answer read as one JSON document. A real answer is far smaller (what reaches a script
 * is at most 4 MiB); a larger one is a broken or hostile server, and reading it whole would take
 * the host's memory.
 */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** Bytes of an error answer read: only its message is used. */
const MAX_ERROR_BYTES = 64 * 1024;

/**
 * Reads a body as UTF-8 text, at most `limit` bytes; `over` says it was longer, and then the
 * rest is not read (the body is cancelled).
 */
async function boundedText(
  response: Response,
  limit: number,
): Promise<{ text: string; over: boolean }> {
  if (!response.body) return { text: "", over: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > limit) return { text: "", over: true };
      chunks.push(value);
    }
  } finally {
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return { text: new TextDecoder().decode(bytes), over: false };
}

/**
 * Whether a non-2xx answer is worth another attempt, by the official SDKs' rule
 * (`shouldRetry` in `@anthropic-ai/sdk` and `openai`): an `x-should-retry: true|false` header
 * decides when present; else 408 (request timeout), 409 (lock timeout), 429 and every 5xx are.
 */
export function worthRetrying(response: Response): boolean {
  const said = response.headers.get("x-should-retry");
  if (said === "true") return true;
  if (said === "false") return false;
  const { status } = response;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Turns a non-2xx answer into a final SvcError or a RetryableFailure. Consumes the body. */
async function failure(
  response: Response,
  post: ApiPost,
  now: number,
): Promise<SvcError | RetryableFailure> {
  const { text } = await boundedText(response, MAX_ERROR_BYTES).catch(() => ({ text: "" }));
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const message = apiErrorMessage(body);
  const detail = message === undefined ? undefined : redact(message, post.key);
  const state = `the API answered ${statusLine(response)}`;
  const { status } = response;
  if (worthRetrying(response)) {
    return new RetryableFailure(state, {
      detail,
      retryAfterMs: retryAfterMs(response.headers, now),
    });
  }
  if (status === 401 || status === 403) {
    // The API's words are left out: they may quote part of the key.
    const check = post.keyEnv === null ? "no API key is configured" : `check ${post.keyEnv}`;
    return new SvcError(
      "provider_unauthenticated",
      `Cannot dispatch to ${post.provider}: not authenticated (${check}); ${state}`,
    );
  }
  return new SvcError(
    "provider_failed",
    `Cannot dispatch to ${post.provider}: ${state}${detail ? `: ${detail}` : ""}`,
  );
}

/**
 * POSTs `post.body` as JSON and hands a 2xx answer to `read`, retrying with exponential backoff
 * and jitter on the answers {@linkcode worthRetrying} names, network failures, timeouts and
 * {@linkcode RetryableFailure}s from `read`, honouring `Retry-After` (capped), up to `maxRetries`
 * times. Other 4xx answers fail at once with the API's message (401/403 as
 * provider_unauthenticated, naming the key's variable, never the key). Aborting
 * `post.signal` rejects at once with its reason, whatever the call was doing.
 */
export async function postWithRetries<T>(
  post: ApiPost,
  policy: RetryPolicy,
  read: (response: Response, signal: AbortSignal, touch: () => void) => Promise<T>,
): Promise<T> {
  const attempts = policy.maxRetries + 1;
  const payload = JSON.stringify(post.body);
  for (let attempt = 1;; attempt++) {
    post.signal.throwIfAborted();
    const scope = attemptScope(post.signal, policy.timeoutMs);
    let retry: RetryableFailure;
    try {
      const response = await fetch(post.url, {
        method: "POST",
        headers: post.headers,
        body: payload,
        signal: scope.signal,
      });
      if (!response.ok) throw await failure(response, post, policy.now());
      try {
        return await read(response, scope.signal, scope.touch);
      } finally {
        await response.body?.cancel().catch(() => {});
      }
    } catch (error) {
      if (post.signal.aborted) throw post.signal.reason;
      if (error instanceof SvcError) throw error;
      if (error instanceof SseFramingError) {
        throw new SvcError(
          "provider_failed",
          `Cannot dispatch to ${post.provider}: the stream is malformed (${error.message})`,
        );
      }
      if (error instanceof RetryableFailure) retry = error;
      else if (scope.timedOut()) {
        retry = new RetryableFailure(
          scope.touched()
            ? `the stream sent nothing for ${seconds(policy.timeoutMs)}`
            : `the API did not answer within ${seconds(policy.timeoutMs)}`,
        );
      } else {
        retry = new RetryableFailure("the connection to the API failed", {
          detail: redact(describe(error), post.key),
        });
      }
    } finally {
      scope.dispose();
    }
    if (attempt >= attempts) {
      const plural = attempt === 1 ? "attempt" : "attempts";
      throw new SvcError(
        "provider_failed",
        `Cannot dispatch to ${post.provider}: ${retry.message} after ${attempt} ${plural}${
          retry.detail ? `: ${retry.detail}` : ""
        }`,
      );
    }
    const backoff = Math.min(policy.maxRetryWaitMs, policy.retryBaseMs * 2 ** (attempt - 1));
    const wait = retry.retryAfterMs !== undefined
      ? Math.min(policy.maxRetryWaitMs, retry.retryAfterMs)
      : Math.round(backoff * (0.5 + 0.5 * policy.random()));
    await policy.sleep(wait, post.signal);
  }
}

/** Parses `text` as JSON, or throws a provider_failed SvcError saying the answer was not JSON. */
export function parseJson(post: ApiPost, text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new SvcError(
      "provider_failed",
      `Cannot dispatch to ${post.provider}: ${what} is not JSON (${redact(text, post.key)})`,
    );
  }
}

/** A provider_failed SvcError for an answer that does not have the documented shape. */
export function unexpectedShape(provider: string, what: string, error: z.ZodError): SvcError {
  const issue = error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.join(".") : "(root)";
  return new SvcError(
    "provider_failed",
    `Cannot dispatch to ${provider}: ${what} has an unexpected shape (${where}: ${
      issue?.message ?? "invalid"
    })`,
  );
}

/** The conversation a model API gets: the session's history, then the new prompt. */
export function chatMessages(request: DispatchRequest): ChatMessage[] {
  return [...(request.history ?? []), { role: "user", content: request.prompt }];
}

/** A content type as a server sent it, made safe to show: its media type, plain characters only. */
function mediaType(type: string): string {
  const media = type.split(";")[0]!.trim().slice(0, 100);
  return /^[\w.+\/-]+$/.test(media) ? media : "(unreadable)";
}

/** Passes bytes through unchanged, calling `touch` as each chunk arrives. */
function progress(touch: () => void): TransformStream<Uint8Array, Uint8Array> {
  return new TransformStream({
    transform(chunk, controller) {
      touch();
      controller.enqueue(chunk);
    },
  });
}

/** How to read an answer: as a server-sent-event stream, or as one JSON document. */
export interface AnswerReaders<T> {
  stream(post: ApiPost, body: ReadableStream<Uint8Array>): Promise<T>;
  document(post: ApiPost, text: string): T;
}

/**
 * POSTs a JSON body with retries and reads the answer: as a stream when one was asked for and
 * the server sends one, else as one JSON document (a server may ignore `stream`).
 */
export function postJson<T>(
  post: Omit<ApiPost, "headers"> & { headers: Headers; stream: boolean },
  policy: RetryPolicy,
  read: AnswerReaders<T>,
): Promise<T> {
  const { stream, ...rest } = post;
  rest.headers.set("content-type", "application/json");
  rest.headers.set("accept", stream ? "text/event-stream" : "application/json");
  return postWithRetries(rest, policy, async (response, _signal, touch) => {
    const type = response.headers.get("content-type") ?? "";
    if (stream && response.body && !type.includes("application/json")) {
      // A login page of a proxy, say: read as events it would look like a cut stream.
      if (type !== "" && !type.includes("text/event-stream")) {
        throw new SvcError(
          "provider_failed",
          `Cannot dispatch to ${rest.provider}: the API answered with content type ${
            mediaType(type)
          }, not an event stream or JSON`,
        );
      }
      const arrived = () => {
        touch();
        rest.activity?.();
      };
      return await read.stream(rest, response.body.pipeThrough(progress(arrived)));
    }
    const { text, over } = await boundedText(response, MAX_ANSWER_BYTES);
    if (over) {
      throw new SvcError(
        "provider_failed",
        `Cannot dispatch to ${rest.provider}: the answer is larger than ${
          MAX_ANSWER_BYTES / 1024 / 1024
        } MiB`,
      );
    }
    return read.document(rest, text);
  });
}

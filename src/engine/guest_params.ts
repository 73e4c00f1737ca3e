/**
 * The checks of the guest's params at the boundary, one per method of the protocol: what a
 * frame carries is untrusted until its check turns it into the type its handler takes. The maps
 * are typed by `guest_protocol.ts`, so a method without a check fails the type check.
 * @module
 */
import type { JsonValue } from "../schemas/mod.ts";
import { parseAgentCall } from "../schemas/mod.ts";
import {
  type AgentRequest,
  type DoneNotice,
  type GuestNotificationMethod,
  type GuestNotifications,
  type GuestRequestMethod,
  type GuestRequests,
  type ItemError,
  ScriptCallError,
} from "./guest_protocol.ts";
import { parsePosition } from "./journal.ts";
import { lenientCall } from "./lenient_call.ts";
import { clipText } from "../ledger/mod.ts";
import { RECORD_LIMITS } from "./record_bounds.ts";

/** What a check may need besides the params: the session's limits and where to report. */
export interface ParamsContext {
  /** Items one `parallel()` or `pipeline()` may have. */
  maxItems: number;
  /** Reports what the guest (not the script) got wrong, without refusing the frame. */
  security(kind: "malformed_frame", detail: string): void;
}

/**
 * Checks a request's params: the typed params, or a {@linkcode ScriptCallError} thrown for the
 * script to see (the frame is answered with that error).
 */
export type RequestCheck<M extends GuestRequestMethod> = (
  params: unknown,
  context: ParamsContext,
) => GuestRequests[M]["params"];

/** Checks a notification's params: the typed params, or why the frame is malformed. */
export type NotificationCheck<M extends GuestNotificationMethod> = (
  params: unknown,
  context: ParamsContext,
) => { ok: true; params: GuestNotifications[M] } | { ok: false; detail: string };

/** One check per request method. */
export const REQUEST_CHECKS: { [M in GuestRequestMethod]: RequestCheck<M> } = {
  agent: (params, context) => parseAgentRequest(params, context),
  workflow: (params) => parseWorkflowRequest(params),
};

/** One check per notification method; the texts are those of the security events. */
export const NOTIFICATION_CHECKS: { [M in GuestNotificationMethod]: NotificationCheck<M> } = {
  phase: (params) => ({ ok: true, params: { title: stringParam(params, "title") } }),
  log: (params) => ({ ok: true, params: { message: stringParam(params, "message") } }),
  item_error: (params, { maxItems }) => {
    const report = parseItemError(params, maxItems);
    return report
      ? { ok: true, params: report }
      : { ok: false, detail: "item_error frame without a valid report" };
  },
  replayed: (params) => {
    const positions = params !== null && typeof params === "object"
      ? (params as Record<string, unknown>).positions
      : undefined;
    return Array.isArray(positions) && positions.length > 0
      ? { ok: true, params: { positions } }
      : { ok: false, detail: "replayed frame without positions" };
  },
  done: (params) => {
    const outcome = parseDone(params);
    return outcome
      ? { ok: true, params: outcome }
      : { ok: false, detail: "done frame without a valid outcome" };
  },
};

function stringParam(params: unknown, key: string): string {
  const value = params !== null && typeof params === "object"
    ? (params as Record<string, unknown>)[key]
    : undefined;
  return typeof value === "string" ? value : "";
}

/**
 * Splits an `agent` request into the script's call and the guest's placement of it, and checks
 * the call: what Claude Code would dispatch anyway is made dispatchable with a warning
 * (lenient_call.ts); another malformed call is a script error `agent()` throws; a malformed
 * placement is the guest's fault, reported, and the call runs live, unplaced.
 */
export function parseAgentRequest(params: unknown, context: ParamsContext): AgentRequest {
  let raw: unknown = params;
  let position: number[] | undefined;
  let replay = false;
  let ignored: unknown;
  let group: string | undefined;
  if (params !== null && typeof params === "object" && !Array.isArray(params)) {
    const { position: given, replay: asked, ignored: notObject, group: inGroup, ...call } =
      params as Record<string, unknown>;
    raw = call;
    ignored = notObject;
    if (typeof inGroup === "string") group = clipText(inGroup, RECORD_LIMITS.short);
    position = given === undefined ? undefined : parsePosition(given);
    if (given !== undefined && position === undefined) {
      context.security("malformed_frame", "agent request with a malformed position");
    }
    replay = asked === true && position !== undefined;
  }
  const lenient = lenientCall(raw, ignored);
  if (lenient.refusal !== undefined) throw new ScriptCallError("TypeError", lenient.refusal);
  const parsed = parseAgentCall(lenient.params);
  if (!parsed.ok) throw new ScriptCallError("TypeError", parsed.message);
  const given = lenient.given === undefined ? {} : { given: lenient.given };
  return {
    call: parsed.call,
    position,
    replay,
    warnings: lenient.warnings,
    ...given,
    ...(group !== undefined ? { group } : {}),
  };
}

/** Reads a `workflow` request's name or ref, or `{scriptPath}`; anything else the script sees. */
export function parseWorkflowRequest(params: unknown): GuestRequests["workflow"]["params"] {
  const given = params !== null && typeof params === "object"
    ? params as { ref?: unknown; scriptPath?: unknown }
    : {};
  const ref = typeof given.ref === "string" && given.ref !== ""
    ? given.ref
    : typeof given.scriptPath === "string" && given.scriptPath !== ""
    ? { scriptPath: given.scriptPath }
    : undefined;
  if (ref === undefined) {
    throw new ScriptCallError(
      "TypeError",
      "workflow(): the name or ref must be a non-empty string, or {scriptPath}",
    );
  }
  return ref;
}

/** Most stages a pipeline report may name: far past any script's, below any overflow. */
const MAX_STAGE = 1_000_000;

/**
 * Checks an `item_error` notification: every field of the right type and range, else
 * undefined (a malformed frame). Texts are kept whole here; the run clips what it records.
 */
export function parseItemError(params: unknown, maxItems: number): ItemError | undefined {
  if (params === null || typeof params !== "object" || Array.isArray(params)) return undefined;
  const p = params as Record<string, unknown>;
  const index = p.index;
  const stage = p.stage;
  if (p.fn !== "parallel" && p.fn !== "pipeline") return undefined;
  if (typeof index !== "number" || !Number.isSafeInteger(index)) return undefined;
  if (index < 0 || index >= maxItems) return undefined;
  if (p.fn === "parallel" ? stage !== null : !isStage(stage)) return undefined;
  if (p.label !== null && typeof p.label !== "string") return undefined;
  if (typeof p.name !== "string" || typeof p.message !== "string") return undefined;
  if (typeof p.stack !== "string") return undefined;
  return {
    fn: p.fn,
    index,
    stage: stage as number | null,
    label: p.label,
    error: { name: p.name, message: p.message, stack: p.stack },
  };
}

function isStage(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 &&
    value < MAX_STAGE;
}

function parseDone(params: unknown): DoneNotice | undefined {
  if (params === null || typeof params !== "object") return undefined;
  const p = params as Record<string, unknown>;
  if (p.ok === true) return { kind: "returned", value: (p.value ?? null) as JsonValue };
  if (p.ok === false && p.error !== null && typeof p.error === "object") {
    const e = p.error as Record<string, unknown>;
    return {
      kind: "threw",
      error: {
        name: typeof e.name === "string" ? e.name : "Error",
        message: typeof e.message === "string" ? e.message : "",
        stack: typeof e.stack === "string" ? e.stack : "",
      },
    };
  }
  return undefined;
}

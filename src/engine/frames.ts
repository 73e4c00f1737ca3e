import { timingSafeEqual } from "../platform/mod.ts";
import {
  GUEST_NOTIFICATION_METHODS,
  GUEST_REQUEST_METHODS,
  type GuestNotificationMethod,
  type GuestRequestMethod,
} from "./guest_protocol.ts";

/** The one constant-time comparison, as the guest bridge uses it for nonces. */
export { timingSafeEqual };

/** Methods a guest may call. Anything else is a security event. */
const REQUESTS: ReadonlySet<string> = new Set(GUEST_REQUEST_METHODS);
const NOTIFICATIONS: ReadonlySet<string> = new Set(GUEST_NOTIFICATION_METHODS);

/**
 * A frame from the guest that carried the right nonce and a method of the protocol. Its params
 * are still unchecked: `guest_params.ts` checks them before a handler gets them.
 */
export type GuestMessage =
  | { kind: "request"; id: number; method: GuestRequestMethod; params: unknown }
  | { kind: "notification"; method: GuestNotificationMethod; params: unknown };

/** Why a line from the guest was dropped. */
export type SecurityEventKind =
  | "non_frame_line"
  | "bad_nonce"
  | "oversize_frame"
  | "malformed_frame";

/** What one stdout line of a guest turned out to be. */
export type Classified =
  | { type: "message"; message: GuestMessage }
  | { type: "dropped"; kind: SecurityEventKind; detail: string; stray?: string }
  | { type: "empty" };

function preview(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * Classifies one line from a guest's stdout. Only a JSON-RPC 2.0 frame with the run's nonce
 * and a known method is a message; a line that is not a frame is stray output.
 */
export function classifyLine(text: string, nonce: string): Classified {
  if (text.trim() === "") return { type: "empty" };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { type: "dropped", kind: "non_frame_line", detail: preview(text), stray: text };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { type: "dropped", kind: "non_frame_line", detail: preview(text), stray: text };
  }
  const frame = value as Record<string, unknown>;
  if (frame.jsonrpc !== "2.0") {
    return { type: "dropped", kind: "non_frame_line", detail: preview(text), stray: text };
  }
  if (typeof frame.nonce !== "string" || !timingSafeEqual(frame.nonce, nonce)) {
    return {
      type: "dropped",
      kind: "bad_nonce",
      detail: `frame without the run's nonce: ${preview(text)}`,
    };
  }
  const method = frame.method;
  if (typeof method !== "string") {
    return { type: "dropped", kind: "malformed_frame", detail: "frame without a method" };
  }
  if ("id" in frame) {
    if (!REQUESTS.has(method) || !Number.isSafeInteger(frame.id)) {
      return {
        type: "dropped",
        kind: "malformed_frame",
        detail: `unknown request '${preview(method)}'`,
      };
    }
    return {
      type: "message",
      message: {
        kind: "request",
        id: frame.id as number,
        method: method as GuestRequestMethod,
        params: frame.params,
      },
    };
  }
  if (!NOTIFICATIONS.has(method)) {
    return {
      type: "dropped",
      kind: "malformed_frame",
      detail: `unknown notification '${preview(method)}'`,
    };
  }
  return {
    type: "message",
    message: {
      kind: "notification",
      method: method as GuestNotificationMethod,
      params: frame.params,
    },
  };
}

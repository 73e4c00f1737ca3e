// The methods of the host/guest protocol, as the guest sends them. The host's
// src/engine/guest_protocol.ts names the same methods with the types of their params and
// results; test/guest_protocol_test.ts fails when the two lists differ. This module imports
// nothing: the guest never loads code from src/.

/** Request `agent`: one `agent(prompt, options)` call, answered with `{value, spent}`. */
export const AGENT = "agent";
/** Request `workflow`: a sub-workflow's name or ref, answered with `{body, filename}`. */
export const WORKFLOW = "workflow";

/** Notification `phase`: `{title}`. */
export const PHASE = "phase";
/** Notification `log`: `{message}`. */
export const LOG = "log";
/** Notification `item_error`: an item of `parallel()` or `pipeline()` threw. */
export const ITEM_ERROR = "item_error";
/** Notification `replayed`: `{positions}` of calls answered from the values offered at start. */
export const REPLAYED = "replayed";
/** Notification `done`: `{ok: true, value}` or `{ok: false, error}`, the last frame. */
export const DONE = "done";

/** Every request method the guest sends. */
export const REQUEST_METHODS = [AGENT, WORKFLOW];
/** Every notification method the guest sends. */
export const NOTIFICATION_METHODS = [PHASE, LOG, ITEM_ERROR, REPLAYED, DONE];

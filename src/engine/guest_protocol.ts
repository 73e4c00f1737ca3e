/**
 * The host/guest protocol in one place: every method a guest may send, with the types of its
 * params and results, and the handler maps the host must fill for all of them. A method added
 * to {@linkcode GuestRequests} or {@linkcode GuestNotifications} without a handler, or without
 * a check of its params (`guest_params.ts`), fails the type check, as Temporal's
 * `ActivationHandler` does for its sandbox. The guest's side (`guest/protocol.js`) names the
 * same methods; `test/guest_protocol_test.ts` holds the two lists equal.
 * @module
 */
import type { AgentCall, JsonValue } from "../schemas/mod.ts";
import type { OfferedCall } from "./journal.ts";
import type { WorkflowRef } from "./sub_workflow.ts";

/** An error the guest reported for the script: name, message and the raw stack. */
export interface ScriptFailure {
  name: string;
  message: string;
  stack: string;
}

/**
 * An item of `parallel()` or `pipeline()` that threw, as the guest reports it: where (the
 * item's index, and for a pipeline the stage, both from 0), the label of the `agent()` call the
 * error came from if it had one, and the error. Untrusted: checked by `parseItemError`.
 */
export interface ItemError {
  fn: "parallel" | "pipeline";
  index: number;
  stage: number | null;
  label: string | null;
  error: ScriptFailure;
}

/** How a guest session ended. */
export type GuestOutcome =
  | { kind: "returned"; value: JsonValue }
  | { kind: "threw"; error: ScriptFailure }
  | { kind: "crashed"; message: string; outOfMemory: boolean }
  | { kind: "aborted"; reason: unknown };

/** The answer of the host to one `agent()` call. */
export interface AgentReply {
  value: JsonValue;
  spent: number;
}

/** The host's answer to `workflow()`: the checked body of the sub-workflow. */
export interface WorkflowReply {
  body: string;
  filename: string;
}

/**
 * Thrown by a handler (or by the check of a request's params) to make the call throw inside the
 * script: a script bug, not a failed call.
 */
export class ScriptCallError extends Error {
  readonly type: "TypeError" | "RangeError" | "Error";
  constructor(type: "TypeError" | "RangeError" | "Error", message: string) {
    super(message);
    this.name = "ScriptCallError";
    this.type = type;
  }
}

/**
 * An `agent()` request once checked: the script's call, and the guest's placement of it. A
 * malformed placement is the guest's fault, not the script's: the call then runs live, unplaced.
 */
export interface AgentRequest {
  /** The script's call, `{prompt, options}`, checked against the agent options schema. */
  call: AgentCall;
  /** The call's logical position in its script, when the guest sent a valid one. */
  position: number[] | undefined;
  /** Whether the guest asks the host to replay the call (only with a position). */
  replay: boolean;
  /** What was ignored to make the call dispatchable, one line each, for the narration. */
  warnings: string[];
  /**
   * The options as the script gave them, when some were ignored: the journal hash covers
   * these, as the guest's replay check does.
   */
  given?: Record<string, unknown>;
  /** The group of a sub-workflow's call (`▸ name`): its phase when it names none. */
  group?: string;
}

/** A `replayed` notification: the positions of calls the guest answered from the offer. */
export interface ReplayedNotice {
  /** Not empty; each item is checked as a position by the handler, in order. */
  positions: readonly unknown[];
}

/** How a guest reports its script's end: only the endings the guest itself can report. */
export type DoneNotice = Extract<GuestOutcome, { kind: "returned" | "threw" }>;

/**
 * The guest's requests, each answered by one response frame: `params` as the handler gets them
 * after the check at the boundary, `result` as the guest receives it.
 */
export interface GuestRequests {
  /** `agent(prompt, options)`. */
  agent: { params: AgentRequest; result: AgentReply };
  /** `workflow(nameOrRef)`: the host resolves and checks the sub-workflow's body. */
  workflow: { params: WorkflowRef; result: WorkflowReply };
}

/** The guest's notifications, which get no answer: each with its params once checked. */
export interface GuestNotifications {
  /** `phase(title)`. */
  phase: { title: string };
  /** `log(message)`. */
  log: { message: string };
  /** An item of `parallel()` or `pipeline()` threw: its result is null. */
  item_error: ItemError;
  /** Calls the guest answered itself from the values offered at start. */
  replayed: ReplayedNotice;
  /** The script returned or threw: the guest's last frame. */
  done: DoneNotice;
}

/** What the host sends the guest first: the `init` frame's params, the nonce first. */
export interface GuestInit {
  nonce: string;
  body: string;
  filename: string;
  hasArgs: boolean;
  args: JsonValue | undefined | null;
  budget: { total: number | null; unit: string };
  frameLimit: number;
  maxItems: number;
  /** Calls the guest may replay, by position, with the values it may answer them with. */
  replay: OfferedCall[];
  /** `agent()` calls the run may make: past it, the guest replays nothing itself. */
  maxAgents: number;
}

/** A method of a guest request. */
export type GuestRequestMethod = keyof GuestRequests;
/** A method of a guest notification. */
export type GuestNotificationMethod = keyof GuestNotifications;

/**
 * The host's answers to every request, one per method: a mapped type, so that a request
 * without a handler fails the type check. `signal` aborts when the guest went or the run stopped.
 */
export type GuestRequestHandlers = {
  [M in GuestRequestMethod]: (
    params: GuestRequests[M]["params"],
    signal: AbortSignal,
  ) => Promise<GuestRequests[M]["result"]>;
};

/** The host's reactions to every notification, one per method, checked like the requests'. */
export type GuestNotificationHandlers = {
  [M in GuestNotificationMethod]: (params: GuestNotifications[M]) => void;
};

/** Every request method, in the order of {@linkcode GuestRequests}. */
export const GUEST_REQUEST_METHODS: readonly GuestRequestMethod[] = Object.freeze(
  Object.keys(
    { agent: true, workflow: true } satisfies Record<GuestRequestMethod, true>,
  ) as GuestRequestMethod[],
);

/** Every notification method, in the order of {@linkcode GuestNotifications}. */
export const GUEST_NOTIFICATION_METHODS: readonly GuestNotificationMethod[] = Object.freeze(
  Object.keys(
    {
      phase: true,
      log: true,
      item_error: true,
      replayed: true,
      done: true,
    } satisfies Record<GuestNotificationMethod, true>,
  ) as GuestNotificationMethod[],
);

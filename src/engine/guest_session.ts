import type { IsolationBackend } from "../isolation/mod.ts";
import type { GuestSandbox } from "../ledger/mod.ts";
import type { ExitStatus } from "../platform/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";
import { classifyLine, type GuestMessage, type SecurityEventKind } from "./frames.ts";
import { frameSender } from "./frame_sender.ts";
import { NOTIFICATION_CHECKS, type ParamsContext, REQUEST_CHECKS } from "./guest_params.ts";
import {
  type GuestInit,
  type GuestNotificationHandlers,
  type GuestNotificationMethod,
  type GuestOutcome,
  type GuestRequestHandlers,
  type GuestRequestMethod,
  type GuestRequests,
  type ItemError,
  type ReplayedNotice,
  ScriptCallError,
} from "./guest_protocol.ts";
import type { OfferedCall } from "./journal.ts";
import { readLines } from "../streams/mod.ts";

export {
  type AgentReply,
  type GuestOutcome,
  type ItemError,
  ScriptCallError,
  type ScriptFailure,
  type WorkflowReply,
} from "./guest_protocol.ts";
export { parseItemError } from "./guest_params.ts";

/**
 * Callbacks through which a session reports to its run: the protocol's requests and
 * notifications, with params already checked, and what the session itself observes.
 */
export interface GuestHandlers {
  /** Answers `agent()`; throws a ScriptCallError for the script to see. */
  agent: GuestRequestHandlers["agent"];
  /** Resolves `workflow(nameOrRef)`; throws a ScriptCallError for the script to see. */
  workflow(
    params: GuestRequests["workflow"]["params"],
  ): Promise<GuestRequests["workflow"]["result"]>;
  phase(title: string): void;
  log(message: string): void;
  /** The guest answered a call itself from the values offered at start (`replay`). */
  replayed?(params: ReplayedNotice): void;
  /** An item of `parallel()` or `pipeline()` threw: its result is null. */
  itemError(report: ItemError): void;
  /** Stray output of the script: stderr lines, and stdout lines that were not frames. */
  output(text: string, stream: "stdout" | "stderr"): void;
  security(kind: SecurityEventKind, detail: string): void;
  /**
   * Undefined when every answer given so far is durable; else resolves once they are (true)
   * or when one never will be (false). The host answers `agent()` while the answer's journal
   * entry commits; every line the host reads from the guest after writing an answer (frames
   * and stderr alike) waits for this, or is dropped, so that nothing the script does with a
   * value reaches the host before the value is durable.
   */
  gate?(): Promise<boolean> | undefined;
  /** The guest started: its process id, and what confines it (when its tier says). */
  spawned?(pid: number, sandbox: GuestSandbox | undefined): void;
  /** The guest waits for a free microVM slot before it starts. */
  queued?(message: string): void;
}

/** Options of {@linkcode runGuest}. */
export interface GuestSessionOptions {
  backend: IsolationBackend;
  scratchRoot: string;
  body: string;
  filename: string;
  args: { given: boolean; value?: JsonValue };
  budget: { total: number | null; unit: string };
  handlers: GuestHandlers;
  /** Aborting kills the guest at once. */
  signal: AbortSignal;
  heapMb?: number;
  seed?: number;
  /** CPU seconds after which the guest is killed even if the host is gone. */
  cpuSeconds?: number;
  frameLimit?: number;
  maxItems?: number;
  /**
   * Calls the guest may replay, by position, with the values it may answer them with; awaited
   * once the guest is spawned, so that reading them overlaps its boot.
   */
  replay?: OfferedCall[] | Promise<OfferedCall[]>;
  /** `agent()` calls the run may make: past it, the guest replays nothing itself. */
  maxAgents?: number;
  /**
   * Where the guest's teardown (its scratch space removed) goes when the caller does not wait
   * for it; the caller awaits what is left there before it closes. Without, the session waits.
   */
  teardowns?: Set<Promise<void>>;
  /** Source of the nonce; tests pass a known one to look for leaks. */
  nonce?: () => string;
}

const STDERR_TAIL = 40;
const STDERR_LINE_LIMIT = 16 * 1024;

/** A fresh 256-bit nonce, hex encoded. */
export function randomNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function crashOutcome(status: ExitStatus, stderr: string[], heapMb: number): GuestOutcome {
  const tail = stderr.join("\n");
  if (/Reached heap limit|JavaScript heap out of memory/.test(tail)) {
    return {
      kind: "crashed",
      outOfMemory: true,
      message: `the script ran out of memory: it reached the guest's heap limit of ${heapMb} MiB`,
    };
  }
  if (/out of memory/i.test(tail)) {
    return { kind: "crashed", outOfMemory: true, message: "the script ran out of memory" };
  }
  if (status.signal === "SIGXCPU") {
    return {
      kind: "crashed",
      outOfMemory: false,
      message: "the script used up its CPU time limit",
    };
  }
  const how = status.signal ? `was killed by ${status.signal}` : `exited with code ${status.code}`;
  const last = stderr.filter((line) => line.trim() !== "").at(-1);
  return {
    kind: "crashed",
    outOfMemory: false,
    message: `the script's process ${how} before the script finished${
      last ? ` (last output: ${last.slice(0, 300)})` : ""
    }`,
  };
}

/** What the dispatch of a guest's frames needs from its session. */
interface DispatchOptions {
  handlers: GuestHandlers;
  maxItems: number;
  /** Aborts the calls still running when the session ends. */
  calls: AbortSignal;
  send(message: unknown): Promise<void>;
  /** Ends the session with the outcome the guest reported. */
  settle(outcome: GuestOutcome): void;
}

/**
 * The host's end of the protocol: every method's params checked at the boundary, then given to
 * its handler in the exhaustive maps; each request answered with its result or error frame.
 */
function messageDispatcher(options: DispatchOptions): (message: GuestMessage) => void {
  const { handlers, calls, send } = options;
  const context: ParamsContext = {
    maxItems: options.maxItems,
    security: (kind, detail) => handlers.security(kind, detail),
  };
  const requests: GuestRequestHandlers = {
    agent: (params, signal) => handlers.agent(params, signal),
    workflow: (params) => handlers.workflow(params),
  };
  const notifications: GuestNotificationHandlers = {
    phase: ({ title }) => handlers.phase(title),
    log: ({ message }) => handlers.log(message),
    item_error: (report) => handlers.itemError(report),
    replayed: (notice) => handlers.replayed?.(notice),
    done: (outcome) => options.settle(outcome),
  };

  function notified<M extends GuestNotificationMethod>(method: M, params: unknown): void {
    // A session that records no replays does not look at their frames either.
    if (method === "replayed" && !handlers.replayed) return;
    const checked = NOTIFICATION_CHECKS[method](params, context);
    if (checked.ok) notifications[method](checked.params);
    else handlers.security("malformed_frame", checked.detail);
  }

  function answer<M extends GuestRequestMethod>(
    method: M,
    params: unknown,
  ): Promise<GuestRequests[M]["result"]> {
    try {
      return requests[method](REQUEST_CHECKS[method](params, context), calls);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  return (message) => {
    if (message.kind === "notification") return notified(message.method, message.params);
    const { id } = message;
    answer(message.method, message.params).then(
      (result) => send({ jsonrpc: "2.0", id, result }),
      (error) => {
        if (calls.aborted) return;
        const known = error instanceof ScriptCallError;
        send({
          jsonrpc: "2.0",
          id,
          error: known
            ? { code: -32602, message: error.message, data: { type: error.type } }
            : { code: -32603, message: "the host could not complete the call" },
        });
      },
    );
  };
}

/**
 * Runs one script in a guest from spawn to exit: delivers the init frame with the nonce,
 * answers requests, turns notifications and stray output into callbacks, and always
 * disposes of the guest, whatever happens.
 */
export async function runGuest(options: GuestSessionOptions): Promise<GuestOutcome> {
  const heapMb = options.heapMb ?? 512;
  const frameLimit = options.frameLimit ?? 4 * 1024 * 1024;
  const maxItems = options.maxItems ?? 4096;
  const nonce = (options.nonce ?? randomNonce)();
  const { handlers, signal } = options;
  if (signal.aborted) return { kind: "aborted", reason: signal.reason };

  let handle;
  try {
    handle = await options.backend.spawn({
      scratchRoot: options.scratchRoot,
      heapMb,
      seed: options.seed ?? 1,
      cpuSeconds: options.cpuSeconds,
      signal,
      ...(handlers.queued ? { onQueued: (message: string) => handlers.queued?.(message) } : {}),
    });
  } catch (error) {
    // Stopped while still waiting for its VM (a timeout, a cancel): the run stopped, nothing ran.
    if (signal.aborted) return { kind: "aborted", reason: signal.reason };
    throw error;
  }
  const child = handle.process;
  handlers.spawned?.(child.pid, handle.sandbox);
  const calls = new AbortController();
  const writer = child.stdin.getWriter();
  // The commits of the answers written to the guest so far: a line the host reads after such
  // a write may be the script's use of an answer, and waits for them (`handlers.gate`). A line
  // read before it was written before the guest could see the answer, and need not wait.
  let seen: Promise<boolean> | undefined;
  const sender = frameSender(writer, () => (seen = handlers.gate?.()));
  const afterSeen = async (): Promise<boolean> => {
    const gate = seen;
    if (gate === undefined) return true;
    const ok = await gate;
    if (ok && seen === gate) seen = undefined;
    return ok;
  };
  const send = (message: unknown) => sender.send(message);
  const stderrTail: string[] = [];

  let settle!: (outcome: GuestOutcome) => void;
  const finished = new Promise<GuestOutcome>((resolve) => (settle = resolve));
  const onAbort = () => settle({ kind: "aborted", reason: signal.reason });
  signal.addEventListener("abort", onAbort, { once: true });
  // The signal may have fired while the guest was being spawned.
  if (signal.aborted) onAbort();

  const onMessage = messageDispatcher({
    handlers,
    maxItems,
    calls: calls.signal,
    send,
    settle: (outcome) => settle(outcome),
  });

  const stdoutPump = (async () => {
    for await (const line of readLines(child.stdout, frameLimit)) {
      // Reading a frame has no effect: it is done while the gate's commit is still running.
      const classified = line.kind === "line"
        ? classifyLine(line.text, nonce)
        : { type: "oversize" as const, bytes: line.bytes };
      if (seen !== undefined && !(await afterSeen())) continue;
      if (classified.type === "oversize") {
        handlers.security(
          "oversize_frame",
          `dropped a ${classified.bytes}-byte line, over the ${frameLimit}-byte frame limit`,
        );
        continue;
      }
      if (classified.type === "message") onMessage(classified.message);
      else if (classified.type === "dropped") {
        handlers.security(classified.kind, classified.detail);
        if (classified.stray !== undefined) handlers.output(classified.stray, "stdout");
      }
    }
  })().catch(() => {});
  const stderrPump = (async () => {
    for await (const line of readLines(child.stderr, STDERR_LINE_LIMIT)) {
      if (seen !== undefined && !(await afterSeen())) continue;
      const text = line.kind === "line"
        ? line.text
        : `[${line.bytes} bytes of output dropped: line too long]`;
      stderrTail.push(text);
      if (stderrTail.length > STDERR_TAIL) stderrTail.shift();
      handlers.output(text, "stderr");
    }
  })().catch(() => {});

  child.status.then(async (status) => {
    // Let the pumps drain what the guest wrote before it died; a done frame may be among it.
    await Promise.all([stdoutPump, stderrPump]);
    settle(crashOutcome(status, stderrTail, heapMb));
  });

  try {
    const replay = await options.replay ?? [];
    await send({
      jsonrpc: "2.0",
      method: "init",
      params: {
        // First, so that the guest can take it out of the frame's bytes (guest/channel.js).
        nonce,
        body: options.body,
        filename: options.filename,
        hasArgs: options.args.given,
        args: options.args.given ? options.args.value : null,
        budget: options.budget,
        frameLimit,
        maxItems,
        replay,
        maxAgents: options.maxAgents ?? Number.MAX_SAFE_INTEGER,
      } satisfies GuestInit,
    });
    return await finished;
  } finally {
    signal.removeEventListener("abort", onAbort);
    // Calls still running end with the run's own reason (its timeout, a cancel), so that their
    // journal entries name it.
    calls.abort(signal.aborted ? signal.reason : new Error("the script finished"));
    // The kill is at once; removing the scratch space need not hold up the run's end.
    const disposal = handle.dispose();
    sender.close();
    await child.status;
    await writer.close().catch(() => {});
    await Promise.all([stdoutPump, stderrPump]);
    if (options.teardowns) {
      options.teardowns.add(disposal);
      disposal.finally(() => options.teardowns?.delete(disposal)).catch(() => {});
    } else await disposal;
  }
}

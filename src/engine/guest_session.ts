import type { IsolationBackend } from "../isolation/mod.ts";
import type { GuestSandbox } from "../ledger/mod.ts";
import type { ExitStatus } from "../platform/mod.ts";
import type { JsonValue } from "../schemas/mod.ts";
import { classifyLine, type GuestMessage, type SecurityEventKind } from "./frames.ts";
import type { OfferedCall } from "./journal.ts";
import { readLines } from "../streams/mod.ts";

/** An error the guest reported for the script: name, message and the raw stack. */
export interface ScriptFailure {
  name: string;
  message: string;
  stack: string;
}

/**
 * An item of `parallel()` or `pipeline()` that threw, as the guest reports it: where (the
 * item's index, and for a pipeline the stage, both from 0), the label of the `agent()` call the
 * error came from if it had one, and the error. Untrusted: checked by {@linkcode parseItemError}.
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

/** Thrown by a handler to make the call throw inside the script: a script bug, not a failed call. */
export class ScriptCallError extends Error {
  readonly type: "TypeError" | "RangeError" | "Error";
  constructor(type: "TypeError" | "RangeError" | "Error", message: string) {
    super(message);
    this.name = "ScriptCallError";
    this.type = type;
  }
}

/** The host's answer to `workflow()`: the checked body of the sub-workflow. */
export interface WorkflowReply {
  body: string;
  filename: string;
}

/** Callbacks through which a session reports to its run. */
export interface GuestHandlers {
  agent(params: unknown, signal: AbortSignal): Promise<AgentReply>;
  /** Resolves `workflow(nameOrRef)`; throws a ScriptCallError for the script to see. */
  workflow(params: unknown): Promise<WorkflowReply>;
  phase(title: string): void;
  log(message: string): void;
  /** The guest answered a call itself from the values offered at start (`replay`). */
  replayed?(params: unknown): void;
  /** An item of `parallel()` or `pipeline()` threw: its result is null. */
  itemError(report: ItemError): void;
  /** Stray output of the script: stderr lines, and stdout lines that were not frames. */
  output(text: string, stream: "stdout" | "stderr"): void;
  security(kind: SecurityEventKind, detail: string): void;
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
  /** Calls the guest may replay, by position, with the values it may answer them with. */
  replay?: OfferedCall[];
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

function stringParam(params: unknown, key: string): string {
  const value = params !== null && typeof params === "object"
    ? (params as Record<string, unknown>)[key]
    : undefined;
  return typeof value === "string" ? value : "";
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

function parseDone(params: unknown): GuestOutcome | undefined {
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
  const encoder = new TextEncoder();
  const send = (message: unknown) =>
    writer.write(encoder.encode(`${JSON.stringify(message)}\n`)).catch(() => {});
  const stderrTail: string[] = [];

  let settle!: (outcome: GuestOutcome) => void;
  const finished = new Promise<GuestOutcome>((resolve) => (settle = resolve));
  const onAbort = () => settle({ kind: "aborted", reason: signal.reason });
  signal.addEventListener("abort", onAbort, { once: true });
  // The signal may have fired while the guest was being spawned.
  if (signal.aborted) onAbort();

  function onMessage(message: GuestMessage): void {
    if (message.kind === "notification") {
      if (message.method === "phase") handlers.phase(stringParam(message.params, "title"));
      else if (message.method === "log") handlers.log(stringParam(message.params, "message"));
      else if (message.method === "replayed") handlers.replayed?.(message.params);
      else if (message.method === "item_error") {
        const report = parseItemError(message.params, maxItems);
        if (report) handlers.itemError(report);
        else handlers.security("malformed_frame", "item_error frame without a valid report");
      } else if (message.method === "done") {
        const outcome = parseDone(message.params);
        if (outcome) settle(outcome);
        else handlers.security("malformed_frame", "done frame without a valid outcome");
      }
      return;
    }
    const { id } = message;
    const reply = message.method === "workflow"
      ? handlers.workflow(message.params)
      : handlers.agent(message.params, calls.signal);
    reply.then(
      (result) => send({ jsonrpc: "2.0", id, result }),
      (error) => {
        if (calls.signal.aborted) return;
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
  }

  const stdoutPump = (async () => {
    for await (const line of readLines(child.stdout, frameLimit)) {
      if (line.kind === "oversize") {
        handlers.security(
          "oversize_frame",
          `dropped a ${line.bytes}-byte line, over the ${frameLimit}-byte frame limit`,
        );
        continue;
      }
      const classified = classifyLine(line.text, nonce);
      if (classified.type === "message") onMessage(classified.message);
      else if (classified.type === "dropped") {
        handlers.security(classified.kind, classified.detail);
        if (classified.stray !== undefined) handlers.output(classified.stray, "stdout");
      }
    }
  })().catch(() => {});
  const stderrPump = (async () => {
    for await (const line of readLines(child.stderr, STDERR_LINE_LIMIT)) {
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
        replay: options.replay ?? [],
        maxAgents: options.maxAgents ?? Number.MAX_SAFE_INTEGER,
      },
    });
    return await finished;
  } finally {
    signal.removeEventListener("abort", onAbort);
    // Calls still running end with the run's own reason (its timeout, a cancel), so that their
    // journal entries name it.
    calls.abort(signal.aborted ? signal.reason : new Error("the script finished"));
    // The kill is at once; removing the scratch space need not hold up the run's end.
    const disposal = handle.dispose();
    await child.status;
    await writer.close().catch(() => {});
    await Promise.all([stdoutPump, stderrPump]);
    if (options.teardowns) {
      options.teardowns.add(disposal);
      disposal.finally(() => options.teardowns?.delete(disposal)).catch(() => {});
    } else await disposal;
  }
}

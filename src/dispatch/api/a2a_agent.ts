/**
 * An agent elsewhere as a provider (`{"type": "a2a", "url": ..., "token_env": ...}`): a call
 * becomes a message to a remote A2A agent (another svc host among them), sent with the SDK's
 * client after reading the agent's card at `url`; the task it starts is followed to its end,
 * an abort cancels it there, and the answer is its artifacts' text (or a lone data part's
 * value). Usage comes from the reply's `svc.usage` metadata when the agent reports it (a svc
 * host does); otherwise the call is unmetered: zero tokens, cost null.
 * @module
 */
import { type Message, type Part, Role, type Task, TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { SvcError } from "../../errors/mod.ts";
import type { JsonValue } from "../../schemas/mod.ts";
import type { Availability, DispatchRequest, DispatchResult, Provider, Usage } from "../types.ts";
import { apiKey, probeKey, redact } from "./http.ts";

/** Options of {@linkcode a2aAgentProvider}. */
export interface A2aAgentOptions {
  /** Provider name calls route by (`agent(..., {provider})`). */
  name: string;
  /** The agent's base URL: its card is at `{url}/.well-known/agent-card.json`. */
  url: string;
  /** Name of the environment variable holding the bearer token; none: no token is sent. */
  tokenEnv?: string;
  /** How often the task is read while it runs, in ms (doubling up to 2 s). Default 100. */
  pollMs?: number;
}

/** The metadata key a svc host reports usage under (`{input_tokens, output_tokens, cost_usd}`). */
export const A2A_USAGE_KEY = "svc.usage";
/** Longest answer taken from an agent, in characters. */
const ANSWER_LIMIT = 1024 * 1024;
/** How long a cancel sent after an abort may take, in ms. */
const CANCEL_TIMEOUT_MS = 5_000;

const FINAL_STATES: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);
/** States in which the agent waits for something svc cannot give. */
const STUCK_STATES: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

function textOf(parts: readonly Part[]): string {
  return parts.map((part) => part.content?.$case === "text" ? part.content.value : "")
    .filter((text) => text !== "").join("\n");
}

/** The answer of a completed task: a lone data part's value, else every text part's text. */
function answerOf(parts: readonly Part[]): JsonValue {
  const only = parts.length === 1 ? parts[0]?.content : undefined;
  if (only?.$case === "data") return only.value as JsonValue;
  const text = textOf(parts);
  return text.length > ANSWER_LIMIT ? text.slice(0, ANSWER_LIMIT) : text;
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;
}

/** Usage from the reply's metadata; zero tokens and a null cost when it reports none. */
export function usageOfReply(
  metadata: Record<string, unknown> | undefined,
): { usage: Usage; cost_usd: number | null } {
  const reported = metadata?.[A2A_USAGE_KEY];
  if (typeof reported !== "object" || reported === null) {
    return { usage: { input_tokens: 0, output_tokens: 0 }, cost_usd: null };
  }
  const fields = reported as Record<string, unknown>;
  const cost = fields.cost_usd;
  return {
    usage: { input_tokens: count(fields.input_tokens), output_tokens: count(fields.output_tokens) },
    cost_usd: typeof cost === "number" && Number.isFinite(cost) && cost >= 0 ? cost : null,
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** A provider that sends each call to the A2A agent at `options.url`. */
export function a2aAgentProvider(options: A2aAgentOptions): Provider {
  const { name } = options;
  const base = options.url.replace(/\/+$/, "");
  const tokenEnv = options.tokenEnv ?? null;
  const pollMs = options.pollMs ?? 100;

  function fail(reason: string, token: string | undefined): never {
    throw new SvcError("provider_failed", `Cannot dispatch to ${name}: ${redact(reason, token)}`);
  }

  return {
    name,
    kind: "api",
    async dispatch(request: DispatchRequest): Promise<DispatchResult> {
      // The remote agent's tools are its own: a restriction of them cannot be sent or checked.
      if (request.options.disallowedTools?.length || request.options.bashCommandClamp?.length) {
        throw new SvcError(
          "invalid_argument",
          `Cannot dispatch to ${name}: the call restricts its agent (disallowedTools or bashCommandClamp) and a remote A2A agent's tools are beyond svc's reach; refused rather than run without the restriction`,
        );
      }
      const token = apiKey(name, tokenEnv);
      const { signal } = request;
      let client: Client;
      try {
        client = await connect(base, token);
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        fail(
          `cannot read its agent card at ${base}: ${String((error as Error)?.message ?? error)}`,
          token,
        );
      }
      const prompt = request.system ? `${request.system}\n\n${request.prompt}` : request.prompt;
      const message = userMessage(prompt);
      let reply: Message | Task;
      try {
        reply = await client.sendMessage({
          tenant: "",
          message,
          configuration: {
            acceptedOutputModes: [],
            taskPushNotificationConfig: undefined,
            returnImmediately: true,
          },
          metadata: undefined,
        }, { signal });
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        fail(`the agent refused the message: ${String((error as Error)?.message ?? error)}`, token);
      }
      if ("messageId" in reply) {
        const { usage, cost_usd } = usageOfReply(reply.metadata);
        return { output: answerOf(reply.parts), usage, cost_usd, provider: name, model: null };
      }
      let task: Task;
      try {
        task = await follow(client, reply, signal, pollMs);
      } catch (error) {
        if (signal.aborted) {
          await cancelQuietly(client, reply.id);
          throw signal.reason;
        }
        fail(
          `cannot follow task ${reply.id}: ${String((error as Error)?.message ?? error)}`,
          token,
        );
      }
      if (signal.aborted) {
        await cancelQuietly(client, reply.id);
        throw signal.reason;
      }
      const state = task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED;
      const { usage, cost_usd } = usageOfReply(task.metadata);
      if (state === TaskState.TASK_STATE_COMPLETED) {
        const parts = task.artifacts.flatMap((artifact) => artifact.parts);
        const answer = parts.length > 0
          ? answerOf(parts)
          : textOf(task.status?.message?.parts ?? []);
        return { output: answer, usage, cost_usd, provider: name, model: null };
      }
      if (STUCK_STATES.has(state)) await cancelQuietly(client, task.id);
      const said = textOf(task.status?.message?.parts ?? []).slice(0, 500);
      fail(
        `the agent's task ended ${TaskState[state] ?? "in an unknown state"}${
          said ? `: ${said}` : ""
        }`,
        token,
      );
    },
    probe(): Promise<Availability> {
      return Promise.resolve(
        tokenEnv === null ? { available: true, reason: `agent at ${base}` } : probeKey(tokenEnv),
      );
    },
  };
}

/** A client of the agent at `base`, sending the token (when there is one) with every request. */
async function connect(base: string, token: string | undefined): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const compat = { legacyCompat: { enabled: true } };
  // Loaded at the first call to such an agent: the client (some 230 KB) would otherwise load
  // with every `svc workflow run`'s host, most of them with no such provider.
  const { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } = await import(
    "@a2a-js/sdk/client"
  );
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl, ...compat })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl, ...compat }),
  });
  return await factory.createFromUrl(base);
}

/** Polls a task, backing off, until it ends, is stuck waiting for input, or the call stops. */
async function follow(
  client: Client,
  task: Task,
  signal: AbortSignal,
  pollMs: number,
): Promise<Task> {
  let current = task;
  let wait = pollMs;
  while (!FINAL_STATES.has(current.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) {
    if (STUCK_STATES.has(current.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) {
      return current;
    }
    await sleep(wait, signal);
    if (signal.aborted) return current;
    wait = Math.min(wait * 2, 2_000);
    current = await client.getTask({ tenant: "", id: task.id, historyLength: 0 }, { signal });
  }
  return current;
}

/** Asks the agent to cancel a task, briefly, ignoring a failure: the call is ending anyway. */
async function cancelQuietly(client: Client, id: string): Promise<void> {
  await client.cancelTask(
    { tenant: "", id, metadata: undefined },
    { signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS) },
  ).catch(() => {});
}

/** The call's prompt as the user's message of a new task. */
function userMessage(prompt: string): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{
      content: { $case: "text", value: prompt },
      metadata: undefined,
      filename: "",
      mediaType: "text/plain",
    }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

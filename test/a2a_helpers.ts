/**
 * An A2A server on a real port over real services in a temp SVC_HOME (fake provider), and the
 * protocol's own clients for it (`@a2a-js/sdk` 1.x, with or without its 0.3 compatibility).
 * Everything is closed and removed when the test's `await using` ends.
 */
import {
  type Message,
  type Part,
  Role,
  type SendMessageRequest,
  type Task,
  TaskState,
} from "@a2a-js/sdk";
import {
  type Client,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { type A2aServer, serveA2a } from "../src/a2a/mod.ts";
import type { Config } from "../src/config/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import type { AuthSettings } from "../src/http/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { TWO_OWNERS } from "./dashboard_helpers.ts";
import { tempDir } from "./helpers.ts";

export { TOKENS, TWO_OWNERS } from "./dashboard_helpers.ts";

/** A running A2A server for a test. */
export interface TestA2a extends AsyncDisposable {
  /** Its base URL. */
  url: string;
  /** The services it serves. */
  services: Services;
  /** The server. */
  server: A2aServer;
  /** The data directory. */
  home: string;
}

/** Starts an A2A server on 127.0.0.1 (a free port) over fresh services. */
export async function startA2a(
  options: {
    home?: string;
    auth?: AuthSettings;
    fakeLatencyMs?: number;
    fakeCostUsd?: number;
    config?: Config;
    projectDir?: string;
  } = {},
): Promise<TestA2a> {
  const dir = options.home === undefined ? await tempDir("svc-a2a-") : undefined;
  const home = options.home ?? dir!.path;
  const services = await openServices({
    home,
    dispatcher: createDispatcher({
      fakeLatencyMs: options.fakeLatencyMs ?? 0,
      ...(options.fakeCostUsd !== undefined ? { fakeCostUsd: options.fakeCostUsd } : {}),
      ...(options.config ? { config: options.config } : {}),
    }),
    ...(options.config ? { config: options.config } : {}),
  });
  const server = await serveA2a(services, {
    hostname: "127.0.0.1",
    port: 0,
    auth: options.auth ?? TWO_OWNERS,
    places: { projectDir: options.projectDir ?? home, home },
  });
  return {
    url: server.url,
    services,
    server,
    home,
    async [Symbol.asyncDispose]() {
      await server.close();
      await services.close();
      await dir?.[Symbol.asyncDispose]();
    },
  };
}

/** `fetch` that sends `token` as the bearer (none when undefined). */
export function fetchWithToken(token: string | undefined): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

/** A 1.x SDK client of the server at `url`; with `legacyCompat`, one that may speak 0.3. */
export async function sdkClient(
  url: string,
  token: string | undefined,
  options: { legacyCompat?: boolean; cardPath?: string } = {},
): Promise<Client> {
  const fetchImpl = fetchWithToken(token);
  const compat = options.legacyCompat ? { legacyCompat: { enabled: true } } : {};
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl, ...compat })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl, ...compat }),
  });
  return await factory.createFromUrl(url, options.cardPath);
}

/** A text part. */
export function textPart(text: string): Part {
  return {
    content: { $case: "text", value: text },
    metadata: undefined,
    filename: "",
    mediaType: "text/plain",
  };
}

/** A user message of `text`, with optional metadata and context. */
export function userMessage(
  text: string,
  options: { metadata?: Record<string, unknown>; contextId?: string; taskId?: string } = {},
): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: options.contextId ?? "",
    taskId: options.taskId ?? "",
    role: Role.ROLE_USER,
    parts: [textPart(text)],
    metadata: options.metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A send request of `message`; `returnImmediately` answers before the task ends. */
export function sendRequest(
  message: Message,
  options: { returnImmediately?: boolean } = {},
): SendMessageRequest {
  return {
    tenant: "",
    message,
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: undefined,
      returnImmediately: options.returnImmediately ?? false,
    },
    metadata: undefined,
  };
}

/** The task of a send result; fails the test when the answer is a bare message. */
export function asTask(result: Message | Task): Task {
  if ("messageId" in result) {
    throw new Error(`expected a task, got a message: ${JSON.stringify(result)}`);
  }
  return result;
}

/** The text of a task's first artifact. */
export function answerText(task: Task): string | undefined {
  const content = task.artifacts[0]?.parts[0]?.content;
  return content?.$case === "text" ? content.value : undefined;
}

/** Polls `getTask` until the task is in a final state (the fake provider answers quickly). */
export async function finalTask(client: Client, id: string): Promise<Task> {
  for (let i = 0; i < 400; i++) {
    const task = await client.getTask({ tenant: "", id, historyLength: undefined });
    const state = task.status?.state;
    if (
      state === TaskState.TASK_STATE_COMPLETED || state === TaskState.TASK_STATE_FAILED ||
      state === TaskState.TASK_STATE_CANCELED || state === TaskState.TASK_STATE_REJECTED
    ) return task;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`task ${id} did not end`);
}

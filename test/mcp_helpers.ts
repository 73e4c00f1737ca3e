/**
 * Clients of svc's tool-protocol server for tests: the SDK's own `Client` over Streamable HTTP
 * (a dashboard on a real port) or over stdio (`svc mcp` started as `deno task svc` starts it),
 * in either protocol era.
 */
import assert from "node:assert/strict";
import {
  type CallToolResult,
  Client,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { svcTaskCommand } from "./helpers.ts";

/** The protocol eras a client can speak: 2025-11-25 (`legacy`) or 2026-07-28 (`auto`). */
export const ERAS = ["legacy", "auto"] as const;
/** One of {@linkcode ERAS}. */
export type Era = (typeof ERAS)[number];

/** A connected client, closed by `await using`. */
export interface TestClient extends AsyncDisposable {
  /** The SDK client. */
  client: Client;
  /** Calls a tool and returns its result. */
  call(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
  /** Calls a tool that must succeed and returns its structured content. */
  ok(name: string, args: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Errors the client's transport reported (a stray line on stdout would be one). */
  errors: Error[];
  /** Over stdio: the pid of the process the client started (the launcher of `svc mcp`). */
  pid?: number;
}

function wrap(client: Client, errors: Error[], close: () => Promise<void>): TestClient {
  const call = async (name: string, args: Record<string, unknown>) =>
    await client.callTool({ name, arguments: args }) as CallToolResult;
  return {
    client,
    errors,
    call,
    async ok(name, args) {
      const result = await call(name, args);
      assert.notEqual(result.isError, true, JSON.stringify(result.content));
      assert.ok(result.structuredContent, "a structured result");
      // The text block carries the same value, for clients that read only text.
      const text = result.content[0];
      assert.equal(text?.type, "text");
      assert.deepEqual(JSON.parse(text.type === "text" ? text.text : ""), result.structuredContent);
      return result.structuredContent as Record<string, unknown>;
    },
    [Symbol.asyncDispose]: close,
  };
}

/** Connects to `<url>/mcp` with `token` as the bearer. */
export async function connectHttp(
  url: string,
  options: { token?: string; era?: Era } = {},
): Promise<TestClient> {
  const client = new Client({ name: "svc-test", version: "1.0.0" }, {
    versionNegotiation: { mode: options.era ?? "legacy" },
  });
  const errors: Error[] = [];
  client.onerror = (error) => void errors.push(error);
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    ...(options.token !== undefined
      ? { requestInit: { headers: { authorization: `Bearer ${options.token}` } } }
      : {}),
  });
  await client.connect(transport);
  return wrap(client, errors, async () => {
    await transport.terminateSession().catch(() => {});
    await client.close();
  });
}

/** Starts `svc mcp` over a data directory and connects to it over stdio. */
export async function connectStdio(
  home: string,
  options: { era?: Era; env?: Record<string, string> } = {},
): Promise<TestClient> {
  const task = await svcTaskCommand();
  const { INIT_CWD: _inherited, ...env } = Deno.env.toObject();
  const transport = new StdioClientTransport({
    command: task.command,
    args: [...task.args, "mcp"],
    env: { ...env, SVC_HOME: home, NO_COLOR: "1", ...options.env },
    stderr: "pipe",
  });
  const client = new Client({ name: "svc-test", version: "1.0.0" }, {
    versionNegotiation: { mode: options.era ?? "legacy" },
  });
  const errors: Error[] = [];
  client.onerror = (error) => void errors.push(error);
  await client.connect(transport);
  // Drain standard error, so that the server never blocks on a full pipe.
  void transport.stderr?.on("data", () => {});
  const pid = transport.pid;
  return Object.assign(
    wrap(client, errors, () => client.close()),
    pid === null ? {} : { pid },
  );
}

/** Polls `svc_task_status` until the handle's run or task has ended. */
export async function untilDone(
  client: TestClient,
  handle: string,
): Promise<Record<string, unknown>> {
  for (let i = 0; i < 20; i++) {
    const status = await client.ok("svc_task_status", { handle, wait_seconds: 5 });
    if (status.done === true) return status;
  }
  throw new Error(`${handle} did not end`);
}

/** The text of a tool error. */
export function errorText(result: CallToolResult): string {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result)}`);
  const first = result.content[0];
  return first?.type === "text" ? first.text : "";
}

/** What {@linkcode exchangeFrames} saw. */
export interface FrameExchange {
  /** The exit status of the server. */
  code: number;
  /** Every line of its standard output, parsed (a line that is not JSON throws). */
  answers: Array<Record<string, unknown> & { id?: number }>;
  /** Its standard error. */
  stderr: string;
}

/**
 * Starts a stdio server, sends `frames` one by one (waiting for the answer of each request),
 * closes its standard input and waits for it to exit.
 */
export async function exchangeFrames(
  command: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string; frames: object[] },
): Promise<FrameExchange> {
  const child = new Deno.Command(command, {
    args,
    env: options.env,
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const writer = child.stdin.getWriter();
  let out = "";
  const lines = () => out.split("\n").filter((line) => line.length > 0);
  for (const frame of options.frames) {
    await writer.write(new TextEncoder().encode(`${JSON.stringify(frame)}\n`));
    if (!("id" in frame)) continue;
    while (!lines().some((line) => JSON.parse(line).id === frame.id)) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
  }
  await writer.close();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    out += value;
  }
  const status = await child.status;
  return {
    code: status.code,
    answers: lines().map((line) => JSON.parse(line)),
    stderr: await stderr,
  };
}

/** The opening request of a 2025-era client. */
export const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "raw", version: "1" },
  },
} as const;

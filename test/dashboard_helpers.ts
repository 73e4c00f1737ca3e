/**
 * A dashboard over real services in a temp SVC_HOME (fake provider), in process or on a real
 * port, and a small client for it. Everything is closed and removed when the test's
 * `await using` ends.
 */
import type { Config } from "../src/config/mod.ts";
import { createDispatcher, type Provider } from "../src/dispatch/mod.ts";
import {
  type AuthSettings,
  dashboardApp,
  type DashboardServer,
  serveDashboard,
  type ServeDashboardOptions,
} from "../src/http/mod.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import { tempDir } from "./helpers.ts";

/** Tokens the tests use: long enough to be accepted. */
export const TOKENS = {
  alice: "alice-token-0123456789abcdef",
  bob: "bob-token-0123456789abcdef00",
  shared: "shared-token-0123456789abcdef",
} as const;

/** Alice and Bob with owner tokens, and a shared token bound to no owner. */
export const TWO_OWNERS: AuthSettings = {
  required: true,
  requireOwner: false,
  tokens: [
    { token: TOKENS.alice, owner: "alice" },
    { token: TOKENS.bob, owner: "bob" },
    { token: TOKENS.shared },
  ],
  allowedOrigins: ["https://board.example.com"],
};

/** A dashboard for a test: in process, or on a real port. */
export interface TestDashboard extends AsyncDisposable {
  /** Its base URL (in process, `http://127.0.0.1`, which no socket serves). */
  url: string;
  /** The services it serves. */
  services: Services;
  /** The server (in process, the app and a `close` that stops its streams). */
  server: DashboardServer;
  /** The data directory. */
  home: string;
  /** `fetch` of a path with `token` as the bearer (none when undefined). */
  request(path: string, options?: RequestInit & { token?: string }): Promise<Response>;
  /** A JSON request that returns the status and the parsed body. */
  json(
    path: string,
    options?: { token?: string; method?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: Record<string, unknown> }>;
}

/** Options of {@linkcode startDashboard}. */
export type TestDashboardOptions = Partial<Omit<ServeDashboardOptions, "port">> & {
  home?: string;
  fakeLatencyMs?: number;
  config?: Config;
  /** Providers beside the fake one. */
  providers?: Provider[];
  /**
   * Serve on a free port of 127.0.0.1, for a client that needs a socket (a browser, an SDK
   * client given a URL, a connection that drops). Default: requests go to the app's `fetch`
   * in process, as `app.request()` does in Hono's tests.
   */
  port?: boolean;
};

/** The origin an in-process dashboard answers as: a loopback name, as a served one has. */
const IN_PROCESS_URL = "http://127.0.0.1";
/** The names a dashboard served on a loopback address accepts in `Host`. */
const LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"];

/**
 * A dashboard over fresh services (a temp SVC_HOME unless `home`), answering in process, or on
 * a real port with `port: true`.
 */
export async function startDashboard(options: TestDashboardOptions = {}): Promise<TestDashboard> {
  const dir = options.home === undefined ? await tempDir("svc-dash-") : undefined;
  const home = options.home ?? dir!.path;
  const services = await openServices({
    home,
    dispatcher: createDispatcher({
      fakeLatencyMs: options.fakeLatencyMs ?? 0,
      ...(options.config ? { config: options.config } : {}),
      ...(options.providers ? { providers: options.providers } : {}),
    }),
    ...(options.config ? { config: options.config } : {}),
  });
  const appOptions = {
    auth: options.auth ?? TWO_OWNERS,
    ...(options.keepAliveMs !== undefined ? { keepAliveMs: options.keepAliveMs } : {}),
    ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
  };
  const server = options.port
    ? await serveDashboard(services, { hostname: "127.0.0.1", port: 0, ...appOptions })
    : inProcessServer(services, appOptions);
  const send = options.port
    ? (url: string, init: RequestInit) => fetch(url, init)
    : async (url: string, init: RequestInit) =>
      readAtOnce(await server.app.fetch(new Request(url, init)));
  const request = (path: string, init: RequestInit & { token?: string } = {}) => {
    const { token, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
    return send(`${server.url}${path}`, { ...rest, headers });
  };
  return {
    url: server.url,
    services,
    server,
    home,
    request,
    async json(path, init = {}) {
      const headers: Record<string, string> = { ...init.headers };
      if (init.body !== undefined) headers["content-type"] = "application/json";
      const response = await request(path, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers,
        ...(init.token !== undefined ? { token: init.token } : {}),
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : {} };
    },
    async [Symbol.asyncDispose]() {
      await server.close();
      await services.close();
      await dir?.[Symbol.asyncDispose]();
    },
  };
}

/**
 * An event stream as a server hands it on: a server reads a response's body as soon as it
 * answers, whether or not its client reads yet, so a stream's source starts at once (a stream
 * `from=now` takes its position then). Cancelling the stream still reaches the source.
 */
function readAtOnce(response: Response): Response {
  const type = response.headers.get("content-type") ?? "";
  if (!response.body || !type.startsWith("text/event-stream")) return response;
  const body = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({}, undefined, { highWaterMark: Infinity }),
  );
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/**
 * The app as `serveDashboard` builds it on 127.0.0.1, without the socket: its own origin and
 * the loopback names it accepts in `Host` are those a served one has; closing ends its streams.
 */
function inProcessServer(
  services: Services,
  options: Omit<ServeDashboardOptions, "hostname" | "port" | "signal">,
): DashboardServer {
  const closing = new AbortController();
  const app = dashboardApp(services, {
    ...options,
    ownOrigins: [IN_PROCESS_URL],
    allowedHosts: LOOPBACK_HOSTS,
    signal: closing.signal,
  });
  const close = () => {
    closing.abort();
    return Promise.resolve();
  };
  return { url: IN_PROCESS_URL, app, close, [Symbol.asyncDispose]: close };
}

/** One parsed server-sent event. */
export interface ReadEvent {
  id?: string;
  event?: string;
  data?: unknown;
  retry?: number;
  comment?: string;
}

/**
 * Reads a server-sent-event response block by block. `until` stops early (the reader then
 * cancels the body, as a client that disconnects does).
 */
export async function readEvents(
  response: Response,
  options: { until?: (event: ReadEvent, all: ReadEvent[]) => boolean } = {},
): Promise<ReadEvent[]> {
  const out: ReadEvent[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event: ReadEvent = {};
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) event.comment = line.slice(1).trim();
          else if (line.startsWith("id: ")) event.id = line.slice(4);
          else if (line.startsWith("event: ")) event.event = line.slice(7);
          else if (line.startsWith("data: ")) event.data = JSON.parse(line.slice(6));
          else if (line.startsWith("retry: ")) event.retry = Number(line.slice(7));
        }
        out.push(event);
        if (options.until?.(event, out)) return out;
      }
    }
    return out;
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/**
 * The fuzz battery: requests generated from the same schemas that validate them (the OpenAPI
 * document of the dashboard's routes, the tools' input schemas), valid, invalid and hostile,
 * against every route of the dashboard, the daemon and the agent-to-agent server and every
 * tool of the tool-protocol endpoint, in process through their fetch handlers. Every answer
 * must be below 500, carry no stack trace, server path or token, and every 4xx must be the
 * API's error object; each server must still be healthy afterwards.
 *
 * `SVC_FUZZ_SEED` replays a run (a failure prints its seed and the shrunk request);
 * `SVC_FUZZ_SCALE` multiplies the number of requests (the benchmark's longer form).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { a2aApp } from "../src/a2a/mod.ts";
import { ConfigSchema } from "../src/config/mod.ts";
import { startDaemon } from "../src/daemon/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { ERROR_TABLE } from "../src/errors/mod.ts";
import { daemonApp, dashboardApp } from "../src/http/mod.ts";
import { DAEMON_AUTH } from "./daemon_helpers.ts";
import { openServices, type Services } from "../src/services/mod.ts";
import {
  fromSchema,
  hostileString,
  hostileValue,
  type JsonSchema,
  pathId,
  prototypeJson,
} from "./fuzz_arbitraries.ts";
import { TOKENS, TWO_OWNERS } from "./dashboard_helpers.ts";
import { ROOT, tempDir } from "./helpers.ts";

const SEED = Number(Deno.env.get("SVC_FUZZ_SEED") ?? 20261122);

/**
 * A bounded picture of a counterexample: fast-check's own report recurses through the value and
 * overflows the stack on one nested thousands of levels deep, hiding the failure it reports.
 */
function sketch(value: unknown, depth = 0): string {
  if (depth > 6) return "…";
  if (typeof value === "string") {
    return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}… (${value.length})` : value);
  }
  if (Array.isArray(value)) {
    const shown = value.slice(0, 10).map((item) => sketch(item, depth + 1));
    return `[${shown.join(",")}${value.length > 10 ? `,… (${value.length})` : ""}]`;
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    const shown = entries.slice(0, 20).map(([k, v]) =>
      `${JSON.stringify(k)}:${sketch(v, depth + 1)}`
    );
    return `{${shown.join(",")}${entries.length > 20 ? ",…" : ""}}`;
  }
  return String(value);
}

/**
 * Runs a property `numRuns` times at the seed; a failure names the seed, the replay path, the
 * shrunk request (sketched) and what went wrong.
 */
async function holds<T>(
  property: fc.IAsyncPropertyWithHooks<T>,
  numRuns: number,
): Promise<void> {
  const details = await fc.check(property, { seed: SEED, numRuns, endOnFailure: true });
  if (!details.failed) return;
  const cause = details.errorInstance instanceof Error
    ? details.errorInstance.message
    : String(details.errorInstance);
  assert.fail(
    `property failed at seed ${SEED} (path "${details.counterexamplePath}") after ` +
      `${details.numRuns} runs\ncounterexample: ${sketch(details.counterexample)}\n` +
      `cause: ${cause.length > 2000 ? `${cause.slice(0, 300)} … ${cause.slice(-1500)}` : cause}`,
  );
}
const SCALE = Number(Deno.env.get("SVC_FUZZ_SCALE") ?? 1);
const ORIGIN = "http://127.0.0.1:7777";
const CALLER = { owner: "alice" } as const;

/** One generated HTTP request. */
interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array<ArrayBuffer>;
}

/** Percent-encoding of any string, lone surrogates included (as U+FFFD). */
function encode(text: string): string {
  return encodeURIComponent(text.toWellFormed());
}

/** A header value a client can send: hostile text, percent-encoded where HTTP forbids it. */
const headerText = hostileString.map((s) =>
  /^[\x20-\x7e]*$/.test(s) && s.length < 8000 ? s : encode(s).slice(0, 8000)
);

/** Who asks: mostly Alice, sometimes another owner, the shared token, nobody or garbage. */
const authorization: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 12, arbitrary: fc.constant(`Bearer ${TOKENS.alice}`) },
  { weight: 1, arbitrary: fc.constant(`Bearer ${TOKENS.bob}`) },
  { weight: 1, arbitrary: fc.constant(`Bearer ${TOKENS.shared}`) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: headerText.map((s) => `Bearer ${s}`) },
  { weight: 1, arbitrary: headerText },
);

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant("application/json") },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "text/plain",
      "application/json; charset=utf-16",
      "multipart/form-data; boundary=x",
      "application/x-www-form-urlencoded",
      "",
    ),
  },
  { weight: 1, arbitrary: headerText },
);

/** Extra headers now and then: a foreign origin, odd hosts, huge or odd values. */
const extraHeaders = fc.oneof(
  { weight: 10, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.record({ origin: fc.constantFrom("https://evil.example", "null") }) },
  { weight: 1, arbitrary: fc.record({ "last-event-id": headerText }) },
  { weight: 1, arbitrary: fc.record({ "x-fuzz": headerText, accept: headerText }) },
);

/** A request body built from `schema`: valid-ish JSON mostly, else hostile bytes or text. */
function body(
  schema: JsonSchema | undefined,
  root: JsonSchema,
): fc.Arbitrary<string | Uint8Array<ArrayBuffer>> {
  const shaped = schema
    ? fromSchema(schema, { root, hostility: 0.03 }).map((v) => JSON.stringify(v) ?? "null")
    : fc.constant("{}");
  return fc.oneof(
    { weight: 10, arbitrary: shaped },
    { weight: 1, arbitrary: prototypeJson },
    { weight: 1, arbitrary: hostileValue.map((v) => JSON.stringify(v) ?? "null") },
    { weight: 1, arbitrary: hostileString },
    { weight: 1, arbitrary: shaped.map((text) => text.slice(0, Math.max(0, text.length - 2))) },
    {
      weight: 1,
      arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => new Uint8Array(bytes)),
    },
  );
}

/** Query values from the parameters' schemas, a hostile one now and then, and strays. */
function query(params: JsonSchema[], root: JsonSchema): fc.Arbitrary<string> {
  const pairs: fc.Arbitrary<[string, string] | null>[] = params.map((param) =>
    fc.option(
      fromSchema((param.schema ?? {}) as JsonSchema, { root, hostility: 0.15 }).map((
        value,
      ): [string, string] => [
        String(param.name),
        typeof value === "string" ? value : JSON.stringify(value) ?? "",
      ]),
      { freq: 2 },
    )
  );
  pairs.push(
    fc.option(fc.tuple(hostileString.filter((s) => s.length < 200), hostileString), { freq: 4 }),
  );
  return fc.tuple(...pairs).map((list) => {
    const search = new URLSearchParams();
    for (const pair of list) if (pair) search.append(pair[0].slice(0, 4000), pair[1]);
    const text = search.toString();
    return text === "" ? "" : `?${text}`;
  });
}

/** Requests for one documented route. */
function routeRequests(
  route: { method: string; path: string },
  document: JsonSchema,
  known: () => readonly string[],
): fc.Arbitrary<FuzzRequest> {
  const paths = document.paths as Record<string, Record<string, JsonSchema>>;
  const operation = paths[route.path]?.[route.method.toLowerCase()] ?? {};
  const params = (operation.parameters ?? []) as JsonSchema[];
  const names = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const ids = fc.tuple(...names.map(() => fc.constant(null).chain(() => pathId(known()))));
  const requestBody = operation.requestBody as JsonSchema | undefined;
  const schema = (requestBody?.content as Record<string, JsonSchema> | undefined)
    ?.["application/json"]?.schema as JsonSchema | undefined;
  const hasBody = route.method !== "GET" && route.method !== "HEAD";
  return fc.record({
    ids,
    search: query(params.filter((p) => p.in === "query"), document),
    auth: authorization,
    type: contentType,
    extra: extraHeaders,
    body: hasBody ? body(schema, document) : fc.constant(undefined),
  }).map(({ ids, search, auth, type, extra, body }) => {
    let path = route.path;
    names.forEach((name, i) => {
      path = path.replace(`{${name}}`, encode(ids[i] ?? ""));
    });
    const headers: Record<string, string> = { ...extra };
    if (auth !== undefined) headers.authorization = auth;
    if (body !== undefined) headers["content-type"] = type;
    return {
      method: route.method,
      path: path + search,
      headers,
      ...(body !== undefined ? { body } : {}),
    };
  });
}

/** Paths no route has, and methods no route takes. */
const strayRequests: fc.Arbitrary<FuzzRequest> = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"),
  segments: fc.array(hostileString.filter((s) => s.length < 300), { minLength: 1, maxLength: 4 }),
  auth: authorization,
}).map(({ method, segments, auth }): FuzzRequest => ({
  method,
  path: `/api/${segments.map(encode).join("/")}`,
  headers: auth === undefined ? {} : { authorization: auth },
}));

/** Server paths and secrets that must never reach a client. */
function leaks(text: string, secrets: readonly string[]): string | undefined {
  if (/\n\s+at .+[:(].*\d+:\d+\)?/.test(text) || /\\n\s+at .+:\d+:\d+/.test(text)) {
    return "a stack trace";
  }
  if (text.includes("file:///")) return "a file URL";
  for (const secret of secrets) if (text.includes(secret)) return `'${secret}'`;
  return undefined;
}

/** What an error body must be: the API's error object, with a code of the error table. */
function checkErrorBody(status: number, text: string, where: string): void {
  let parsed: { error?: { status?: unknown; code?: unknown; message?: unknown } };
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${where}: a ${status} answer that is not JSON: ${text.slice(0, 200)}`);
  }
  const error = parsed.error;
  assert.ok(
    error && typeof error === "object",
    `${where}: a ${status} answer without an error object`,
  );
  assert.equal(error.status, status, `${where}: error.status`);
  assert.ok(
    typeof error.code === "string" && error.code in ERROR_TABLE,
    `${where}: error.code ${String(error.code)}`,
  );
  assert.ok(typeof error.message === "string" && error.message !== "", `${where}: error.message`);
}

/** Sends one request, reads at most a bounded answer, and checks it. */
async function exchange(
  fetcher: (request: Request) => Promise<Response>,
  request: FuzzRequest,
  secrets: readonly string[],
): Promise<{ status: number; text: string }> {
  const where = `${request.method} ${request.path.slice(0, 200)}`;
  const response = await fetcher(
    new Request(`${ORIGIN}${request.path}`, {
      method: request.method,
      headers: request.headers,
      ...(request.body !== undefined ? { body: request.body } : {}),
    }),
  );
  const type = response.headers.get("content-type") ?? "";
  let text = "";
  if (type.includes("text/event-stream")) {
    // A live stream: its first bytes are enough; it must not hold the battery up.
    const reader = response.body!.getReader();
    const first = await Promise.race([
      reader.read(),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 2000)),
    ]);
    if (first && first.value) text = new TextDecoder().decode(first.value);
    await reader.cancel().catch(() => {});
  } else text = await response.text();
  const leaked = leaks(text, secrets);
  assert.equal(leaked, undefined, `${where}: the answer holds ${leaked}: ${text.slice(0, 300)}`);
  assert.ok(response.status < 500, `${where}: ${response.status} ${text.slice(0, 300)}`);
  if (response.status >= 400 && !type.includes("text/event-stream")) {
    checkErrorBody(response.status, text, where);
  }
  return { status: response.status, text };
}

/** Fresh services for one server, with the fake provider answering at once. */
async function fuzzServices(): Promise<
  { services: Services; dir: AsyncDisposable & { path: string } }
> {
  const dir = await tempDir("svc-fuzz-");
  const services = await openServices({
    home: dir.path,
    dispatcher: createDispatcher({ fakeLatencyMs: 0 }),
  });
  return { services, dir };
}

/** Waits for every run and task a request started, so that none outlives the battery. */
async function settle(services: Services, text: string): Promise<void> {
  for (const match of new Set(text.match(/\brun_[0-9a-z]{8,40}\b/g) ?? [])) {
    const signal = AbortSignal.timeout(30_000);
    await services.runs.wait(match, CALLER, { signal }).catch(() => {});
  }
}

/** Ids that exist, so that generated paths reach the handlers of real things too. */
async function seedKnownIds(fetcher: (request: Request) => Promise<Response>): Promise<string[]> {
  const ids: string[] = [];
  const post = async (path: string, value: unknown) => {
    const response = await fetcher(
      new Request(`${ORIGIN}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKENS.alice}`, "content-type": "application/json" },
        body: JSON.stringify(value),
      }),
    );
    const text = await response.text();
    assert.ok(response.ok, `${path}: ${text}`);
    for (const id of text.match(/\b(run|task|ses)_[0-9a-z]{8,40}\b/g) ?? []) ids.push(id);
    return text;
  };
  await post("/api/workflow/run", {
    script: "return await agent('seed')",
    fake_dispatch: true,
  });
  await post("/api/dispatch", { prompt: "seed", provider: "fake" });
  await post("/api/board/write", { action: "new", title: "seed card" });
  ids.push("1");
  return [...new Set(ids)];
}

Deno.test({
  name:
    "every dashboard route answers generated and hostile requests with a clean 4xx or a success, never a 5xx or a leak",
  async fn() {
    const { services, dir } = await fuzzServices();
    await using _dir = dir;
    const controller = new AbortController();
    try {
      const app = dashboardApp(services, {
        auth: TWO_OWNERS,
        ownOrigins: [ORIGIN],
        keepAliveMs: 60_000,
        signal: controller.signal,
      });
      const fetcher = (request: Request) => app.fetch(request);
      const known = await seedKnownIds(fetcher);
      await settle(services, known.join(" "));
      const document = app.openapi() as JsonSchema;
      const routes = app.routes();
      assert.ok(routes.length >= 30, `${routes.length} routes`);
      const secrets = [TOKENS.alice, TOKENS.bob, TOKENS.shared, services.home, ROOT];
      const perRoute = Math.ceil(150 * SCALE);
      let sent = 0;
      const statuses = new Map<number, number>();
      for (const route of routes) {
        // Starting runs spawns guests: fewer of those, each waited for.
        const starts = route.method === "POST" && /workflow|reviews|legacy/.test(route.path);
        await holds(
          fc.asyncProperty(routeRequests(route, document, () => known), async (request) => {
            const { status, text } = await exchange(fetcher, request, secrets);
            sent++;
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            if (starts && status < 300) await settle(services, text);
          }),
          starts ? Math.ceil(perRoute / 3) : perRoute,
        );
      }
      await holds(
        fc.asyncProperty(strayRequests, async (request) => {
          await exchange(fetcher, request, secrets);
          sent++;
        }),
        Math.ceil(600 * SCALE),
      );
      const status = await fetcher(
        new Request(`${ORIGIN}/api/status`, {
          headers: { authorization: `Bearer ${TOKENS.alice}` },
        }),
      );
      assert.equal(status.status, 200, "the dashboard is healthy afterwards");
      await status.body?.cancel();
      console.log(
        `dashboard: ${sent} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
      );
    } finally {
      controller.abort();
      await services.close();
    }
  },
});

/** JSON-RPC envelopes: well-formed ones with generated params, and broken ones. */
function jsonRpc(methods: readonly string[], params: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  const id = fc.oneof(fc.integer(), fc.string({ maxLength: 20 }), fc.constant(null), hostileValue);
  const envelope = fc.record({
    jsonrpc: fc.oneof({ weight: 10, arbitrary: fc.constant("2.0") }, {
      weight: 1,
      arbitrary: hostileValue,
    }),
    id,
    method: fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom(...methods) },
      { weight: 1, arbitrary: hostileString },
    ),
    params,
  }, { requiredKeys: ["jsonrpc", "method"] });
  return fc.oneof(
    { weight: 12, arbitrary: envelope.map((e) => JSON.stringify(e)) },
    { weight: 1, arbitrary: fc.array(envelope, { maxLength: 3 }).map((e) => JSON.stringify(e)) },
    { weight: 1, arbitrary: prototypeJson },
    { weight: 1, arbitrary: hostileString },
  );
}

/** A JSON-RPC answer must not be an internal error, and must be a well-formed error when one. */
function checkJsonRpc(text: string, where: string): void {
  for (const line of text.split("\n")) {
    const json = line.startsWith("data:") ? line.slice(5).trim() : line.trim();
    if (!json.startsWith("{") && !json.startsWith("[")) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      continue;
    }
    for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
      const error = (message as { error?: { code?: unknown; message?: unknown } }).error;
      if (error === undefined) continue;
      assert.ok(Number.isInteger(error.code), `${where}: error.code ${String(error.code)}`);
      assert.notEqual(error.code, -32603, `${where}: an internal error: ${String(error.message)}`);
      assert.equal(typeof error.message, "string", `${where}: error.message`);
    }
  }
}

/** A2A message parts and params: text mostly, then files, data and hostile values. */
const a2aPart = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant("text"), text: fc.oneof(fc.string(), hostileString) }),
  },
  { weight: 1, arbitrary: fc.record({ text: fc.string() }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("data"), data: fc.jsonValue({ maxDepth: 3 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("file"),
      file: fc.record({
        uri: hostileString,
        bytes: fc.base64String({ maxLength: 64 }),
        name: hostileString,
      }, {
        requiredKeys: [],
      }),
    }),
  },
  { weight: 1, arbitrary: hostileValue },
);
const a2aParams = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      message: fc.record({
        kind: fc.constant("message"),
        role: fc.constantFrom("user", "agent", "ROLE_USER", "x"),
        messageId: fc.oneof(fc.uuid(), hostileString),
        parts: fc.array(a2aPart, { maxLength: 3 }),
        taskId: fc.oneof(fc.uuid(), hostileString),
        contextId: fc.oneof(fc.uuid(), hostileString),
        metadata: fc.oneof(
          fc.record({ "svc.fake": fc.constant(true), "svc.workflow": hostileString }, {
            requiredKeys: [],
          }),
          hostileValue,
        ),
      }, { requiredKeys: ["parts"] }),
      configuration: fc.oneof(
        fc.record({ blocking: fc.boolean(), historyLength: hostileNumberish() }),
        hostileValue,
      ),
    }, { requiredKeys: [] }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      id: fc.oneof(fc.uuid(), hostileString),
      historyLength: hostileNumberish(),
    }, { requiredKeys: [] }),
  },
  { weight: 1, arbitrary: hostileValue },
);

function hostileNumberish(): fc.Arbitrary<unknown> {
  return fc.oneof(fc.integer({ min: -5, max: 100 }), hostileValue);
}

const A2A_METHODS = [
  "message/send",
  "message/stream",
  "tasks/get",
  "tasks/cancel",
  "tasks/resubscribe",
  "tasks/list",
  "tasks/pushNotificationConfig/set",
  "tasks/pushNotificationConfig/get",
  "tasks/pushNotificationConfig/list",
  "tasks/pushNotificationConfig/delete",
  "agent/getAuthenticatedExtendedCard",
  "SendMessage",
  "SendStreamingMessage",
  "GetTask",
  "ListTasks",
  "CancelTask",
  "SubscribeToTask",
  "GetExtendedAgentCard",
] as const;

Deno.test({
  name:
    "every agent-to-agent method answers generated and hostile JSON-RPC without an internal error, a 5xx or a leak",
  async fn() {
    const { services, dir } = await fuzzServices();
    await using _dir = dir;
    try {
      const app = await a2aApp(services, {
        auth: TWO_OWNERS,
        baseUrl: ORIGIN,
        places: { projectDir: services.home, home: services.home },
      });
      const fetcher = (request: Request) => app.fetch(request);
      const secrets = [TOKENS.alice, TOKENS.bob, TOKENS.shared, services.home, ROOT];
      const requests = fc.record({
        text: jsonRpc(A2A_METHODS, a2aParams),
        auth: authorization,
        version: fc.option(fc.constantFrom("0.3", "1.0", "9.9", ""), { freq: 2 }),
      });
      let sent = 0;
      await holds(
        fc.asyncProperty(requests, async ({ text, auth, version }) => {
          const headers: Record<string, string> = { "content-type": "application/json" };
          if (auth !== undefined) headers.authorization = auth;
          if (version !== null) headers["a2a-version"] = version;
          const where = `POST /a2a ${text.slice(0, 120)}`;
          const response = await fetcher(
            new Request(`${ORIGIN}/a2a`, { method: "POST", headers, body: text }),
          );
          const answer = await boundedText(response);
          sent++;
          const leaked = leaks(answer, secrets);
          assert.equal(
            leaked,
            undefined,
            `${where}: the answer holds ${leaked}: ${answer.slice(0, 300)}`,
          );
          assert.ok(response.status < 500, `${where}: ${response.status} ${answer.slice(0, 300)}`);
          // Refused before JSON-RPC (authentication, size): the API's error object.
          if (response.status >= 400) checkErrorBody(response.status, answer, where);
          else checkJsonRpc(answer, where);
        }),
        Math.ceil(2000 * SCALE),
      );
      for (const path of ["/.well-known/agent-card.json", "/.well-known/agent.json"]) {
        const card = await fetcher(new Request(`${ORIGIN}${path}`));
        assert.ok(card.status < 500, `${path} afterwards: ${card.status}`);
        await card.body?.cancel();
      }
      console.log(`a2a: ${sent} requests`);
    } finally {
      await services.close();
    }
  },
});

/** The text of an answer, a stream's included, read for at most a few seconds. */
async function boundedText(response: Response): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && text.length < 4_000_000) {
    const next = await Promise.race([
      reader.read(),
      new Promise<null>((resolve) =>
        setTimeout(() => resolve(null), Math.max(1, deadline - Date.now()))
      ),
    ]);
    if (next === null || next.done) break;
    text += decoder.decode(next.value, { stream: true });
  }
  await reader.cancel().catch(() => {});
  return text;
}

Deno.test({
  name:
    "every tool-protocol tool answers arguments generated from its input schema without an internal error or a leak",
  async fn() {
    const { services, dir } = await fuzzServices();
    await using _dir = dir;
    const controller = new AbortController();
    const app = dashboardApp(services, {
      auth: TWO_OWNERS,
      ownOrigins: [ORIGIN],
      signal: controller.signal,
    });
    // The SDK's own client, talking to the app's fetch handler in process.
    const client = new Client({ name: "svc-fuzz", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${ORIGIN}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${TOKENS.alice}` } },
      fetch: (input, init) => app.fetch(new Request(input, init)),
    });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      assert.ok(tools.length >= 6, `${tools.length} tools`);
      const secrets = [TOKENS.alice, TOKENS.bob, TOKENS.shared, services.home, ROOT];
      let sent = 0;
      const outcomes = new Map<string, number>();
      for (const tool of tools) {
        const schema = tool.inputSchema as JsonSchema;
        const args = fc.oneof(
          { weight: 8, arbitrary: fromSchema(schema, { root: schema, hostility: 0.02 }) },
          { weight: 1, arbitrary: hostileValue },
        );
        const starts = /workflow/.test(tool.name);
        await holds(
          fc.asyncProperty(args, async (value) => {
            const where = `${tool.name} ${JSON.stringify(value)?.slice(0, 200)}`;
            let text: string;
            try {
              const result = await client.callTool({
                name: tool.name,
                arguments: value as Record<string, unknown>,
              });
              text = JSON.stringify(result);
              outcomes.set(
                result.isError ? "tool error" : "ok",
                (outcomes.get(result.isError ? "tool error" : "ok") ?? 0) + 1,
              );
            } catch (error) {
              outcomes.set("protocol error", (outcomes.get("protocol error") ?? 0) + 1);
              const code = (error as { code?: unknown }).code;
              assert.notEqual(code, -32603, `${where}: an internal error: ${String(error)}`);
              text = String((error as Error).message);
            }
            sent++;
            const leaked = leaks(text, secrets);
            assert.equal(
              leaked,
              undefined,
              `${where}: the answer holds ${leaked}: ${text.slice(0, 300)}`,
            );
            assert.doesNotMatch(text, /"Internal error"|Cannot .*: internal/i, where);
            if (starts) await settle(services, text);
          }),
          Math.ceil((starts ? 100 : 300) * SCALE),
        );
      }
      const after = await client.listTools();
      assert.equal(after.tools.length, tools.length, "the endpoint is healthy afterwards");
      console.log(`mcp: ${sent} tool calls, ${JSON.stringify(Object.fromEntries(outcomes))}`);
    } finally {
      await client.close().catch(() => {});
      controller.abort();
      await services.close();
    }
  },
});

/** HMAC-SHA256 of `body` under `secret`, in hex: what a signing sender puts in its header. */
async function hmacHex(secret: string, body: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signature = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body));
  return [...new Uint8Array(signature)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test({
  name:
    "the daemon's routes answer generated and hostile webhook deliveries with a clean 4xx or a success, never a 5xx or a leak",
  async fn() {
    const dir = await tempDir("svc-fuzz-");
    await using _dir = dir;
    const secret = "fuzz-webhook-secret-0123456789";
    const config = ConfigSchema.parse({
      webhooks: {
        gh: {
          secret_env: "FUZZ_SECRET",
          style: "github",
          owner: "alice",
          prompt_template: "Handle it",
        },
      },
    });
    const services = await openServices({
      home: dir.path,
      config,
      dispatcher: createDispatcher({ fakeLatencyMs: 0, config }),
    });
    const daemon = await startDaemon(services, {
      scheduler: false,
      env: (name) => (name === "FUZZ_SECRET" ? secret : undefined),
    });
    try {
      const app = daemonApp(daemon, { auth: DAEMON_AUTH });
      const fetcher = (request: Request) => app.fetch(request);
      const secrets = [secret, services.home, ROOT];
      const deliveries = fc.record({
        name: fc.oneof({ weight: 4, arbitrary: fc.constant("gh") }, {
          weight: 1,
          arbitrary: hostileString,
        }),
        body: fc.oneof(
          fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
          prototypeJson,
          hostileString,
        ),
        signing: fc.constantFrom("right", "wrong", "none", "garbage"),
        delivery: fc.oneof(fc.uuid(), headerText),
        event: fc.oneof(fc.constantFrom("push", "pull_request", "ping"), headerText),
      });
      let sent = 0;
      const statuses = new Map<number, number>();
      await holds(
        fc.asyncProperty(deliveries, async ({ name, body, signing, delivery, event }) => {
          const headers: Record<string, string> = {
            "content-type": "application/json",
            "x-github-delivery": delivery,
            "x-github-event": event,
          };
          if (signing === "right") {
            headers["x-hub-signature-256"] = `sha256=${await hmacHex(secret, body)}`;
          }
          if (signing === "wrong") headers["x-hub-signature-256"] = `sha256=${"0".repeat(64)}`;
          if (signing === "garbage") headers["x-hub-signature-256"] = delivery;
          const request = { method: "POST", path: `/webhooks/${encode(name)}`, headers, body };
          const { status } = await exchange(fetcher, request, secrets);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          sent++;
        }),
        Math.ceil(600 * SCALE),
      );
      await holds(
        fc.asyncProperty(strayRequests, async (request) => {
          await exchange(
            fetcher,
            { ...request, path: request.path.replace(/^\/api/, "") },
            secrets,
          );
          sent++;
        }),
        Math.ceil(200 * SCALE),
      );
      const health = await fetcher(new Request(`${ORIGIN}/health`));
      assert.equal(health.status, 200, "the daemon is healthy afterwards");
      await health.body?.cancel();
      console.log(
        `daemon: ${sent} requests, webhook statuses ${
          JSON.stringify(Object.fromEntries(statuses))
        }`,
      );
    } finally {
      await daemon.stop();
      await services.close();
    }
  },
});

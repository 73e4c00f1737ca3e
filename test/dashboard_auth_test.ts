import assert from "node:assert/strict";
import { authSettingsFromEnv, parseTokenFile } from "../src/http/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { startDashboard, TOKENS, TWO_OWNERS } from "./dashboard_helpers.ts";

Deno.test("a path outside /api/ passes without a token", async () => {
  await using d = await startDashboard();
  const response = await d.request("/");
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /text\/html/);
  assert.match(await response.text(), /svc dashboard/);
});

Deno.test("an Origin not on the allow-list answers 403 before the token is looked at, preflight included", async () => {
  await using d = await startDashboard();
  for (const token of [undefined, TOKENS.alice, "wrong-token-0123456789abcdef"]) {
    for (const method of ["GET", "OPTIONS"]) {
      const response = await d.request("/api/status", {
        method,
        headers: { origin: "http://evil.example" },
        ...(token !== undefined ? { token } : {}),
      });
      const body = await response.json();
      assert.equal(response.status, 403, `${method} with token ${token}`);
      assert.deepEqual(body.error.code, "forbidden");
      assert.equal(response.headers.get("www-authenticate"), null);
    }
  }
});

Deno.test("a preflight answers 204 with CORS headers and needs no token", async () => {
  await using d = await startDashboard();
  const allowed = await d.request("/api/workflow/run", {
    method: "OPTIONS",
    headers: {
      origin: "https://board.example.com",
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type",
    },
  });
  assert.equal(allowed.status, 204);
  assert.equal(allowed.headers.get("access-control-allow-origin"), "https://board.example.com");
  assert.match(allowed.headers.get("access-control-allow-headers") ?? "", /Authorization/);
  assert.match(allowed.headers.get("access-control-allow-methods") ?? "", /POST/);
  await allowed.body?.cancel();
  const bare = await d.request("/api/status", { method: "OPTIONS" });
  assert.equal(bare.status, 204);
  assert.equal(bare.headers.get("access-control-allow-origin"), null);
  await bare.body?.cancel();
});

Deno.test("without a valid bearer token an /api/ route answers 401 with WWW-Authenticate: Bearer", async () => {
  await using d = await startDashboard();
  const cases: Array<[string, RequestInit & { token?: string }]> = [
    ["/api/status", {}],
    ["/api/status", { token: "wrong-token-0123456789abcdef" }],
    // A prefix and an extension of a valid token are not it.
    ["/api/status", { token: TOKENS.alice.slice(0, -1) }],
    ["/api/status", { token: `${TOKENS.alice}x` }],
    ["/api/status", { headers: { authorization: `Basic ${btoa(`x:${TOKENS.alice}`)}` } }],
    // Tokens are read from the Authorization header only, never from the URL.
    [`/api/status?token=${TOKENS.alice}`, {}],
    [`/api/status?access_token=${TOKENS.alice}`, {}],
    ["/api/workflow/run_01abc", {}],
    ["/api/no-such-route", {}],
  ];
  for (const [path, init] of cases) {
    const response = await d.request(path, init);
    const body = await response.json();
    assert.equal(response.status, 401, path);
    assert.match(response.headers.get("www-authenticate") ?? "", /^Bearer/);
    assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "status"]);
    assert.equal(body.error.code, "unauthenticated");
    assert.ok(!JSON.stringify(body).includes(TOKENS.alice), "no token echoed");
  }
});

Deno.test("each token acts as its owner; a token bound to no owner acts as local", async () => {
  await using d = await startDashboard();
  for (
    const [token, owner] of [[TOKENS.alice, "alice"], [TOKENS.bob, "bob"], [TOKENS.shared, "local"]]
  ) {
    const { status, body } = await d.json("/api/status", { token });
    assert.equal(status, 200);
    assert.deepEqual(body.caller, { owner });
  }
});

Deno.test("with owners required, a token bound to no owner answers 403 and an owner's token passes", async () => {
  await using d = await startDashboard({ auth: { ...TWO_OWNERS, requireOwner: true } });
  const shared = await d.json("/api/status", { token: TOKENS.shared });
  assert.equal(shared.status, 403);
  assert.equal((shared.body.error as { code: string }).code, "forbidden");
  assert.equal((await d.json("/api/status", { token: TOKENS.alice })).status, 200);
});

Deno.test("with authentication off, a request without a token acts as the local owner", async () => {
  await using d = await startDashboard({ auth: { ...TWO_OWNERS, required: false } });
  const { status, body } = await d.json("/api/status");
  assert.equal(status, 200);
  assert.deepEqual(body.caller, { owner: "local" });
  assert.deepEqual(body.auth, { required: false });
  // A valid owner token still names its owner.
  assert.deepEqual((await d.json("/api/status", { token: TOKENS.bob })).body.caller, {
    owner: "bob",
  });
});

Deno.test("the server's own origin is allowed, and an allowed origin gets CORS headers on answers", async () => {
  await using d = await startDashboard();
  const own = await d.request("/api/status", { headers: { origin: d.url }, token: TOKENS.alice });
  assert.equal(own.status, 200);
  await own.body?.cancel();
  const ownNoToken = await d.request("/api/status", { headers: { origin: d.url } });
  assert.equal(ownNoToken.status, 401, "the origin check passes, the token check follows");
  await ownNoToken.body?.cancel();
  const cross = await d.request("/api/status", {
    headers: { origin: "https://board.example.com" },
    token: TOKENS.alice,
  });
  assert.equal(cross.status, 200);
  assert.equal(cross.headers.get("access-control-allow-origin"), "https://board.example.com");
  await cross.body?.cancel();
});

Deno.test("bodies: over the limit 413, not JSON 400, a wrong field 400 naming it, an unknown route 404, all in the API error shape", async () => {
  await using d = await startDashboard({ maxBodyBytes: 1024 });
  const big = await d.request("/api/workflow/run", {
    method: "POST",
    token: TOKENS.alice,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ script: "x".repeat(2000) }),
  });
  assert.equal(big.status, 413);
  assert.equal((await big.json()).error.code, "payload_too_large");
  // Streamed without a length: stopped while reading.
  const chunks = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < 10; i++) controller.enqueue(new TextEncoder().encode("x".repeat(200)));
      controller.close();
    },
  });
  const streamed = await d.request("/api/workflow/run", {
    method: "POST",
    token: TOKENS.alice,
    headers: { "content-type": "application/json" },
    body: chunks,
  });
  assert.equal(streamed.status, 413);
  await streamed.body?.cancel();

  const cases: Array<[string, RequestInit, number, RegExp]> = [
    [
      "/api/workflow/run",
      { body: "{", headers: { "content-type": "application/json" } },
      400,
      /not valid JSON/,
    ],
    [
      "/api/workflow/run",
      { body: "script=1", headers: { "content-type": "text/plain" } },
      400,
      /Content-Type: application\/json/,
    ],
    [
      "/api/workflow/run",
      { body: JSON.stringify({ script: 5 }), headers: { "content-type": "application/json" } },
      400,
      /'script'/,
    ],
    [
      "/api/workflow/run",
      {
        body: JSON.stringify({ script: "return 1", timeout: -1 }),
        headers: { "content-type": "application/json" },
      },
      400,
      /'timeout'/,
    ],
    [
      "/api/workflow/run",
      {
        body: JSON.stringify({ script: "return 1", board_dir: "/tmp", extra: 1 }),
        headers: { "content-type": "application/json" },
      },
      400,
      /unknown field/,
    ],
    [
      "/api/workflow/run",
      {
        body: JSON.stringify({ script: "return 1", script_dir: "/etc" }),
        headers: { "content-type": "application/json" },
      },
      400,
      /'script_dir'/,
    ],
    ["/api/workflow?limit=0", { method: "GET" }, 400, /'limit'/],
    ["/api/workflow?state=sleeping", { method: "GET" }, 400, /'state'/],
    ["/api/nothing/here", { method: "GET" }, 404, /no such route/],
  ];
  for (const [path, init, status, message] of cases) {
    const response = await d.request(path, { method: "POST", token: TOKENS.alice, ...init });
    const body = await response.json();
    assert.equal(response.status, status, `${path} ${init.body}`);
    assert.equal(body.error.status, status);
    assert.match(body.error.message, message, path);
    assert.doesNotMatch(JSON.stringify(body), /at \w+ \(|file:\/\//, "no stack trace");
  }
});

Deno.test("the SVC_DASHBOARD_* variables and token files are read, and bad values are refused by name", () => {
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  const settings = authSettingsFromEnv(env({
    SVC_DASHBOARD_API_TOKEN: "main-token-0123456789abcdef",
    SVC_DASHBOARD_API_TOKEN_OWNER: "ops",
    SVC_DASHBOARD_OWNER_TOKENS: `alice:${TOKENS.alice}, bob:${TOKENS.bob}`,
    SVC_DASHBOARD_AUTH_REQUIRED: "true",
    SVC_DASHBOARD_REQUIRE_OWNER: "1",
    SVC_DASHBOARD_ALLOWED_ORIGINS: "https://a.example.com/, http://localhost:3000",
  }));
  assert.deepEqual(settings, {
    required: true,
    requireOwner: true,
    tokens: [
      { token: "main-token-0123456789abcdef", owner: "ops" },
      { token: TOKENS.alice, owner: "alice" },
      { token: TOKENS.bob, owner: "bob" },
    ],
    allowedOrigins: ["https://a.example.com", "http://localhost:3000"],
  });
  assert.deepEqual(authSettingsFromEnv(env({})), {
    required: true,
    requireOwner: false,
    tokens: [],
    allowedOrigins: [],
  });
  const refused: Array<[Record<string, string>, RegExp]> = [
    [{ SVC_DASHBOARD_API_TOKEN: "short" }, /16 to 512 characters/],
    [{ SVC_DASHBOARD_OWNER_TOKENS: TOKENS.alice }, /owner:token/],
    [
      { SVC_DASHBOARD_AUTH_REQUIRED: "maybe" },
      /SVC_DASHBOARD_AUTH_REQUIRED: expected true or false/,
    ],
    [{ SVC_DASHBOARD_ALLOWED_ORIGINS: "not an origin" }, /not an origin/],
  ];
  for (const [vars, message] of refused) {
    assert.throws(() => authSettingsFromEnv(env(vars)), (error: unknown) => {
      assert.ok(error instanceof SvcError);
      assert.match(error.message, message);
      return true;
    });
  }
  assert.deepEqual(
    parseTokenFile(`# tokens\n\n${TOKENS.shared}\nalice:${TOKENS.alice}\n`, "tokens.txt"),
    [{ token: TOKENS.shared }, { token: TOKENS.alice, owner: "alice" }],
  );
  assert.throws(() => parseTokenFile("x\n", "tokens.txt"), /tokens.txt line 1/);
});

/**
 * The capability report: `GET /api/capabilities` (in process, through the dashboard's fetch
 * handler) and `svc doctor` (the real command line, through the launcher's narrow grants). Each
 * provider's tool, version and whether svc is tested with it, its credentials against a local
 * endpoint's model list, its sandbox levels; bounded in time, the same for every caller, and never
 * a key's value in what it prints. With the real tools installed, `svc doctor` reports the four at
 * their tested versions.
 */
import assert from "node:assert/strict";
import { type Config, ConfigSchema } from "../src/config/mod.ts";
import { createCapabilities, createDispatcher } from "../src/dispatch/mod.ts";
import { TESTED_VERSIONS } from "../src/dispatch/harness/mod.ts";
import { dashboardApp } from "../src/http/mod.ts";
import { CapabilityReportSchema } from "../src/schemas/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { TOKENS, TWO_OWNERS } from "./dashboard_helpers.ts";
import { stub } from "./harness_helpers.ts";
import { runCli, tempDir } from "./helpers.ts";
import { renderDoctor } from "../cli/doctor.ts";
import { agentBin, agentHome, agentsDir, type RealTool, realToolTest } from "./real_agents.ts";

const SECRET = "sk-caps-test-Vq3nX8yL2mK5pR7tW9zB4cD6fG1hJ0";
const GEMINI_SECRET = "AIza-caps-test-Qw7Er5Ty3Ui1Op9As8Df6Gh";

/** A local endpoint serving model lists: `/v1/models` and `/v1beta/models`, one key accepted each. */
function modelLists(): { url: string; paths: string[] } & AsyncDisposable {
  const paths: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const url = new URL(request.url);
    paths.push(url.pathname);
    if (url.pathname === "/slow/v1/models") {
      // Holds the request until its client gives up.
      return new Promise((resolve) =>
        request.signal.addEventListener("abort", () => resolve(new Response(null)), { once: true })
      );
    }
    const ok = url.pathname.endsWith("/v1beta/models")
      ? request.headers.get("x-goog-api-key") === GEMINI_SECRET
      : request.headers.get("x-api-key") === SECRET ||
        request.headers.get("authorization") === `Bearer ${SECRET}`;
    if (!url.pathname.endsWith("/models")) return new Response("no", { status: 404 });
    if (!ok) {
      return Response.json({ error: { message: "invalid x-api-key" } }, { status: 401 });
    }
    return url.pathname.endsWith("/v1beta/models")
      ? Response.json({ models: [{ name: "models/gemini-x" }] })
      : Response.json({ data: [{ id: "model-a" }, { id: "model-b" }] });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    paths,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** A configuration over the stand-ins and the local endpoint. */
function configOf(base: string): Config {
  return ConfigSchema.parse({
    providers: {
      claude: { type: "claude", command: stub("claude") },
      gemini: {
        type: "gemini",
        command: stub("gemini"),
        base_url: base,
        env: { GEMINI_API_KEY: GEMINI_SECRET },
      },
      nowhere: { type: "codex", command: "/nonexistent/codex" },
      keyed: {
        type: "anthropic",
        model: "m",
        base_url: base,
        api_key_env: "SVC_TEST_CAPS_KEY",
      },
      wrong: {
        type: "openai",
        model: "m",
        base_url: `${base}/v1`,
        api_key_env: "SVC_TEST_CAPS_WRONG_KEY",
      },
      unset: {
        type: "openai",
        model: "m",
        base_url: `${base}/v1`,
        api_key_env: "SVC_TEST_CAPS_UNSET_KEY",
      },
    },
    sandbox: { full: "ask" },
  });
}

Deno.test("GET /api/capabilities reports each provider's tool, version, credentials and sandbox levels, the same for every caller and without a key's value", async () => {
  await using endpoint = modelLists();
  await using home = await tempDir("svc-caps-");
  Deno.env.set("SVC_TEST_CAPS_KEY", SECRET);
  Deno.env.set("SVC_TEST_CAPS_WRONG_KEY", "sk-wrong-0123456789abcdefghij");
  try {
    const config = configOf(endpoint.url);
    await using services = await openServices({
      home: home.path,
      config,
      dispatcher: createDispatcher({ config }),
    });
    const app = dashboardApp(services, { auth: TWO_OWNERS });
    const get = (token?: string) =>
      app.fetch(
        new Request("http://127.0.0.1/api/capabilities", {
          headers: token ? { authorization: `Bearer ${token}` } : {},
        }),
      );
    assert.equal((await get()).status, 401);
    const response = await get(TOKENS.alice);
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.ok(!text.includes(SECRET) && !text.includes(GEMINI_SECRET), "a key's value leaked");
    const report = CapabilityReportSchema.parse(JSON.parse(text));
    assert.equal(report.sandbox_full, "ask");
    assert.ok(report.took_ms <= report.deadline_ms);
    const byName = Object.fromEntries(report.providers.map((p) => [p.name, p]));
    assert.deepEqual(Object.keys(byName).sort(), [
      "claude",
      "fake",
      "gemini",
      "keyed",
      "nowhere",
      "unset",
      "wrong",
    ]);
    // The stand-ins print a version that is not the tested one.
    assert.equal(byName.claude!.tool!.installed, true);
    assert.equal(byName.claude!.tool!.version, "2.0.14");
    assert.equal(byName.claude!.tool!.tested_version, TESTED_VERSIONS.claude.version);
    assert.equal(byName.claude!.tool!.tested, false);
    assert.deepEqual(byName.claude!.sandbox_levels, ["read-only", "write", "full"]);
    assert.equal(byName.nowhere!.tool!.installed, false);
    assert.equal(byName.nowhere!.tool!.probe, "missing");
    // A remote caller learns the tool's name, never where it is on the host.
    assert.equal(byName.nowhere!.tool!.detail, "codex does not exist");
    // Credentials: the gateway's model list with the configured key, by wire format.
    assert.equal(byName.gemini!.credentials.state, "ok");
    assert.equal(byName.gemini!.credentials.key_found, "GEMINI_API_KEY");
    assert.equal(byName.gemini!.credentials.endpoint, `${endpoint.url}/v1beta/models`);
    assert.equal(byName.keyed!.credentials.state, "ok");
    assert.equal(
      byName.keyed!.credentials.detail,
      "answered with SVC_TEST_CAPS_KEY: HTTP 200, 2 models",
    );
    assert.deepEqual(byName.keyed!.sandbox_levels, ["read-only"]);
    assert.equal(byName.wrong!.credentials.state, "refused");
    assert.equal(byName.wrong!.credentials.endpoint, `${endpoint.url}/v1/models`);
    assert.equal(byName.unset!.credentials.state, "missing");
    assert.match(byName.unset!.credentials.detail, /^none of SVC_TEST_CAPS_UNSET_KEY is set/);
    assert.equal(byName.claude!.credentials.state, "missing");
    assert.match(byName.claude!.credentials.detail, /none of ANTHROPIC_API_KEY, /);
    assert.equal(byName.fake!.credentials.state, "not_needed");
    // Owner-neutral: another owner gets the same report; the endpoints were asked once (kept).
    const asked = endpoint.paths.length;
    const bob = CapabilityReportSchema.parse(await (await get(TOKENS.bob)).json());
    assert.deepEqual(bob.providers, report.providers);
    assert.equal(endpoint.paths.length, asked);
  } finally {
    Deno.env.delete("SVC_TEST_CAPS_KEY");
    Deno.env.delete("SVC_TEST_CAPS_WRONG_KEY");
  }
});

Deno.test("the capability report comes within its deadline when an endpoint hangs and a tool's version flag is slow", async () => {
  await using endpoint = modelLists();
  await using dir = await tempDir("svc-caps-slow-");
  const slow = `${dir.path}/claude`;
  await Deno.writeTextFile(slow, "#!/usr/bin/env bash\nsleep 3\necho '1.0.0 (Claude Code)'\n");
  await Deno.chmod(slow, 0o755);
  const config = ConfigSchema.parse({
    providers: {
      slow: { type: "claude", command: slow, base_url: `${endpoint.url}/slow` },
    },
  });
  const capabilities = createCapabilities({
    config,
    env: (name) => (name === "ANTHROPIC_API_KEY" ? SECRET : undefined),
    deadlineMs: 1_000,
    endpointTimeoutMs: 400,
  });
  const started = Date.now();
  const report = await capabilities.report();
  const took = Date.now() - started;
  assert.ok(took < 1_800, `the report took ${took} ms`);
  const [provider] = report.providers.filter((p) => p.name === "slow");
  assert.equal(provider!.tool!.probe, "probing");
  assert.equal(provider!.tool!.installed, true);
  assert.equal(provider!.credentials.state, "unreachable");
  assert.equal(provider!.credentials.detail, "no answer within 0.4 s");
  assert.ok(!JSON.stringify(report).includes(SECRET));
  // The version probe goes on by itself and answers a later report.
  await new Promise((resolve) => setTimeout(resolve, 2_600));
  const later = await capabilities.report();
  assert.equal(later.providers.find((p) => p.name === "slow")!.tool!.version, "1.0.0");
});

Deno.test("svc doctor prints the report for people and as JSON, and never a key's value", async () => {
  await using endpoint = modelLists();
  // Another port: the harness's endpoint is granted to `svc doctor` on its own.
  await using gateway = modelLists();
  await using home = await tempDir("svc-caps-cli-");
  await Deno.writeTextFile(
    `${home.path}/config.json`,
    JSON.stringify({
      providers: {
        claude: { type: "claude", command: stub("claude"), base_url: gateway.url },
        keyed: {
          type: "anthropic",
          model: "m",
          base_url: endpoint.url,
          api_key_env: "SVC_TEST_CAPS_KEY",
        },
      },
    }),
  );
  const env = { SVC_TEST_CAPS_KEY: SECRET, ANTHROPIC_API_KEY: SECRET };
  const json = await runCli(["doctor", "--json"], { home: home.path, env });
  assert.equal(json.code, 0, json.stderr);
  assert.ok(!json.stdout.includes(SECRET) && !json.stderr.includes(SECRET));
  const report = CapabilityReportSchema.parse(JSON.parse(json.stdout));
  const claude = report.providers.find((p) => p.name === "claude")!;
  assert.equal(claude.tool!.version, "2.0.14");
  assert.equal(claude.credentials.state, "ok");
  assert.equal(claude.credentials.key_found, "ANTHROPIC_API_KEY");
  assert.equal(report.providers.find((p) => p.name === "keyed")!.credentials.state, "ok");

  const text = await runCli(["doctor"], { home: home.path, env });
  assert.equal(text.code, 0, text.stderr);
  assert.ok(!text.stdout.includes(SECRET) && !text.stderr.includes(SECRET));
  assert.match(text.stdout, /^claude \(claude, harness\)$/m);
  assert.match(
    text.stdout,
    new RegExp(
      `^  tool {9}2\\.0\\.14, not the tested version ${
        TESTED_VERSIONS.claude.version.replaceAll(".", "\\.")
      } \\(`,
      "m",
    ),
  );
  assert.match(text.stdout, /^ {2}credentials {2}ok: answered with ANTHROPIC_API_KEY: HTTP 200/m);
  assert.match(text.stdout, /^ {2}sandbox {6}read-only, write, full$/m);
});

Deno.test("/api/providers and /api/capabilities name each tool by name and version, never by a path on the host; the local report keeps the paths", async () => {
  await using home = await tempDir("svc-caps-paths-");
  const config = ConfigSchema.parse({
    providers: {
      claude: { type: "claude", command: stub("claude") },
      nowhere: { type: "codex", command: `${home.path}/bin/codex` },
    },
  });
  // The configuration's own dispatcher: the harnesses are registered and probed.
  await using services = await openServices({ home: home.path, config });
  const app = dashboardApp(services, { auth: TWO_OWNERS });
  const get = async (path: string) => {
    const response = await app.fetch(
      new Request(`http://127.0.0.1${path}`, {
        headers: { authorization: `Bearer ${TOKENS.bob}` },
      }),
    );
    assert.equal(response.status, 200);
    return await response.text();
  };
  const stubDir = stub("claude").slice(0, stub("claude").lastIndexOf("/"));
  for (const path of ["/api/providers", "/api/capabilities"]) {
    const text = await get(path);
    assert.ok(!text.includes(stubDir), `${path} shows the tool's folder: ${text}`);
    assert.ok(!text.includes(home.path), `${path} shows a host path: ${text}`);
  }
  const providers = JSON.parse(await get("/api/providers")).providers;
  const claude = providers.find((p: { name: string }) => p.name === "claude");
  assert.equal(claude.available, true);
  assert.equal(claude.version, "2.0.14");
  assert.match(claude.reason, /^found claude: /);
  const nowhere = providers.find((p: { name: string }) => p.name === "nowhere");
  assert.equal(nowhere.available, false);
  assert.equal(nowhere.reason, "codex does not exist");
  const report = CapabilityReportSchema.parse(JSON.parse(await get("/api/capabilities")));
  const tool = report.providers.find((p) => p.name === "claude")!.tool!;
  assert.deepEqual([tool.command, tool.path, tool.installed, tool.version], [
    "claude",
    null,
    true,
    "2.0.14",
  ]);
  // The operator's own report (svc doctor) still says where each binary is.
  const local = await services.capabilities.report();
  assert.equal(local.providers.find((p) => p.name === "claude")!.tool!.path, stub("claude"));
});

/** One `svc doctor --json` over the four real tools, shared by their tests. */
let realReport:
  | Promise<Map<string, { version: string | null; tested: boolean | null }>>
  | undefined;

function doctorOfRealTools() {
  return realReport ??= (async () => {
    await using agent = await agentHome();
    const tools: RealTool[] = ["claude", "codex", "gemini", "opencode"];
    const providers = Object.fromEntries(
      tools.map((tool) => [tool, { type: tool, command: agentBin(tool) }]),
    );
    await Deno.writeTextFile(`${agent.home}/config.json`, JSON.stringify({ providers }));
    const result = await runCli(["doctor", "--json"], {
      home: agent.home,
      env: { HOME: agent.home, TMPDIR: agent.tmp },
    });
    assert.equal(result.code, 0, result.stderr);
    const report = CapabilityReportSchema.parse(JSON.parse(result.stdout));
    return new Map(
      report.providers.filter((p) => p.tool).map((p) => [p.name, {
        version: p.tool!.version,
        tested: p.tool!.tested,
      }]),
    );
  })();
}

for (const tool of ["claude", "codex", "gemini", "opencode"] as const) {
  realToolTest(
    tool,
    "svc doctor reports it installed, at the version svc is tested with",
    async () => {
      assert.ok(agentsDir());
      const reported = (await doctorOfRealTools()).get(tool);
      assert.deepEqual(reported, { version: TESTED_VERSIONS[tool].version, tested: true });
    },
  );
}

Deno.test("a Codex provider whose CODEX_HOME lies under a TMPDIR it fixes offers full only, naming both, in /api/capabilities and svc doctor", async () => {
  await using home = await tempDir("svc-caps-home-");
  await using user = await tempDir("svc-caps-user-");
  const config = ConfigSchema.parse({
    providers: {
      fixed: { type: "codex", command: stub("codex"), env: { HOME: user.path, TMPDIR: user.path } },
      moved: { type: "codex", command: stub("codex"), env: { HOME: user.path } },
      apart: {
        type: "codex",
        command: stub("codex"),
        env: { HOME: user.path, TMPDIR: `${user.path}/tmp` },
      },
    },
  });
  await using services = await openServices({
    home: home.path,
    config,
    dispatcher: createDispatcher({ config }),
  });
  const direct = await createCapabilities({
    config,
    env: (name) => name === "TMPDIR" ? undefined : Deno.env.get(name),
  }).report();
  const local = Object.fromEntries(direct.providers.map((p) => [p.name, p]));
  assert.deepEqual(local.fixed!.sandbox_levels, ["full"]);
  assert.match(
    local.fixed!.sandbox_detail!,
    new RegExp(
      `^Codex's sandbox helper \\(codex-linux-sandbox\\) cannot work: CODEX_HOME ${user.path}/\\.codex lies under the temp directory ${user.path} \\(TMPDIR\\)`,
    ),
  );
  // No TMPDIR set: /tmp is the temp directory, and svc gives Codex one of its own.
  assert.deepEqual(local.moved!.sandbox_levels, ["read-only", "write", "full"]);
  assert.match(
    local.moved!.sandbox_detail!,
    /svc runs Codex with TMPDIR=\S+\/harness\/moved\/tmp$/,
  );
  assert.equal(local.apart!.sandbox_detail, null);
  const doctor = renderDoctor(direct, null).join("\n");
  assert.match(
    doctor,
    /sandbox {6}full\n {15}Codex's sandbox helper .*CODEX_HOME .* lies under the temp directory/,
  );

  const app = dashboardApp(services, { auth: TWO_OWNERS });
  const response = await app.fetch(
    new Request("http://127.0.0.1/api/capabilities", {
      headers: { authorization: `Bearer ${TOKENS.alice}` },
    }),
  );
  const report = CapabilityReportSchema.parse(await response.json());
  const remote = report.providers.find((p) => p.name === "fixed")!;
  assert.deepEqual(remote.sandbox_levels, ["full"]);
  // A remote caller is told CODEX_HOME and the temp directory, without the host's paths.
  assert.match(remote.sandbox_detail!, /CODEX_HOME \.codex lies under the temp directory/);
  assert.ok(!remote.sandbox_detail!.includes(user.path));
});

Deno.test("svc doctor names CODEX_HOME and the temp directory when Codex's sandbox helper cannot work", async () => {
  await using home = await tempDir("svc-caps-cli-");
  await using user = await tempDir("svc-caps-user-");
  await Deno.writeTextFile(
    `${home.path}/config.json`,
    JSON.stringify({
      providers: {
        codex: {
          type: "codex",
          command: stub("codex"),
          env: { HOME: user.path, TMPDIR: user.path },
        },
      },
    }),
  );
  const text = await runCli(["doctor"], { home: home.path });
  assert.equal(text.code, 0, text.stderr);
  assert.match(
    text.stdout,
    new RegExp(
      `^  sandbox {6}full\\n {15}Codex's sandbox helper \\(codex-linux-sandbox\\) cannot work: CODEX_HOME ${user.path}/\\.codex lies under the temp directory ${user.path} \\(TMPDIR\\)`,
      "m",
    ),
  );
  const json = await runCli(["doctor", "--json"], { home: home.path });
  const report = CapabilityReportSchema.parse(JSON.parse(json.stdout));
  assert.deepEqual(report.providers.find((p) => p.name === "codex")!.sandbox_levels, ["full"]);
});

import assert from "node:assert/strict";
import { type Config, ConfigSchema, loadConfig } from "../src/config/mod.ts";
import {
  admitSandbox,
  AvailabilityTracker,
  createDispatcher,
  NATIVE_CLAUDE_ALIASES,
  type Provider,
} from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { LOCAL, tempDir, testManager } from "./helpers.ts";
import { type RecordingProvider, recordingProvider } from "./providers.ts";

/** A provider that answers with its name and records the requests it got. */
function provider(
  name: string,
  kind: Provider["kind"] = "harness",
  options: { available?: boolean; fail?: boolean; cost?: number | null } = {},
): RecordingProvider {
  return recordingProvider(name, {
    kind,
    availability: {
      available: options.available ?? true,
      reason: options.available === false ? `${name} not found on PATH` : "ok",
      version: "1.0",
    },
    answer(request) {
      if (options.fail) {
        return Promise.reject(new SvcError("internal", `Cannot dispatch to ${name}: it failed`));
      }
      return Promise.resolve({
        output: `${name}: ${request.prompt}`,
        usage: { input_tokens: 1000, output_tokens: 2000 },
        cost_usd: options.cost === undefined ? null : options.cost,
        provider: name,
        model: request.model ?? `${name}-default`,
      });
    },
  });
}

function config(raw: unknown): Config {
  return ConfigSchema.parse(raw);
}

const signal = new AbortController().signal;

Deno.test("without a configuration file only the fake provider exists, and it says so", async () => {
  await using home = await tempDir();
  const loaded = await loadConfig(home.path);
  assert.equal(loaded.path, null);
  const dispatcher = createDispatcher({ config: loaded.config, fakeLatencyMs: 0 });
  const status = await dispatcher.status();
  assert.deepEqual(status.map((s) => [s.name, s.kind, s.available]), [["fake", "fake", true]]);
});

Deno.test("a bad configuration file is refused with the path of the bad field", async () => {
  await using home = await tempDir();
  const cases: Array<[unknown, RegExp]> = [
    [
      { providers: { claude: { type: "claude", concurrency: "four" } } },
      /config\.json: providers\.claude\.concurrency: Invalid input: expected number/,
    ],
    [
      { providers: { x: { type: "teleport" } } },
      /providers\.x\.type: Invalid discriminator value\. Expected 'fake' \| 'claude'/,
    ],
    [
      {
        providers: {
          o: { type: "openai", base_url: "https://x", api_key_env: "lower case", model: "m" },
        },
      },
      /providers\.o\.api_key_env: must be the NAME of an environment variable/,
    ],
    [
      { profiles: { fast: { provider: "nowhere" } } },
      /profiles\.fast\.provider: names no configured provider \('nowhere'\)/,
    ],
    [
      { routing: { prefer: ["fake", "ghost"] } },
      /routing\.prefer\.1: names no configured provider \('ghost'\)/,
    ],
    [{ provider: {} }, /\(top level\): unknown field 'provider'/],
  ];
  for (const [raw, expected] of cases) {
    await Deno.writeTextFile(`${home.path}/config.json`, JSON.stringify(raw));
    await assert.rejects(loadConfig(home.path), (error: unknown) => {
      assert.ok(error instanceof SvcError);
      assert.match(error.message, expected);
      return true;
    });
  }
  await Deno.writeTextFile(`${home.path}/config.json`, "{ not json");
  await assert.rejects(loadConfig(home.path), /config\.json: it is not JSON/);
  Deno.env.set("SVC_CONFIG", `${home.path}/missing.json`);
  try {
    await assert.rejects(
      loadConfig(home.path),
      /Cannot read the configuration .*missing\.json: no such file/,
    );
  } finally {
    Deno.env.delete("SVC_CONFIG");
  }
});

Deno.test("a provider asked for by name must exist and be available", async () => {
  const dispatcher = createDispatcher({
    providers: [provider("claude", "harness", { available: false })],
    fakeLatencyMs: 0,
  });
  await assert.rejects(
    dispatcher.dispatch({ prompt: "p", options: { provider: "ghost" }, signal }),
    /unknown provider 'ghost' \(configured: fake, claude\)/,
  );
  await assert.rejects(
    dispatcher.dispatch({ prompt: "p", options: { provider: "claude" }, signal }),
    /Cannot dispatch to claude: it is unavailable \(claude not found on PATH\)/,
  );
});

Deno.test("auto routing skips unavailable providers and never picks fake beside real ones", async () => {
  const dispatcher = createDispatcher({
    providers: [provider("claude", "harness", { available: false }), provider("codex")],
    fakeLatencyMs: 0,
  });
  const outcome = await dispatcher.dispatch({ prompt: "p", options: {}, signal });
  assert.equal(outcome.provider, "codex");
  assert.match(
    outcome.route.reason,
    /^auto: codex of codex \(.*claude unavailable: claude not found on PATH/,
  );
});

Deno.test("auto routing follows tags, effort, preference, load and price, and says why", async () => {
  const cfg = config({
    providers: {
      claude: {
        type: "claude",
        tags: ["review"],
        price: { input_per_mtok: 3, output_per_mtok: 15 },
      },
      codex: { type: "codex", price: { input_per_mtok: 1, output_per_mtok: 4 } },
      api: { type: "openai", base_url: "http://127.0.0.1:9", api_key_env: "NO_KEY", model: "m" },
    },
    routing: { prefer: ["claude"], tags: { bulk: ["codex"] }, effort: { low: ["api", "codex"] } },
  });
  const dispatcher = createDispatcher({
    providers: [provider("claude"), provider("codex"), provider("api", "api")],
    config: cfg,
    fakeLatencyMs: 0,
  });
  const route = async (options: Record<string, unknown>, sandboxDefault?: "read-only" | "write") =>
    (await dispatcher.dispatch({ prompt: "p", options, signal }, { sandboxDefault })).route;
  assert.equal((await route({})).provider, "claude", "preferred");
  assert.equal((await route({ tag: "bulk" })).provider, "codex", "tag routing list");
  assert.equal((await route({ tag: "review" })).provider, "claude", "provider's own tags");
  assert.equal((await route({ effort: "low" })).provider, "api", "effort list");
  const writing = await route({ effort: "low" }, "write");
  assert.equal(writing.provider, "codex", "a model API cannot work at sandbox write");
  assert.match(writing.reason, /api cannot work at sandbox write/);
  const unpreferred = createDispatcher({
    providers: [provider("claude"), provider("codex")],
    config: { ...cfg, routing: { prefer: [], tags: {}, effort: {} } },
    fakeLatencyMs: 0,
  });
  const cheapest = await unpreferred.dispatch({ prompt: "p", options: {}, signal });
  assert.equal(cheapest.provider, "codex", "cheaper at equal load");
  assert.match(cheapest.route.reason, /price 5\/Mtok/);
});

Deno.test("auto routing prefers the less loaded provider", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const slow: Provider = {
    ...provider("slow"),
    async dispatch(request) {
      await gate;
      return {
        output: "slow",
        usage: { input_tokens: 1, output_tokens: 1 },
        cost_usd: 0,
        provider: "slow",
        model: null,
        ...(request ? {} : {}),
      };
    },
  };
  const dispatcher = createDispatcher({
    providers: [slow, provider("quick")],
    concurrency: { slow: 2, quick: 2 },
    fakeLatencyMs: 0,
  });
  const first = dispatcher.dispatch({ prompt: "1", options: { provider: "slow" }, signal });
  const second = await dispatcher.dispatch({ prompt: "2", options: {}, signal });
  assert.equal(second.provider, "quick");
  assert.match(second.route.reason, /load 0\/2/);
  release();
  await first;
});

Deno.test("a profile fixes provider and model; an explicit model overrides it", async () => {
  // Claude Code takes the aliases `opus` and `haiku` itself.
  const claude = { ...provider("claude"), modelAliases: NATIVE_CLAUDE_ALIASES };
  const dispatcher = createDispatcher({
    providers: [claude],
    config: config({
      providers: { claude: { type: "claude" } },
      profiles: { reviewer: { provider: "claude", model: "opus" } },
    }),
    fakeLatencyMs: 0,
  });
  const a = await dispatcher.dispatch({ prompt: "p", options: { profile: "reviewer" }, signal });
  assert.deepEqual([a.provider, a.model, a.route.reason], ["claude", "opus", "profile 'reviewer'"]);
  const b = await dispatcher.dispatch({
    prompt: "p",
    options: { profile: "reviewer", model: "haiku" },
    signal,
  });
  assert.equal(b.model, "haiku");
  await assert.rejects(
    dispatcher.dispatch({ prompt: "p", options: { profile: "nope" }, signal }),
    /no profile 'nope' \(configured: reviewer\)/,
  );
});

Deno.test("kernel admission bounds every call by the ceiling, and full by the server's consent", () => {
  assert.deepEqual(admitSandbox(undefined, { full: "allow" }), {
    level: "read-only",
    clamped: null,
  });
  assert.deepEqual(admitSandbox(undefined, { sandboxDefault: "write", full: "deny" }), {
    level: "write",
    clamped: null,
  });
  assert.deepEqual(admitSandbox("full", { sandboxDefault: "full", full: "allow" }), {
    level: "full",
    clamped: null,
  });
  assert.deepEqual(admitSandbox("write", { sandboxDefault: "read-only", full: "allow" }), {
    level: "read-only",
    clamped:
      "write was clamped to read-only: the ceiling is read-only (the default level; sandbox_max raises it)",
  });
  assert.deepEqual(
    admitSandbox("write", { sandboxDefault: "read-only", sandboxMax: "write", full: "deny" }),
    { level: "write", clamped: null },
  );
  assert.deepEqual(
    admitSandbox("full", { sandboxDefault: "read-only", sandboxMax: "write", full: "allow" }),
    { level: "write", clamped: "full was clamped to write: the ceiling is write (sandbox_max)" },
  );
  assert.deepEqual(admitSandbox("full", { sandboxDefault: "full", full: "deny" }), {
    level: "write",
    clamped: "full was clamped to write: the server configuration's sandbox.full is deny",
  });
  assert.equal(
    admitSandbox("full", { sandboxDefault: "read-only", full: "deny" }).level,
    "read-only",
  );
});

Deno.test("a read-only run hands its write calls read-only agents, and journals the clamp", async () => {
  const claude = provider("claude");
  await using t = await testManager({
    dispatcher: createDispatcher({ providers: [claude], fakeLatencyMs: 0 }),
  });
  const run = await t.manager.start({
    script: `await agent("a", { provider: "claude", sandbox: "write" });
      await agent("b", { provider: "claude", sandbox: "full" });
      await agent("c", { provider: "claude" });`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.sandbox_max, "read-only");
  assert.deepEqual(claude.requests.map((r) => r.sandbox), ["read-only", "read-only", "read-only"]);
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.deepEqual(journal.map((e) => e.sandbox_clamped), [
    "write was clamped to read-only: the ceiling is read-only (the default level; sandbox_max raises it)",
    "full was clamped to read-only: the ceiling is read-only (the default level; sandbox_max raises it)",
    undefined,
  ]);
});

Deno.test("sandbox_max lets an operator allow more than the default, and no more", async () => {
  const claude = provider("claude");
  await using t = await testManager({
    dispatcher: createDispatcher({ providers: [claude], fakeLatencyMs: 0 }),
  });
  const run = await t.manager.start({
    script: `await agent("a", { provider: "claude", sandbox: "write" });
      await agent("b", { provider: "claude" });
      await agent("c", { provider: "claude", sandbox: "full" });`,
    sandbox_max: "write",
  }, LOCAL);
  await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(claude.requests.map((r) => r.sandbox), ["write", "read-only", "write"]);
  await assert.rejects(
    t.manager.start(
      { script: "return 1", sandbox_default: "write", sandbox_max: "read-only" },
      LOCAL,
    ),
    /'sandbox_max' must not be below sandbox_default/,
  );
});

Deno.test("the admitted sandbox level reaches the provider, and a clamp is journaled", async () => {
  const claude = provider("claude");
  await using t = await testManager({
    dispatcher: createDispatcher({ providers: [claude], fakeLatencyMs: 0 }),
  });
  const run = await t.manager.start({
    script:
      `await agent("a", { provider: "claude", sandbox: "full" }); await agent("b", { provider: "claude" });`,
    sandbox_default: "write",
  }, LOCAL);
  await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(claude.requests.map((r) => r.sandbox), ["write", "write"]);
  const journal = await t.manager.journal(run.run_id, LOCAL);
  assert.match(
    journal[0]!.sandbox_clamped ?? "",
    /^full was clamped to write: the ceiling is write \(the default level; sandbox_max raises it\)$/,
  );
  assert.equal(journal[1]!.sandbox_clamped, undefined);
  assert.deepEqual(journal.map((e) => [e.sandbox, e.route]), [["write", "asked for by name"], [
    "write",
    "asked for by name",
  ]]);
});

Deno.test("a direct dispatch gets what it asks for, bounded by its sandbox_max", async () => {
  const claude = provider("claude");
  const dispatcher = createDispatcher({
    providers: [claude],
    config: config({
      providers: { claude: { type: "claude" } },
      profiles: { writer: { provider: "claude", sandbox: "write" } },
    }),
  });
  const asked = await dispatcher.dispatch({ prompt: "x", options: { profile: "writer" }, signal });
  assert.deepEqual([asked.sandbox, asked.sandbox_clamped], ["write", null]);
  const bounded = await dispatcher.dispatch(
    { prompt: "x", options: { profile: "writer" }, signal },
    { sandboxMax: "read-only" },
  );
  assert.deepEqual([bounded.sandbox, bounded.sandbox_clamped], [
    "read-only",
    "write was clamped to read-only: the ceiling is read-only (sandbox_max)",
  ]);
});

Deno.test("a provider that keeps failing becomes unavailable to auto routing", async () => {
  const dispatcher = createDispatcher({
    providers: [provider("flaky", "harness", { fail: true }), provider("steady")],
    config: config({
      providers: { flaky: { type: "claude" }, steady: { type: "codex" } },
      routing: { prefer: ["flaky", "steady"] },
    }),
    availability: { window: 4, failureRate: 0.75 },
    fakeLatencyMs: 0,
  });
  for (let i = 0; i < 4; i++) {
    await dispatcher.dispatch({ prompt: "p", options: { provider: "flaky" }, signal }).catch(
      () => {},
    );
  }
  const outcome = await dispatcher.dispatch({ prompt: "p", options: {}, signal });
  assert.equal(outcome.provider, "steady");
  assert.match(outcome.route.reason, /flaky unavailable: failing: 4 of its last 4 calls failed/);
  const status = await dispatcher.status();
  assert.equal(status.find((s) => s.name === "flaky")?.available, false);
});

Deno.test("a failing provider is tried again after a cool-down, and one success clears its failures", async () => {
  let clock = 1_000_000;
  const flakyOptions = { fail: true };
  const dispatcher = createDispatcher({
    providers: [provider("flaky", "harness", flakyOptions), provider("steady")],
    config: config({
      providers: { flaky: { type: "claude" }, steady: { type: "codex" } },
      routing: { prefer: ["flaky", "steady"] },
    }),
    availability: { window: 4, failureRate: 0.75, cooldownMs: 30_000, now: () => clock },
    fakeLatencyMs: 0,
  });
  for (let i = 0; i < 4; i++) {
    await dispatcher.dispatch({ prompt: "p", options: { provider: "flaky" }, signal }).catch(
      () => {},
    );
  }
  clock += 29_999;
  const during = await dispatcher.dispatch({ prompt: "p", options: {}, signal });
  assert.equal(during.provider, "steady");
  assert.match(during.route.reason, /failing: 4 of its last 4 calls failed; tried again in 1 s/);
  // The provider has recovered; after the cool-down the next call finds out.
  flakyOptions.fail = false;
  clock += 1;
  assert.equal((await dispatcher.dispatch({ prompt: "p", options: {}, signal })).provider, "flaky");
  // Its failures are cleared: one more failure does not make it failing again.
  flakyOptions.fail = true;
  await dispatcher.dispatch({ prompt: "p", options: { provider: "flaky" }, signal }).catch(
    () => {},
  );
  const status = await dispatcher.status();
  assert.deepEqual(status.find((s) => s.name === "flaky")?.available, true);
});

Deno.test("call outcomes older than the outcome window no longer count against a provider", async () => {
  let clock = 0;
  const tracker = new AvailabilityTracker({
    window: 10,
    outcomeTtlMs: 5 * 60_000,
    cooldownMs: Number.POSITIVE_INFINITY,
    now: () => clock,
  });
  const target = provider("target");
  for (let i = 0; i < 9; i++) tracker.record("target", false);
  clock = 5 * 60_000 + 1;
  tracker.record("target", false);
  assert.deepEqual(await tracker.check(target), { available: true, reason: "ok", version: "1.0" });
  for (let i = 0; i < 9; i++) tracker.record("target", false);
  const failing = await tracker.check(target);
  assert.equal(failing.available, false);
  assert.match(failing.reason, /^failing: 10 of its last 10 calls failed/);
});
Deno.test("a call without a reported cost is priced from the table, else unmetered", async () => {
  const dispatcher = createDispatcher({
    providers: [
      provider("priced"),
      provider("unpriced"),
      provider("reports", "harness", { cost: 0.5 }),
    ],
    config: config({
      providers: {
        priced: { type: "codex", price: { input_per_mtok: 2, output_per_mtok: 10 } },
        unpriced: { type: "codex" },
        reports: { type: "claude", price: { input_per_mtok: 100, output_per_mtok: 100 } },
      },
    }),
    fakeLatencyMs: 0,
  });
  const cost = async (name: string) =>
    (await dispatcher.dispatch({ prompt: "p", options: { provider: name }, signal })).cost_usd;
  assert.equal(await cost("priced"), (1000 * 2 + 2000 * 10) / 1e6);
  assert.equal(await cost("unpriced"), null);
  assert.equal(await cost("reports"), 0.5, "a reported cost wins over the table");
});

Deno.test("history, statistics, costs and usage come from the ledger's call log of runs and tasks", async () => {
  const { dispatchHistory } = await import("../src/dispatch/mod.ts");
  const { SessionStore, TaskManager } = await import("../src/tasks/mod.ts");
  const claude = provider("claude", "harness", { cost: 0.25 });
  const broken = provider("broken", "harness", { fail: true });
  const dispatcher = createDispatcher({ providers: [claude, broken], fakeLatencyMs: 0 });
  await using t = await testManager({ dispatcher });
  const run = await t.manager.start({
    script:
      `await agent("a", { provider: "claude" }); await agent("b", { provider: "claude" }); await agent("c", { provider: "broken" });`,
  }, LOCAL);
  await t.manager.wait(run.run_id, LOCAL);
  const tasks = new TaskManager({
    dispatcher,
    ledger: t.ledger,
    sessions: new SessionStore(t.ledger),
  });
  await tasks.wait((await tasks.start({ prompt: "d", provider: "claude" }, LOCAL)).task_id, LOCAL);
  const { calls, summary } = await dispatchHistory(t.ledger, LOCAL);
  assert.deepEqual(calls.map((c) => c.source).sort(), ["run", "run", "run", "task"]);
  assert.equal(summary.calls, 4);
  assert.equal(summary.failed, 1);
  assert.equal(summary.cost_usd, 0.75);
  assert.equal(summary.unmetered_calls, 1, "the failed call's cost is unknown");
  const byProvider = Object.fromEntries(summary.by_provider.map((p) => [p.provider, p]));
  assert.deepEqual(
    [byProvider.claude?.calls, byProvider.claude?.failed, byProvider.claude?.usage],
    [3, 0, { input_tokens: 3000, output_tokens: 6000 }],
  );
  assert.deepEqual([byProvider.broken?.calls, byProvider.broken?.failure_rate], [1, 1]);
  assert.ok(byProvider.claude!.latency_ms.p95 >= byProvider.claude!.latency_ms.median);
  assert.equal(summary.by_day.length, 1);
  await tasks.close();
});

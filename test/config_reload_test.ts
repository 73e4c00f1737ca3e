/**
 * Configuration reload: on request (`POST /api/config/reload`, the operator's only), on a
 * change of config.json and on SIGHUP (a real `svc dashboard` process). A valid file takes
 * effect without a restart; an invalid one leaves the running configuration and reports why.
 */
import assert from "node:assert/strict";
import { startDaemon } from "../src/daemon/mod.ts";
import { dashboardApp } from "../src/http/mod.ts";
import { callerOf, openServices, type Services } from "../src/services/mod.ts";
import { TOKENS, TWO_OWNERS } from "./dashboard_helpers.ts";
import { tempDir } from "./helpers.ts";
import { startHostProcess } from "./host_process.ts";
import { DAEMON_AUTH, DAEMON_TOKENS, startTestDaemon } from "./daemon_helpers.ts";

/** A provider that needs no network to be listed: it is only probed, never called. */
const EXTRA_PROVIDER = {
  type: "openai",
  model: "m",
  base_url: "http://127.0.0.1:9/v1",
  api_key_env: "EXTRA_API_KEY",
};

const NIGHTLY = { cron: "0 3 * * *", dispatch: { prompt: "nightly" }, owner: "alice" };

/** The dashboard's app over `services`, and a JSON request to it. */
function appOf(services: Services) {
  const app = dashboardApp(services, { auth: TWO_OWNERS });
  return async (path: string, token: string, method = "GET") => {
    const response = await app.fetch(
      new Request(`http://127.0.0.1${path}`, {
        method,
        headers: { authorization: `Bearer ${token}` },
      }),
    );
    return { status: response.status, body: await response.json() as Record<string, unknown> };
  };
}

/** What alice's remote dispatch in `workdir` gets: `accepted`, or the refusal's message. */
function dispatchIn(services: Services, workdir: string): Promise<string> {
  return services.tasks.start(
    { prompt: "hi", workdir, fake_dispatch: true },
    callerOf("alice", { remote: true }),
  ).then(() => "accepted", (error: Error) => error.message);
}

const names = (body: Record<string, unknown>, key: string, field: string) =>
  (body[key] as Array<Record<string, unknown>>).map((item) => String(item[field]));

Deno.test("POST /api/config/reload takes an edited config.json without a restart: a new automation, provider, admission cap and workspace root take effect", async () => {
  await using home = await tempDir("svc-reload-");
  const file = `${home.path}/config.json`;
  await Deno.writeTextFile(file, JSON.stringify({}));
  await using services = await openServices({ home: home.path });
  const call = appOf(services);
  await using work = await tempDir("svc-reload-work-");
  assert.match(await dispatchIn(services, work.path), /Cannot/);
  const before = await call("/api/status", TOKENS.shared);
  const loadedAt = (before.body.config as { loaded_at: string }).loaded_at;
  assert.equal((before.body.config as { source: string }).source, file);
  assert.deepEqual(
    names(await call("/api/providers", TOKENS.shared).then((r) => r.body), "providers", "name"),
    ["fake"],
  );

  await Deno.writeTextFile(
    file,
    JSON.stringify({
      providers: { extra: EXTRA_PROVIDER },
      automations: { nightly: NIGHTLY },
      admission: { owner_live_runs: 2 },
      workspaces: { alice: [work.path] },
    }),
  );
  const reload = await call("/api/config/reload", TOKENS.shared, "POST");
  assert.equal(reload.status, 200);
  assert.equal(reload.body.outcome, "reloaded");
  const state = reload.body.config as { loaded_at: string; error?: string; reloads: number };
  assert.equal(state.error, undefined);
  assert.equal(state.reloads, 1);
  assert.ok(state.loaded_at >= loadedAt);

  const providers = await call("/api/providers", TOKENS.shared);
  assert.deepEqual(names(providers.body, "providers", "name").sort(), ["extra", "fake"]);
  const automations = await call("/api/automations", TOKENS.alice);
  assert.deepEqual(names(automations.body, "automations", "automation_id"), ["config.nightly"]);
  // The caps later runs are admitted by, and the roots later requests are checked against.
  const status = await call("/api/status", TOKENS.alice);
  const admission = status.body.admission as { owner_live: { cap: number } };
  assert.equal(admission.owner_live.cap, 2);
  assert.equal(await dispatchIn(services, work.path), "accepted");
  // The heartbeat names the providers the host has now.
  assert.deepEqual([...services.host.ref.providers ?? []].sort(), ["extra", "fake"]);

  // The same file again: nothing to take.
  const again = await call("/api/config/reload", TOKENS.shared, "POST");
  assert.equal(again.body.outcome, "unchanged");
});

Deno.test("an invalid config.json is refused whole: the running configuration stays, and the error names the file and the key, without a stack", async () => {
  await using home = await tempDir("svc-reload-bad-");
  const file = `${home.path}/config.json`;
  await Deno.writeTextFile(file, JSON.stringify({ automations: { nightly: NIGHTLY } }));
  await using services = await openServices({ home: home.path });
  const call = appOf(services);
  // A valid provider beside an invalid automation: neither takes effect.
  await Deno.writeTextFile(
    file,
    JSON.stringify({
      providers: { extra: EXTRA_PROVIDER },
      automations: { nightly: { ...NIGHTLY, cron: "not a cron" } },
    }),
  );
  const reload = await call("/api/config/reload", TOKENS.shared, "POST");
  assert.equal(reload.status, 200);
  assert.equal(reload.body.outcome, "refused");
  const error = (reload.body.config as { error: string }).error;
  assert.ok(error.includes(file), error);
  assert.match(error, /automations\.nightly\.cron/);
  assert.doesNotMatch(error, /\n|\sat \S+:\d+/);
  assert.deepEqual(names((await call("/api/providers", TOKENS.shared)).body, "providers", "name"), [
    "fake",
  ]);
  const automations = await call("/api/automations", TOKENS.alice);
  const cron = (automations.body.automations as Array<{ cron: string }>)[0]?.cron;
  assert.equal(cron, "0 3 * * *");
  // The status reports it to the operator; JSON that does not parse is refused the same way.
  const status = await call("/api/status", TOKENS.shared);
  assert.equal((status.body.config as { error: string }).error, error);
  await Deno.writeTextFile(file, "{ not json");
  const broken = await call("/api/config/reload", TOKENS.shared, "POST");
  assert.equal(broken.body.outcome, "refused");
  assert.match((broken.body.config as { error: string }).error, /not JSON/);
  // Fixed, it is taken, and the error is gone.
  await Deno.writeTextFile(file, JSON.stringify({ providers: { extra: EXTRA_PROVIDER } }));
  const fixed = await call("/api/config/reload", TOKENS.shared, "POST");
  assert.equal(fixed.body.outcome, "reloaded");
  assert.equal((fixed.body.config as { error?: string }).error, undefined);
  // A change of a key that is read only at start is reported as needing a restart.
  await Deno.writeTextFile(
    file,
    JSON.stringify({ providers: { extra: EXTRA_PROVIDER }, daemon: { concurrency: 9 } }),
  );
  const restart = await call("/api/config/reload", TOKENS.shared, "POST");
  assert.deepEqual((restart.body.config as { restart_needed: string[] }).restart_needed, [
    "daemon.concurrency",
  ]);
});

Deno.test("only the operator reloads or reads the configuration: an owner's token gets 403 and changes nothing, and its status has no config", async () => {
  await using home = await tempDir("svc-reload-owner-");
  const file = `${home.path}/config.json`;
  await Deno.writeTextFile(file, JSON.stringify({}));
  await using services = await openServices({ home: home.path });
  const call = appOf(services);
  await Deno.writeTextFile(file, JSON.stringify({ providers: { extra: EXTRA_PROVIDER } }));
  for (const token of [TOKENS.alice, TOKENS.bob]) {
    const reload = await call("/api/config/reload", token, "POST");
    assert.equal(reload.status, 403);
    assert.equal((reload.body.error as { code: string }).code, "forbidden");
    assert.equal((await call("/api/config", token)).status, 403);
    const status = await call("/api/status", token);
    assert.equal(status.body.config, null);
    assert.ok(!JSON.stringify(status.body).includes(home.path));
  }
  assert.deepEqual(services.dispatcher.providers(), ["fake"]);
  assert.equal(services.configuration.state().reloads, 0);
  const operator = await call("/api/config", TOKENS.shared);
  assert.equal(operator.status, 200);
  assert.equal(operator.body.source, file);
});

Deno.test("a token bound to an owner named local is that owner's, not the operator's: 403 on the config routes, while a token bound to no owner gets through", async () => {
  await using home = await tempDir("svc-reload-local-owner-");
  await Deno.writeTextFile(`${home.path}/config.json`, JSON.stringify({}));
  await using services = await openServices({ home: home.path });
  const localToken = "local-owner-token-0123456789";
  const app = dashboardApp(services, {
    auth: {
      ...TWO_OWNERS,
      tokens: [...TWO_OWNERS.tokens, { token: localToken, owner: "local" }],
    },
  });
  const call = async (path: string, token: string, method = "GET") => {
    const response = await app.fetch(
      new Request(`http://127.0.0.1${path}`, {
        method,
        headers: { authorization: `Bearer ${token}` },
      }),
    );
    return { status: response.status, body: await response.json() as Record<string, unknown> };
  };
  for (const [path, method] of [["/api/config", "GET"], ["/api/config/reload", "POST"]] as const) {
    const refused = await call(path, localToken, method);
    assert.equal(refused.status, 403, `${method} ${path}`);
    assert.equal((refused.body.error as { code: string }).code, "forbidden");
  }
  assert.equal((await call("/api/status", localToken)).body.config, null);
  assert.equal(services.configuration.state().reloads, 0);
  assert.equal((await call("/api/config", TOKENS.shared)).status, 200);
  const reload = await call("/api/config/reload", TOKENS.shared, "POST");
  assert.equal(reload.status, 200);
  assert.equal(reload.body.outcome, "unchanged");
  assert.notEqual((await call("/api/status", TOKENS.shared)).body.config, null);
});

Deno.test("the daemon's health detail is the operator's: a token bound to an owner named local gets 403", async () => {
  await using home = await tempDir("svc-detail-local-owner-");
  const localToken = "local-owner-token-0123456789";
  await using daemon = await startTestDaemon(home.path, {
    auth: {
      ...DAEMON_AUTH,
      tokens: [...DAEMON_AUTH.tokens, { token: localToken, owner: "local" }],
    },
  });
  const detail = (token: string) =>
    fetch(`${daemon.url}/health/detail`, { headers: { authorization: `Bearer ${token}` } });
  const refused = await detail(localToken);
  assert.equal(refused.status, 403);
  assert.equal((await refused.json()).error.code, "forbidden");
  const operator = await detail(DAEMON_TOKENS.operator);
  assert.equal(operator.status, 200);
  assert.equal((await operator.json()).status, "ok");
});

Deno.test("a run in flight keeps the providers it started with; runs started after a reload get the new ones", async () => {
  await using home = await tempDir("svc-reload-run-");
  const file = `${home.path}/config.json`;
  await Deno.writeTextFile(file, JSON.stringify({}));
  await using services = await openServices({ home: home.path });
  const pinned = services.dispatcher.pinned?.();
  assert.ok(pinned);
  await Deno.writeTextFile(file, JSON.stringify({ providers: { extra: EXTRA_PROVIDER } }));
  assert.equal((await services.configuration.reload()).outcome, "reloaded");
  // What a run pinned at its start is unchanged; the host's dispatcher has the new provider.
  assert.deepEqual(pinned.providers(), ["fake"]);
  assert.deepEqual(services.dispatcher.providers().sort(), ["extra", "fake"]);
  assert.deepEqual(services.dispatcher.pinned?.().providers().sort(), ["extra", "fake"]);
  // A run started now routes on the new configuration: naming the new provider reaches it
  // (and fails there: nothing listens), instead of being an unknown provider.
  const caller = callerOf("local");
  const { run_id } = await services.runs.start({
    script: `return await agent("hi", {provider: "extra"});`,
  }, caller);
  const ended = await services.runs.wait(run_id, caller);
  const journal = JSON.stringify(await services.runs.journal(run_id, caller));
  assert.equal(ended.state, "succeeded");
  assert.doesNotMatch(journal, /unknown provider/);
  assert.match(journal, /extra/);
});

Deno.test("a run in flight when the configuration reloads ends on the providers it started with", async () => {
  await using home = await tempDir("svc-reload-inflight-");
  const file = `${home.path}/config.json`;
  const slowFake = { fake: { type: "fake", latency_ms: 1500 } };
  await Deno.writeTextFile(file, JSON.stringify({ providers: slowFake }));
  await using services = await openServices({ home: home.path });
  const caller = callerOf("local");
  const script = `log("started");
const first = await agent("first");
const second = await agent("second", {provider: "extra"});
return [first !== null, second !== null];`;
  const before = await services.runs.start({ script }, caller);
  // Reloaded while its first call takes its time: the run has started, and pinned its dispatcher.
  for (let i = 0; i < 200; i++) {
    const status = await services.runs.get(before.run_id, caller);
    if (JSON.stringify(status?.narration ?? []).includes("started")) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  await Deno.writeTextFile(
    file,
    JSON.stringify({ providers: { ...slowFake, extra: EXTRA_PROVIDER } }),
  );
  assert.equal((await services.configuration.reload()).outcome, "reloaded");
  await services.runs.wait(before.run_id, caller);
  // Its second call went to the dispatcher it started with, which has no `extra`.
  const old = JSON.stringify(await services.runs.journal(before.run_id, caller));
  assert.match(old, /unknown provider 'extra'/);
  // A run started after the reload reaches `extra` (which fails there: nothing listens).
  const after = await services.runs.start({ script }, caller);
  await services.runs.wait(after.run_id, caller);
  const now = JSON.stringify(await services.runs.journal(after.run_id, caller));
  assert.doesNotMatch(now, /unknown provider/);
});

Deno.test("a daemon takes reloaded notification endpoints and webhooks, and drops removed ones", async () => {
  await using home = await tempDir("svc-reload-daemon-");
  const file = `${home.path}/config.json`;
  await Deno.writeTextFile(file, "{}");
  await using services = await openServices({ home: home.path, role: "daemon" });
  const daemon = await startDaemon(services, { deliveryTickMs: 20, tickMs: 60_000 });
  try {
    assert.equal(daemon.notifications.state().mode, "off");
    assert.deepEqual(daemon.webhooks.counts().hooks, []);
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        notifications: {
          endpoints: { ops: { url: "http://127.0.0.1:9/hook", secret_env: "OPS_SECRET" } },
        },
        webhooks: { deploys: { secret_env: "HOOK_SECRET", prompt_template: "x" } },
      }),
    );
    assert.equal((await services.configuration.reload()).outcome, "reloaded");
    assert.deepEqual(daemon.webhooks.counts().hooks, ["deploys"]);
    await until(() => Promise.resolve(daemon.notifications.state().mode === "leader"));
    await Deno.writeTextFile(file, "{}");
    assert.equal((await services.configuration.reload()).outcome, "reloaded");
    assert.deepEqual(daemon.webhooks.counts().hooks, []);
    await until(() => Promise.resolve(daemon.notifications.state().mode === "off"));
  } finally {
    await daemon.stop();
  }
});

/** Reads the dashboard's token from the file it made in its data directory. */
async function tokenOf(home: string): Promise<string> {
  return (await Deno.readTextFile(`${home}/dashboard.token`)).trim();
}

/** Polls `check` until it returns true, for at most `ms`. */
async function until(
  check: () => Promise<boolean>,
  lines?: string[],
  ms = 20_000,
): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`it did not happen in time${lines ? `:\n${lines.join("\n")}` : ""}`);
}

Deno.test("a running svc dashboard takes an edited config.json by itself, refuses an invalid one, and reloads on SIGHUP, saying so on its terminal", async () => {
  await using home = await tempDir("svc-reload-proc-");
  const file = `${home.path}/config.json`;
  await Deno.writeTextFile(file, JSON.stringify({}));
  await using host = await startHostProcess(home.path, "dashboard");
  const token = await tokenOf(home.path);
  const get = async (path: string) => {
    const response = await fetch(`${host.url}${path}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return await response.json() as Record<string, unknown>;
  };
  // The operator's token acts as owner `local`, the default owner of the file's automations.
  const local = { cron: NIGHTLY.cron, dispatch: NIGHTLY.dispatch };
  await Deno.writeTextFile(file, JSON.stringify({ automations: { nightly: local } }));
  await until(
    async () =>
      names(await get("/api/automations"), "automations", "automation_id").includes(
        "config.nightly",
      ),
    host.lines,
  );
  await until(() =>
    Promise.resolve(
      host.lines.some((line) => /configuration reloaded from .* \(the file changed\)/.test(line)),
    )
  );
  // An invalid edit: refused, the old automation stays, the error is on the terminal and in the status.
  await Deno.writeTextFile(file, JSON.stringify({ automations: { nightly: { cron: 5 } } }));
  await until(async () => {
    const status = await get("/api/status");
    return typeof (status.config as { error: unknown }).error === "string";
  });
  assert.ok(
    host.lines.some((line) =>
      /configuration not reloaded \(the file changed\); the running one stays: Cannot read the configuration/
        .test(line)
    ),
  );
  assert.deepEqual(names(await get("/api/automations"), "automations", "automation_id"), [
    "config.nightly",
  ]);
  // SIGHUP reads it again (still invalid: refused again, said so), and does not stop the server.
  Deno.kill(host.pid, "SIGHUP");
  await until(() =>
    Promise.resolve(host.lines.some((line) => /configuration not reloaded \(SIGHUP\)/.test(line)))
  );
  const status = await get("/api/status");
  assert.equal(status.service, "svc");
  assert.equal(await host.stop(), 0);
});

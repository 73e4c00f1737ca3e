import assert from "node:assert/strict";
import { fixture, runCli, tempDir } from "./helpers.ts";

Deno.test("svc dispatch --wait prints the answer; without --wait it returns a task_id and a worker finishes it", async () => {
  await using home = await tempDir();
  const waited = await runCli(["dispatch", "hello there", "--wait", "--fake-dispatch"], {
    home: home.path,
  });
  assert.equal(waited.code, 0, waited.stderr);
  assert.equal(JSON.parse(waited.stdout), "fake response to: hello there");
  assert.match(waited.stderr, /svc: task task_\w+ succeeded on fake/);

  const queued = await runCli(["dispatch", "in the background", "--label", "bg"], {
    home: home.path,
  });
  assert.equal(queued.code, 0, queued.stderr);
  const { task_id, state } = JSON.parse(queued.stdout);
  assert.equal(state, "queued");
  let status:
    | {
      state: string;
      result?: string;
      events: Array<{ state: string; progress?: unknown[] }>;
      label: string;
    }
    | undefined;
  for (let i = 0; i < 100; i++) {
    const shown = await runCli(["task", "status", task_id], { home: home.path });
    assert.equal(shown.code, 0, shown.stderr);
    status = JSON.parse(shown.stdout);
    if (status!.state === "succeeded") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(status?.state, "succeeded");
  assert.equal(status?.result, "fake response to: in the background");
  // The state changes; the call's live output (progress events) comes between them.
  assert.deepEqual(
    status?.events.filter((e) => !e.progress).map((e) => e.state),
    ["queued", "running", "succeeded"],
  );
  const listed = JSON.parse((await runCli(["task", "list", "--json"], { home: home.path })).stdout);
  assert.deepEqual(listed.map((t: { label: string | null }) => t.label), ["bg", null]);
});

Deno.test("svc task cancel stops a task running in a worker process, and again changes nothing", async () => {
  await using home = await tempDir();
  const env = { SVC_FAKE_LATENCY_MS: "60000" };
  const queued = await runCli(["dispatch", "slow"], { home: home.path, env });
  const { task_id } = JSON.parse(queued.stdout);
  for (let i = 0; i < 100; i++) {
    const state =
      JSON.parse((await runCli(["task", "status", task_id], { home: home.path })).stdout).state;
    if (state === "running") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const cancelled = await runCli(["task", "cancel", task_id], { home: home.path });
  assert.equal(cancelled.code, 0, cancelled.stderr);
  assert.equal(JSON.parse(cancelled.stdout).state, "cancelled");
  const again = await runCli(["task", "cancel", task_id], { home: home.path });
  assert.equal(JSON.parse(again.stdout).state, "cancelled");
});

Deno.test("svc session new, list and show; a dispatch continues the session, a fake one leaves it alone", async () => {
  await using home = await tempDir();
  await Deno.writeTextFile(
    `${home.path}/config.json`,
    JSON.stringify({
      providers: { claude: { type: "claude", command: fixture("harness/claude") } },
    }),
  );
  const created = await runCli(["session", "new", "--name", "pair"], { home: home.path });
  assert.equal(created.code, 0, created.stderr);
  const session = JSON.parse(created.stdout);
  assert.match(session.session_id, /^ses_/);
  for (const prompt of ["first", "second"]) {
    const turn = await runCli([
      "dispatch",
      prompt,
      "--session",
      "pair",
      "--provider",
      "claude",
      "--wait",
    ], { home: home.path });
    assert.equal(turn.code, 0, turn.stderr);
  }
  const fake = await runCli(
    ["dispatch", "third", "--session", "pair", "--wait", "--fake-dispatch"],
    { home: home.path },
  );
  assert.equal(fake.code, 0, fake.stderr);
  const shown = JSON.parse((await runCli(["session", "show", "pair"], { home: home.path })).stdout);
  assert.equal(shown.turns, 2);
  assert.equal(shown.provider, "claude");
  assert.equal(shown.harness_session_id, "22222222-2222-4222-8222-222222222222");
  const contents = shown.messages.map((m: { content: string }) => m.content);
  assert.equal(contents.length, 4);
  assert.equal(contents[0], "first");
  assert.match(contents[1], /^claude-stub answer to: first \[.*resumed=none/);
  assert.equal(contents[2], "second");
  assert.match(
    contents[3],
    /^claude-stub answer to: second \[.*resumed=11111111-1111-4111-8111-111111111111/,
  );
  const listed = JSON.parse(
    (await runCli(["session", "list", "--json"], { home: home.path })).stdout,
  );
  assert.deepEqual(listed.map((s: { name: string }) => s.name), ["pair"]);
  const missing = await runCli(["session", "show", "nope"], { home: home.path });
  assert.equal(missing.code, 3);
  assert.match(missing.stderr, /^svc: Cannot find session 'nope': no such session$/m);
});

Deno.test("svc providers lists the configured providers with their availability", async () => {
  await using home = await tempDir();
  const none = await runCli(["providers"], { home: home.path });
  assert.match(none.stdout, /configuration: none \(embedded default: the fake provider only\)/);
  assert.match(none.stdout, /available\s+fake\s+fake/);
  await Deno.writeTextFile(
    `${home.path}/config.json`,
    JSON.stringify({
      providers: {
        claude: { type: "claude", command: "/nonexistent/claude", concurrency: 2 },
        api: {
          type: "openai",
          base_url: "http://127.0.0.1:9/v1",
          api_key_env: "SVC_TEST_NO_SUCH_KEY",
          model: "m",
        },
      },
    }),
  );
  const configured = await runCli(["providers", "--json"], { home: home.path });
  assert.equal(configured.code, 0, configured.stderr);
  const listed = JSON.parse(configured.stdout);
  assert.equal(listed.config, `${home.path}/config.json`);
  const byName = Object.fromEntries(listed.providers.map((p: { name: string }) => [p.name, p]));
  assert.equal(byName.api.available, false);
  assert.match(byName.api.reason, /SVC_TEST_NO_SUCH_KEY is not set/);
  assert.equal(byName.claude.available, false);
  assert.equal(byName.claude.concurrency, 2);
  await Deno.writeTextFile(
    `${home.path}/config.json`,
    JSON.stringify({ providers: { x: { type: "claude", concurrency: 0 } } }),
  );
  const bad = await runCli(["providers"], { home: home.path });
  assert.notEqual(bad.code, 0);
  assert.match(
    bad.stderr,
    /Cannot read the configuration .*config\.json: providers\.x\.concurrency: Too small/,
  );
});

Deno.test("svc history shows the calls of runs and tasks with their statistics", async () => {
  await using home = await tempDir();
  await runCli(["dispatch", "one", "--wait", "--fake-dispatch"], { home: home.path });
  await runCli(["workflow", "run", fixture("narrating.js"), "--args", '{"count": 2}'], {
    home: home.path,
  });
  const shown = await runCli(["history", "--limit", "10", "--json"], { home: home.path });
  assert.equal(shown.code, 0, shown.stderr);
  const { summary, calls } = JSON.parse(shown.stdout);
  assert.equal(calls.length, 3);
  assert.deepEqual(calls.map((c: { source: string }) => c.source).sort(), ["run", "run", "task"]);
  assert.equal(summary.calls, 3);
  assert.equal(summary.by_provider[0].provider, "fake");
  const bad = await runCli(["history", "--limit", "none"], { home: home.path });
  assert.equal(bad.code, 2);
});

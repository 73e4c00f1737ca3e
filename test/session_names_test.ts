/**
 * One rule for session names wherever one enters: HTTP, the tool protocol, A2A, the command line
 * and `agent()`. A name outside it is refused, naming the field, before anything is dispatched,
 * and no session is made; a good name still starts its session.
 */
import assert from "node:assert/strict";
import { SessionNameSchema } from "../src/schemas/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { connectHttp, errorText } from "./mcp_helpers.ts";
import {
  answerText,
  asTask,
  sdkClient,
  sendRequest,
  startA2a,
  userMessage,
} from "./a2a_helpers.ts";
import { countingDispatcher, fixture, LOCAL, runCli, tempDir, testManager } from "./helpers.ts";
import { recordingProvider } from "./providers.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { openLedger } from "../src/ledger/mod.ts";
import { SessionStore } from "../src/tasks/mod.ts";

/** Names each surface once let through: escape codes and a newline, `..`, spaces, too long, an option. */
const HOSTILE = [
  "\u001b[31mred\u001b[0m\nsecond line",
  "..",
  "has space",
  "a".repeat(129),
  "--upload-pack=touch /tmp/svc-pwned",
  "x".repeat(3000),
];

const ALICE = { owner: "alice" };

Deno.test("the rule of session names refuses every hostile name and accepts ids and plain names", () => {
  for (const name of HOSTILE) assert.equal(SessionNameSchema.safeParse(name).success, false, name);
  for (const name of ["pair", "ses_01jb2x9k7d0000000a", "v1.2_review-3", "a".repeat(128)]) {
    assert.equal(SessionNameSchema.safeParse(name).success, true, name);
  }
});

Deno.test("POST /api/dispatch and POST /api/sessions refuse a hostile session name with 400 naming 'session', before any spawn", async () => {
  const claude = recordingProvider("claude");
  await using d = await startDashboard({ providers: [claude] });
  for (const session of HOSTILE) {
    const dispatched = await d.json("/api/dispatch", {
      token: TOKENS.alice,
      body: { prompt: "hello", provider: "claude", session },
    });
    assert.equal(dispatched.status, 400, JSON.stringify(dispatched.body));
    const error = dispatched.body.error as { code: string; message: string };
    assert.equal(error.code, "invalid_request");
    assert.match(error.message, /'session' must /);
    assert.ok(!error.message.includes(session), "the refusal does not echo the name");
    const created = await d.json("/api/sessions", { token: TOKENS.alice, body: { name: session } });
    assert.equal(created.status, 400);
    assert.match((created.body.error as { message: string }).message, /'name' must /);
  }
  assert.equal(claude.requests.length, 0, "nothing was dispatched");
  assert.deepEqual(await d.services.sessions.list(ALICE), []);
  // The same request with a good name runs and makes its session: the counts above can move.
  const good = await d.json("/api/dispatch", {
    token: TOKENS.alice,
    body: { prompt: "hello", provider: "claude", session: "pair" },
  });
  assert.equal(good.status, 202, JSON.stringify(good.body));
  await d.services.tasks.wait(good.body.task_id as string, ALICE);
  assert.equal(claude.requests.length, 1);
  assert.deepEqual((await d.services.sessions.list(ALICE)).map((s) => s.name), ["pair"]);
});

Deno.test("the svc_dispatch tool refuses a hostile session name naming 'session', before any spawn", async () => {
  const claude = recordingProvider("claude");
  await using d = await startDashboard({ port: true, providers: [claude] });
  await using c = await connectHttp(d.url, { token: TOKENS.alice });
  for (const session of HOSTILE) {
    const result = await c.call("svc_dispatch", { prompt: "hello", provider: "claude", session });
    assert.equal(result.isError, true, JSON.stringify(result));
    assert.match(errorText(result), /Invalid arguments for tool svc_dispatch: session: must /);
  }
  assert.equal(claude.requests.length, 0);
  assert.deepEqual(await d.services.sessions.list(ALICE), []);
  assert.deepEqual(await d.services.tasks.list(ALICE), []);
});

Deno.test("an A2A context is refused naming 'contextId' when it holds control characters or is too long, and otherwise keys a session whose name keeps the rule", async () => {
  await using a2a = await startA2a();
  const client = await sdkClient(a2a.url, TOKENS.alice);
  let accepted = 0;
  for (const contextId of HOSTILE) {
    const send = client.sendMessage(sendRequest(userMessage("hello", { contextId })));
    // deno-lint-ignore no-control-regex
    if (/[\u0000-\u001f]/.test(contextId) || contextId.length > 256) {
      await assert.rejects(send, /'params\.message\.contextId' must /);
      continue;
    }
    const task = asTask(await send);
    assert.ok(answerText(task) !== undefined, JSON.stringify(task.status));
    accepted++;
  }
  assert.equal(accepted, 4);
  const names = (await a2a.services.sessions.list(ALICE)).map((s) => s.name!);
  assert.equal(names.length, accepted);
  for (const name of names) assert.ok(SessionNameSchema.safeParse(name).success, name);
});

Deno.test("svc dispatch --session refuses a hostile name naming 'session': the harness never starts and no session is made", async () => {
  await using home = await tempDir();
  const log = `${home.path}/spawns.log`;
  const stub = `${home.path}/claude`;
  // Records every start of the harness, then behaves as the stand-in does.
  await Deno.writeTextFile(
    stub,
    `#!/usr/bin/env bash\nprintf '%s\\n' "$*" >> '${log}'\nexec '${
      fixture("harness/claude")
    }' "$@"\n`,
  );
  await Deno.chmod(stub, 0o755);
  await Deno.writeTextFile(
    `${home.path}/config.json`,
    JSON.stringify({ providers: { claude: { type: "claude", command: stub } } }),
  );
  for (const session of [HOSTILE[0]!, HOSTILE[2]!, HOSTILE[4]!, HOSTILE[5]!]) {
    const result = await runCli(
      ["dispatch", "marker-prompt", "--session", session, "--provider", "claude", "--wait"],
      { home: home.path },
    );
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /Cannot dispatch: 'session' must /);
  }
  const spawns = await Deno.readTextFile(log).catch(() => "");
  assert.ok(!spawns.includes("marker-prompt"), spawns);
  const listed = await runCli(["session", "list", "--json"], { home: home.path });
  assert.deepEqual(JSON.parse(listed.stdout), []);
});

/** A script that calls `agent()` with each of `args.names` as its session, catching each throw. */
const SESSIONS_SCRIPT = `const out = [];
for (const session of args.names) {
  try { out.push(await agent("hello", { session })); } catch (e) { out.push(e.name + ": " + e.message); }
}
return out;`;

function assertRefused(result: unknown): void {
  assert.ok(Array.isArray(result), JSON.stringify(result));
  assert.equal(result.length, HOSTILE.length);
  for (const line of result) assert.match(line, /^TypeError: agent\(\): option 'session' must /);
}

Deno.test("agent() with a hostile session throws to the script before any dispatch", async () => {
  const dispatcher = countingDispatcher();
  await using t = await testManager({ dispatcher });
  const started = await t.manager.start(
    { script: SESSIONS_SCRIPT, args: { names: HOSTILE }, fake_dispatch: true },
    LOCAL,
  );
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assertRefused(status.result);
  assert.equal(dispatcher.count(), 0, "no call was dispatched");
});

Deno.test("svc workflow run --fake-dispatch: agent() with a hostile session throws, and no session is made", async () => {
  await using home = await tempDir();
  const script = `${home.path}/sessions.js`;
  await Deno.writeTextFile(script, SESSIONS_SCRIPT);
  const run = await runCli(
    ["workflow", "run", script, "--fake-dispatch", "--args", JSON.stringify({ names: HOSTILE })],
    { home: home.path, cwd: home.path },
  );
  assert.equal(run.code, 0, run.stderr);
  assertRefused(JSON.parse(run.stdout));
  const listed = await runCli(["session", "list", "--json"], { home: home.path });
  assert.deepEqual(JSON.parse(listed.stdout), []);
});

Deno.test("a session turn refuses a reference outside the rule before its provider is asked, whoever calls it", async () => {
  await using home = await tempDir();
  const ledger = await openLedger(home.path);
  try {
    const claude = recordingProvider("claude");
    const dispatcher = createDispatcher({ providers: [claude], fakeLatencyMs: 0 });
    const sessions = new SessionStore(ledger);
    for (const ref of HOSTILE) {
      const turn = sessions.dispatch(dispatcher, {
        prompt: "hello",
        options: { provider: "claude" },
        signal: new AbortController().signal,
      }, { owner: "alice", ref });
      await assert.rejects(turn, (error: unknown) => {
        assert.ok(error instanceof SvcError);
        assert.equal(error.code, "invalid_request");
        assert.match(error.message, /^Cannot continue the session: must /);
        return true;
      });
    }
    assert.equal(claude.requests.length, 0);
    assert.deepEqual(await sessions.list(ALICE), []);
  } finally {
    ledger.close();
  }
});

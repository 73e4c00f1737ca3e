/**
 * Version probes of the harness binaries: once per binary file (an upgrade is probed again),
 * shared while running, off a call's path (a slow version flag never fails a call), and named in
 * a failed call's error when it timed out; and terminal escape sequences of a tool's messages
 * never reach an error.
 */
import assert from "node:assert/strict";
import {
  ProbeCache,
  stripTerminalCodes,
  type VersionOutcome,
} from "../src/dispatch/harness/mod.ts";
import {
  claudeProvider,
  codexProvider,
  createDispatcher,
  geminiProvider,
  type HarnessOptions,
  opencodeProvider,
  type Provider,
} from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { callDir, harnessRequest, stub, type StubTool } from "./harness_helpers.ts";

const FACTORIES: Record<StubTool, (options: HarnessOptions) => Provider> = {
  claude: claudeProvider,
  codex: codexProvider,
  gemini: geminiProvider,
  opencode: opencodeProvider,
};

/** A Claude Code result line that answers `text`. */
const RESULT = (text: string) =>
  JSON.stringify({
    type: "result",
    subtype: "success",
    is_error: false,
    result: text,
    session_id: "s1",
    total_cost_usd: 0,
    usage: { input_tokens: 1, output_tokens: 1 },
  });

/** Writes an executable bash script into `dir` and returns its path. */
async function script(dir: string, name: string, body: string): Promise<string> {
  const path = `${dir}/${name}`;
  await Deno.writeTextFile(path, `#!/usr/bin/env bash\n${body}`);
  await Deno.chmod(path, 0o755);
  return path;
}

/** The SvcError `promise` rejects with. */
async function failureOf(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof SvcError, `expected an SvcError, got ${error}`);
    return error;
  }
  assert.fail("expected the call to fail");
}

Deno.test("a tool whose --version outlasts the probe's limit still takes calls, through the dispatcher", async () => {
  await using dir = await callDir();
  const tool = await script(
    dir.path,
    "claude",
    `if [ "$1" = --version ]; then exec sleep 5; fi\necho '${RESULT("slow but fine")}'\n`,
  );
  const provider = claudeProvider({ command: tool, probeTimeoutMs: 300 });
  const dispatcher = createDispatcher({ providers: [provider] });
  const started = Date.now();
  const outcome = await dispatcher.dispatch({
    prompt: "hi",
    options: { provider: "claude" },
    signal: new AbortController().signal,
    cwd: dir.path,
  });
  assert.equal(outcome.output, "slow but fine");
  assert.ok(Date.now() - started < 4_000, "the call waited for the version flag");
  // The probe itself ended at its limit, and says so without making the tool unavailable.
  const probed = await provider.probe!();
  assert.equal(probed.available, true);
  assert.equal(probed.version, undefined);
  assert.match(probed.reason, /--version did not answer within 300 ms/);
  const [status] = (await dispatcher.status()).filter((s) => s.name === "claude");
  assert.equal(status?.available, true);
});

Deno.test("a call waits for a slow version probe only briefly; the probe ends by itself", async () => {
  await using dir = await callDir();
  const tool = await script(
    dir.path,
    "claude",
    `if [ "$1" = --version ]; then sleep 4; echo '9.9.9 (Claude Code)'; exit 0; fi\necho '${
      RESULT("not held up")
    }'\n`,
  );
  const provider = claudeProvider({ command: tool, probeTimeoutMs: 10_000 });
  const dispatcher = createDispatcher({ providers: [provider] });
  const started = Date.now();
  const outcome = await dispatcher.dispatch({
    prompt: "hi",
    options: { provider: "claude" },
    signal: new AbortController().signal,
    cwd: dir.path,
  });
  const waited = Date.now() - started;
  assert.equal(outcome.output, "not held up");
  assert.ok(waited < 3_500, `the call waited ${waited} ms for the version probe`);
  // The listing waits for the same probe (no second one) and then knows the version.
  const status = (await dispatcher.status()).find((s) => s.name === "claude");
  assert.equal(status?.version, "9.9.9");
});

Deno.test("a call that fails after the tool's probe timed out says that the probe timed out", async () => {
  await using dir = await callDir();
  const tool = await script(
    dir.path,
    "claude",
    `if [ "$1" = --version ]; then exec sleep 5; fi\necho 'cannot reach the model' >&2\nexit 3\n`,
  );
  const provider = claudeProvider({ command: tool, probeTimeoutMs: 200 });
  assert.equal((await provider.probe!()).available, true);
  const error = await failureOf(provider.dispatch(harnessRequest("hi", { cwd: dir.path })));
  assert.equal(error.code, "provider_failed");
  assert.equal(
    error.message,
    `Cannot dispatch to claude: claude exited with code 3: cannot reach the model (svc's probe of the tool timed out too: ${tool} --version did not answer within 200 ms)`,
  );
});

Deno.test("a binary is probed once while it is unchanged, by every provider, and again once upgraded", async () => {
  await using dir = await callDir();
  const count = `${dir.path}/probes`;
  const body = (version: string) =>
    `if [ "$1" = --version ]; then echo x >> '${count}'; sleep 0.2; echo '${version} (Claude Code)'; fi\n`;
  const tool = await script(dir.path, "claude", body("1.0.0"));
  const providers = [
    claudeProvider({ command: tool }),
    claudeProvider({ name: "claude-2", command: tool }),
  ];
  const answers = await Promise.all(
    [...providers, ...providers, ...providers].map((p) => p.probe!()),
  );
  assert.deepEqual(new Set(answers.map((a) => a.version)), new Set(["1.0.0"]));
  assert.equal((await Deno.readTextFile(count)).trim().split("\n").length, 1);
  // An upgrade rewrites the file: another size and time, so another probe.
  await script(dir.path, "claude", body("1.10.0"));
  assert.equal((await providers[1]!.probe!()).version, "1.10.0");
  assert.equal((await providers[0]!.probe!()).version, "1.10.0");
  assert.equal((await Deno.readTextFile(count)).trim().split("\n").length, 2);
});

Deno.test("a binary whose version flag fails at once is unavailable to the first call already", async () => {
  await using dir = await callDir();
  const tool = await script(dir.path, "claude", `echo broken >&2\nexit 1\n`);
  const dispatcher = createDispatcher({ providers: [claudeProvider({ command: tool })] });
  const error = await failureOf(dispatcher.dispatch({
    prompt: "hi",
    options: { provider: "claude" },
    signal: new AbortController().signal,
  }));
  assert.equal(error.code, "unavailable");
  assert.match(error.message, /it is unavailable \(.*--version exited with code 1\)/);
});

Deno.test("ProbeCache: a probe still running is shared, and a call waits for it only as long as asked", async () => {
  await using dir = await callDir();
  const tool = await script(dir.path, "tool", "");
  const cache = new ProbeCache();
  let runs = 0;
  let finish: (outcome: VersionOutcome) => void = () => {};
  const run = () => {
    runs++;
    return new Promise<VersionOutcome>((resolve) => (finish = resolve));
  };
  assert.deepEqual(await cache.probe(tool, { run, waitMs: 10 }), { state: "probing", path: tool });
  const waiting = cache.probe(tool, { run });
  finish({ state: "answered", version: "2.0.0", line: "tool 2.0.0" });
  assert.deepEqual(await waiting, {
    state: "answered",
    version: "2.0.0",
    line: "tool 2.0.0",
    path: tool,
  });
  assert.equal(runs, 1);
});

Deno.test("ProbeCache: a timed-out probe is run again after the retry time, an answered one is not", async () => {
  await using dir = await callDir();
  const slow = await script(dir.path, "slow", "");
  const fast = await script(dir.path, "fast", "# another size\n");
  let now = 0;
  const cache = new ProbeCache({ retryMs: 1_000, now: () => now });
  const runs: string[] = [];
  const outcomes: VersionOutcome[] = [
    { state: "timed_out", reason: "slow --version did not answer within 30 s" },
    { state: "answered", version: "1.0.0", line: "1.0.0" },
  ];
  const run = (path: string) => {
    runs.push(path);
    return Promise.resolve<VersionOutcome>(
      path === slow ? outcomes.shift()! : { state: "answered", version: "2.0.0", line: "2.0.0" },
    );
  };
  assert.equal((await cache.probe(slow, { run })).state, "timed_out");
  assert.equal(await cache.timedOut(slow), "slow --version did not answer within 30 s");
  now = 999;
  assert.equal((await cache.probe(slow, { run })).state, "timed_out");
  now = 1_000;
  assert.equal((await cache.probe(slow, { run })).state, "answered");
  assert.equal(await cache.timedOut(slow), undefined);
  await cache.probe(fast, { run });
  now = 10_000;
  await cache.probe(fast, { run });
  assert.deepEqual(runs, [slow, slow, fast]);
});

for (const tool of ["claude", "codex", "gemini", "opencode"] as const) {
  Deno.test(`${tool}: a coloured error reaches the call's error without terminal escape sequences`, async () => {
    await using dir = await callDir();
    const error = await failureOf(
      FACTORIES[tool]({ command: stub(tool) }).dispatch(
        harnessRequest("STUB_COLOUR", { cwd: dir.path }),
      ),
    );
    assert.equal(error.code, "provider_failed");
    assert.match(error.message, /\u2716 Error: quota exceeded for the project/);
    // deno-lint-ignore no-control-regex -- the point is that none is left
    assert.doesNotMatch(error.message, /[\u0000-\u001f\u007f-\u009f]/);
  });
}

Deno.test("an error the tool reports in its output, and its version line, lose their colours too", async () => {
  await using dir = await callDir();
  const reported = JSON.stringify({
    type: "result",
    subtype: "error_during_execution",
    is_error: true,
    result: "\x1b[1;31mAPI Error:\x1b[0m overloaded\x1b]0;claude\x07",
    session_id: "s1",
  });
  const tool = await script(
    dir.path,
    "claude",
    `if [ "$1" = --version ]; then printf '\\033[1m3.1.4\\033[0m (Claude Code)\\n'; exit 0; fi\necho '${reported}'\nexit 1\n`,
  );
  const provider = claudeProvider({ command: tool });
  const probed = await provider.probe!();
  assert.equal(probed.version, "3.1.4");
  assert.equal(probed.reason, `found ${tool}: 3.1.4 (Claude Code)`);
  const error = await failureOf(provider.dispatch(harnessRequest("hi", { cwd: dir.path })));
  assert.equal(
    error.message,
    "Cannot dispatch to claude: claude reported an error: API Error: overloaded error_during_execution (it exited with code 1)",
  );
});

Deno.test("stripTerminalCodes() removes CSI, OSC, string and two-character escapes and control characters", () => {
  assert.equal(
    stripTerminalCodes(
      "\x1b[31mred\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1bPq#0\x1b\\\x1b7\x1bc\x9b1mbold\r\b\x00end\ttab\nline",
    ),
    "red link boldend\ttab\nline",
  );
  assert.equal(stripTerminalCodes("plain – ünïcode"), "plain – ünïcode");
});

/**
 * What every harness provider does the same way, proved against each tool's stand-in: skipping
 * malformed lines, failing clearly (malformed output, not authenticated, non-zero exit, timeout),
 * killing the whole process group on abort, probing; and a real workflow run through a harness.
 */
import assert from "node:assert/strict";
import { redact } from "../src/dispatch/harness/mod.ts";
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
import {
  assertAllGone,
  callDir,
  FAKE_KEY,
  harnessRequest,
  killAll,
  stub,
  type StubTool,
} from "./harness_helpers.ts";
import { LOCAL, tempDir, testManager } from "./helpers.ts";

const FACTORIES: Record<StubTool, (options: HarnessOptions) => Provider> = {
  claude: claudeProvider,
  codex: codexProvider,
  gemini: geminiProvider,
  opencode: opencodeProvider,
};

/** What each tool's stand-in answers, and how its failures must read. */
const EXPECT: Record<StubTool, { answer: string; exit: RegExp; version: string }> = {
  claude: {
    answer: "claude-stub answer to: ",
    exit:
      /^Cannot dispatch to claude: claude exited with code 3: stub: starting \| Error: simulated failure \(request sent with x-api-key \[redacted\]\)$/,
    version: "2.0.14",
  },
  codex: {
    answer: "codex-stub answer to: ",
    exit:
      // Codex's stack backtrace is left out.
      /^Cannot dispatch to codex: codex exited with code 1: WARNING: proceeding, even though we could not create PATH aliases \| Error: simulated failure \(Authorization: Bearer \[redacted\]\)$/,
    version: "0.46.0",
  },
  gemini: {
    answer: "gemini-stub answer to: ",
    exit:
      /^Cannot dispatch to gemini: gemini reported an error: Error: \[API Error: simulated failure \(request sent with key=\[redacted\]\)\] \(it exited with code 1\)$/,
    version: "0.9.0",
  },
  opencode: {
    answer: "opencode-stub answer to: ",
    exit:
      /^Cannot dispatch to opencode: opencode exited with code 1: .*starting \| Error: simulated failure \(OPENAI_API_KEY=\[redacted\]\)$/,
    version: "0.15.2",
  },
};

const AUTH_HINTS: Record<StubTool, string> = {
  claude: "run `claude` and /login, or set ANTHROPIC_API_KEY",
  codex: "run `codex login`, or set CODEX_API_KEY",
  gemini: "set GEMINI_API_KEY, or run `gemini` once and choose how to log in",
  opencode: "run `opencode auth login` for the model's provider",
};

function provider(tool: StubTool, options: HarnessOptions = {}): Provider {
  return FACTORIES[tool]({ command: stub(tool), ...options });
}

/** Asserts an SvcError with this code whose message matches. */
function svcError(code: string, message: RegExp | string) {
  return (error: unknown) => {
    assert.ok(error instanceof SvcError, `expected an SvcError, got ${error}`);
    assert.equal(error.code, code);
    if (typeof message === "string") assert.equal(error.message, message);
    else assert.match(error.message, message);
    assert.ok(!error.message.includes(FAKE_KEY), "no credential in the message");
    return true;
  };
}

for (const tool of Object.keys(FACTORIES) as StubTool[]) {
  Deno.test(`${tool}: a malformed output line is skipped and the call still succeeds`, async () => {
    await using dir = await callDir();
    const result = await provider(tool).dispatch(
      harnessRequest("STUB_MALFORMED please", { cwd: dir.path }),
    );
    assert.equal(typeof result.output, "string");
    assert.ok(String(result.output).startsWith(`${EXPECT[tool].answer}STUB_MALFORMED please`));
    assert.equal(result.provider, tool);
  });

  Deno.test(`${tool}: output that never brings a final result fails as malformed`, async () => {
    await using dir = await callDir();
    await assert.rejects(
      provider(tool).dispatch(harnessRequest("STUB_NO_RESULT", { cwd: dir.path })),
      svcError(
        "provider_failed",
        new RegExp(
          `^Cannot dispatch to ${tool}: the output of ${tool} was malformed: no final result \\(\\d+ malformed lines? skipped\\)$`,
        ),
      ),
    );
  });

  Deno.test(`${tool}: an authentication failure says the provider is not authenticated`, async () => {
    await using dir = await callDir();
    const named = provider(tool, { name: `${tool}-work` });
    await assert.rejects(
      named.dispatch(harnessRequest("STUB_AUTH", { cwd: dir.path })),
      svcError(
        "provider_unauthenticated",
        `Cannot dispatch to ${tool}-work: not authenticated (${AUTH_HINTS[tool]})`,
      ),
    );
  });

  Deno.test(`${tool}: a non-zero exit fails with the end of stderr, credentials redacted`, async () => {
    await using dir = await callDir();
    await assert.rejects(
      provider(tool).dispatch(harnessRequest("STUB_FAIL", { cwd: dir.path })),
      svcError("provider_failed", EXPECT[tool].exit),
    );
  });

  Deno.test(`${tool}: aborting a hung call kills its whole process group and rejects with the reason`, async () => {
    await using dir = await callDir();
    const controller = new AbortController();
    const pending = provider(tool).dispatch(
      harnessRequest("STUB_HANG", { cwd: dir.path, signal: controller.signal }),
    );
    let pids: number[] = [];
    try {
      pids = await dir.pids();
      const reason = new Error("the run stopped");
      controller.abort(reason);
      await assert.rejects(pending, (error) => error === reason);
      await assertAllGone(pids);
    } finally {
      controller.abort();
      await pending.catch(() => {});
      killAll(pids);
    }
  });

  Deno.test(`${tool}: a hung call times out with a clear error and its process group is killed`, async () => {
    await using dir = await callDir();
    const pending = provider(tool, { timeoutMs: 1000 }).dispatch(
      harnessRequest("STUB_HANG", { cwd: dir.path }),
    );
    let pids: number[] = [];
    try {
      pids = await dir.pids();
      await assert.rejects(
        pending,
        svcError(
          "provider_timeout",
          `Cannot dispatch to ${tool}: ${tool} gave no answer within 1 s (its processes were killed)`,
        ),
      );
      await assertAllGone(pids);
    } finally {
      await pending.catch(() => {});
      killAll(pids);
    }
  });

  Deno.test(`${tool}: probe() finds the binary and reports its version`, async () => {
    const availability = await provider(tool).probe!();
    assert.equal(availability.available, true, availability.reason);
    assert.equal(availability.version, EXPECT[tool].version);
    assert.match(availability.reason, new RegExp(`^found ${stub(tool)}: `));
  });

  Deno.test(`${tool}: probe() reports a missing binary as unavailable, and dispatch refuses`, async () => {
    const onPath = FACTORIES[tool]({ command: `svc-no-such-${tool}` });
    assert.deepEqual(await onPath.probe!(), {
      available: false,
      reason: `svc-no-such-${tool} not found on PATH`,
    });
    const missing = FACTORIES[tool]({ command: `/nonexistent/${tool}` });
    assert.deepEqual(await missing.probe!(), {
      available: false,
      reason: `/nonexistent/${tool} does not exist`,
    });
    await assert.rejects(
      missing.dispatch(harnessRequest("hello")),
      svcError(
        "provider_failed",
        `Cannot dispatch to ${tool}: /nonexistent/${tool} does not exist`,
      ),
    );
  });
}

Deno.test("redact() removes API keys, bearer tokens and named secrets, and keeps the rest", () => {
  assert.equal(
    redact(
      `key ${FAKE_KEY}; Authorization: Bearer abc.def-ghi_jkl; {"api_key": "0123456789abcdef"} AIzaSyA1234567890abcdefghijklmnopqrstu`,
    ),
    `key [redacted]; Authorization: Bearer [redacted]; {"api_key": "[redacted]"} [redacted]`,
  );
  assert.equal(
    redact("input_tokens=123456789 exited with code 1"),
    "input_tokens=123456789 exited with code 1",
  );
});

Deno.test("probe() reports a binary whose version flag fails, with its exit code", async () => {
  await using dir = await callDir();
  const failing = `${dir.path}/claude`;
  await Deno.writeTextFile(failing, "#!/usr/bin/env bash\necho 'no such flag' >&2\nexit 1\n");
  await Deno.chmod(failing, 0o755);
  assert.deepEqual(await claudeProvider({ command: failing }).probe!(), {
    available: false,
    reason: `${failing} --version exited with code 1`,
  });
});

Deno.test("a tool that exits while a leftover child still holds its output answers after a short grace", async () => {
  await using dir = await callDir();
  const tool = `${dir.path}/claude`;
  await Deno.writeTextFile(
    tool,
    `#!/usr/bin/env bash
sleep 30 &
echo $! > leftover_pid
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2}}'
exit 0
`,
  );
  await Deno.chmod(tool, 0o755);
  const started = Date.now();
  try {
    const result = await claudeProvider({ command: tool }).dispatch(
      harnessRequest("hi", { cwd: dir.path }),
    );
    assert.equal(result.output, "done");
    assert.equal(result.cost_usd, 0.5);
    assert.ok(Date.now() - started < 10_000);
  } finally {
    const leftover = Number(await Deno.readTextFile(`${dir.path}/leftover_pid`).catch(() => "0"));
    if (leftover > 0) killAll([leftover]);
  }
});

Deno.test("an aborted signal stops the call before any process starts", async () => {
  await using dir = await callDir();
  const controller = new AbortController();
  const reason = new Error("too late");
  controller.abort(reason);
  await assert.rejects(
    claudeProvider({ command: stub("claude") }).dispatch(
      harnessRequest("hello", { cwd: dir.path, signal: controller.signal }),
    ),
    (error) => error === reason,
  );
  await assert.rejects(dir.argv(), Deno.errors.NotFound, "the stub never ran");
});

Deno.test("a workflow's agent() calls go to the claude harness; the journal shows its provider, usage and cost", async () => {
  await using scratch = await tempDir("svc-scratch-");
  await using t = await testManager({
    dispatcher: createDispatcher({
      providers: [claudeProvider({ command: stub("claude"), scratchRoot: scratch.path })],
    }),
  });
  const started = await t.manager.start({
    script: [
      `const colour = await agent("Name a colour", { provider: "claude", label: "colour" });`,
      `const fruit = await agent("Name a fruit", { provider: "claude", label: "fruit" });`,
      `return { colour, fruit };`,
    ].join("\n"),
  }, LOCAL);
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const result = status.result as { colour: string; fruit: string };
  assert.match(result.colour, /^claude-stub answer to: Name a colour \[model=claude-sonnet-4-5/);
  assert.match(result.fruit, /^claude-stub answer to: Name a fruit \[/);
  assert.match(result.fruit, /permission=default denied=Bash,Edit,Write,NotebookEdit/);

  const journal = await t.manager.journal(started.run_id, LOCAL);
  assert.deepEqual(
    journal.map((e) => [e.label, e.outcome, e.provider, e.model, e.usage, e.cost_usd]),
    [
      ["colour", "live", "claude", "claude-sonnet-4-5-20250929", {
        input_tokens: 312,
        output_tokens: 34,
      }, 0.0123],
      ["fruit", "live", "claude", "claude-sonnet-4-5-20250929", {
        input_tokens: 312,
        output_tokens: 34,
      }, 0.0123],
    ],
  );
  assert.deepEqual(
    [status.journal.usage.input_tokens, status.journal.usage.output_tokens],
    [624, 68],
  );
  assert.ok(Math.abs((status.journal.usage.cost_usd ?? 0) - 0.0246) < 1e-9);
});

Deno.test("a harness failure inside a workflow fails the call with the provider's message", async () => {
  await using scratch = await tempDir("svc-scratch-");
  await using t = await testManager({
    dispatcher: createDispatcher({
      providers: [codexProvider({ command: stub("codex"), scratchRoot: scratch.path })],
    }),
  });
  const started = await t.manager.start({
    script: `return await agent("STUB_AUTH", { provider: "codex" });`,
  }, LOCAL);
  const status = await t.manager.wait(started.run_id, LOCAL);
  assert.equal(status.state, "succeeded", "a failed call returns null to the script");
  assert.equal(status.result, null);
  const journal = await t.manager.journal(started.run_id, LOCAL);
  assert.equal(journal[0]?.outcome, "failed");
  assert.equal(
    journal[0]?.reason,
    "Cannot dispatch to codex: not authenticated (run `codex login`, or set CODEX_API_KEY)",
  );
});

/**
 * What a workflow script cannot make a harness do, proved against each tool's stand-in (which
 * parses its command line with the real tool's parser): no script value is read as an option,
 * the tool sees only its allow-listed environment, prompts of any length arrive, calls without
 * a working directory run in a fresh scratch directory, and secrets are redacted from errors.
 */
import assert from "node:assert/strict";
import { scratchOwner } from "../src/scratch/mod.ts";
import {
  CLAUDE,
  claudeProvider,
  CODEX,
  codexProvider,
  GEMINI,
  geminiProvider,
  type HarnessCall,
  type HarnessOptions,
  type HarnessTool,
  OPENCODE,
  opencodeProvider,
} from "../src/dispatch/harness/mod.ts";
import { createDispatcher, type Provider } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { callDir, harnessRequest, stub, type StubTool } from "./harness_helpers.ts";
import { LOCAL, runCli, tempDir, testManager } from "./helpers.ts";

const TOOLS: Record<StubTool, { tool: HarnessTool; factory: (o: HarnessOptions) => Provider }> = {
  claude: { tool: CLAUDE, factory: claudeProvider },
  codex: { tool: CODEX, factory: codexProvider },
  gemini: { tool: GEMINI, factory: geminiProvider },
  opencode: { tool: OPENCODE, factory: opencodeProvider },
};
const NAMES = Object.keys(TOOLS) as StubTool[];

/** Options a tool may see set: the ones svc passes. Anything else was injected. */
const SVC_OPTIONS: Record<StubTool, string[]> = {
  claude: [
    "print",
    "outputFormat",
    "verbose",
    "model",
    "resume",
    "permissionMode",
    "disallowedTools",
  ],
  codex: ["json", "skip-git-repo-check", "model", "sandbox", "config"],
  gemini: ["outputFormat", "model", "approvalMode", "resume"],
  opencode: ["format", "title", "model", "session"],
};

/** Values that are dangerous options of one tool or another. */
const HOSTILE = [
  "--dir=/",
  "--file=/etc/passwd",
  "--continue",
  "--share",
  "--auto",
  "--add-dir=/",
  "--cd=/",
  "-C/",
  "--settings={}",
  "--mcp-config=/tmp/evil.json",
  "--include-directories=/",
  "--extensions=evil",
  "--dangerously-skip-permissions",
  "--yolo",
];

/** Runs a stand-in directly with `args`, the prompt on standard input, in `cwd`. */
async function runStandIn(name: StubTool, args: string[], cwd: string) {
  const child = new Deno.Command(stub(name), {
    args,
    cwd,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode("hello"));
  await writer.close();
  const output = await child.output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

function call(overrides: Partial<HarnessCall>): HarnessCall {
  return { provider: "p", prompt: "hello", sandbox: "read-only", extraArgs: [], ...overrides };
}

/** The value the stand-in's parser gave an option (clap's are lists). */
function single(value: unknown): unknown {
  return Array.isArray(value) && value.length === 1 ? value[0] : value;
}

for (const name of NAMES) {
  Deno.test(`${name}: the command line svc builds passes a hostile model and session id as values, never as options`, async () => {
    for (const hostile of HOSTILE) {
      for (const resumeSession of [undefined, `${hostile}-session`]) {
        await using dir = await callDir();
        const args = TOOLS[name].tool.args(
          call({ model: hostile, ...(resumeSession ? { resumeSession } : {}) }),
        );
        const result = await runStandIn(name, args, dir.path);
        const what = `${name} ${JSON.stringify(args)}`;
        assert.equal(result.code, 0, `${what}: ${result.stderr}`);
        const parsed = JSON.parse(await Deno.readTextFile(`${dir.path}/stub_parsed.json`));
        const options = parsed.options as Record<string, unknown>;
        assert.equal(single(options.model), hostile, what);
        const injected = Object.keys(options).filter((key) => !SVC_OPTIONS[name].includes(key));
        assert.deepEqual(injected, [], `${what}: options injected`);
        if (resumeSession) {
          const session = name === "codex"
            ? parsed.positionals[0]
            : single(options[name === "opencode" ? "session" : "resume"]);
          assert.equal(session, resumeSession, what);
        }
        assert.match(result.stdout, new RegExp(`cwd=${dir.path}\\]`), `${what}: ran elsewhere`);
      }
    }
  });

  Deno.test(`${name}: a model or session id that starts with '-' is refused before the tool starts`, async () => {
    const provider = TOOLS[name].factory({ command: stub(name) });
    for (
      const request of [
        { model: "--dir=/x" },
        { options: { model: "-C/" } },
        {
          resumeSession: "--continue",
        },
        { model: "a\nb" },
        { model: "m".repeat(257) },
      ]
    ) {
      await using dir = await callDir();
      await assert.rejects(
        provider.dispatch(harnessRequest("hi", { cwd: dir.path, ...request })),
        (error: unknown) => {
          assert.ok(error instanceof SvcError);
          assert.equal(error.code, "invalid_request");
          assert.match(
            error.message,
            new RegExp(`^Cannot dispatch to ${name}: the (model|session id) ".*" is refused: `),
          );
          assert.ok(error.message.length < 200, "the value is clipped");
          return true;
        },
      );
      await assert.rejects(dir.argv(), Deno.errors.NotFound, "the tool never started");
    }
    await using dir = await callDir();
    const dashInside = await provider.dispatch(
      harnessRequest("hi", { cwd: dir.path, model: "provider/model-with-dashes" }),
    );
    assert.match(String(dashInside.output), /model=provider\/model-with-dashes /);
  });

  Deno.test(`${name}: the tool sees only PATH, HOME, locale and the like, its key variables and configured values`, async () => {
    const saved = new Map<string, string | undefined>();
    const keyVar = TOOLS[name].tool.keyEnv[0]!;
    const host: Record<string, string> = {
      AWS_SECRET_ACCESS_KEY: "aws-secret-value-1234567890",
      SVC_TEST_OTHER_PROVIDER_KEY: "other-provider-key-1234567890",
      [keyVar]: "own-key-value-1234567890",
      LC_PAPER: "C",
    };
    for (const [key, value] of Object.entries(host)) {
      saved.set(key, Deno.env.get(key));
      Deno.env.set(key, value);
    }
    try {
      await using dir = await callDir();
      const result = await TOOLS[name].factory({
        command: stub(name),
        env: { SVC_TEST_FIXED: "fixed" },
      }).dispatch(harnessRequest("STUB_ENV", { cwd: dir.path }));
      const env = JSON.parse(/ env=(\{.*\})/.exec(String(result.output))![1]!);
      assert.equal(env.AWS_SECRET_ACCESS_KEY, undefined, "cloud credentials are not passed");
      assert.equal(env.SVC_TEST_OTHER_PROVIDER_KEY, undefined, "other variables are not passed");
      assert.equal(env[keyVar], "own-key-value-1234567890", "the tool's own key is passed");
      assert.equal(env.SVC_TEST_FIXED, "fixed", "configured values are set");
      assert.equal(env.PATH, Deno.env.get("PATH"));
      assert.equal(env.HOME, Deno.env.get("HOME"));
      assert.equal(env.LC_PAPER, "C");

      await using other = await callDir();
      const named = await TOOLS[name].factory({ command: stub(name), passEnv: ["LC_PAPER"] })
        .dispatch(harnessRequest("STUB_ENV", { cwd: other.path }));
      const narrowed = JSON.parse(/ env=(\{.*\})/.exec(String(named.output))![1]!);
      assert.equal(narrowed[keyVar], undefined, "pass_env replaces the default key list");
    } finally {
      for (const [key, value] of saved) {
        if (value === undefined) Deno.env.delete(key);
        else Deno.env.set(key, value);
      }
    }
  });

  Deno.test(`${name}: a 300 KiB prompt reaches the tool whole`, async () => {
    await using dir = await callDir();
    const prompt = `${"x".repeat(300 * 1024)} END-OF-PROMPT-MARKER`;
    const result = await TOOLS[name].factory({ command: stub(name) }).dispatch(
      harnessRequest(prompt, { cwd: dir.path }),
    );
    assert.ok(String(result.output).includes(`${"x".repeat(1000)} END-OF-PROMPT-MARKER [`));
  });

  Deno.test(`${name}: a call without a working directory runs in a fresh empty scratch directory, removed afterwards`, async () => {
    await using root = await tempDir("svc-scratch-");
    const provider = TOOLS[name].factory({ command: stub(name), scratchRoot: root.path });
    const result = await provider.dispatch(harnessRequest("STUB_LS"));
    const ran = new RegExp(`cwd=(${root.path}/call-[^\\]]+)\\]`).exec(String(result.output));
    assert.ok(ran, `ran in ${String(result.output).slice(-200)}`);
    assert.equal(
      scratchOwner(ran[1]!.slice(root.path.length + 1))?.pid,
      Deno.pid,
      "named after its host, so that the next host removes it should this one die",
    );
    assert.match(String(result.output), / ls=\[\]$/, "the directory was empty");
    assert.deepEqual([...Deno.readDirSync(root.path)], [], "and is gone");
  });
}

Deno.test("the turns of a session without a working directory share one kept directory", async () => {
  await using root = await tempDir("svc-scratch-");
  const provider = claudeProvider({
    command: stub("claude"),
    scratchRoot: `${root.path}/tmp`,
    sessionRoot: root.path,
  });
  const first = await provider.dispatch(harnessRequest("hi", { options: { session: "review" } }));
  const second = await provider.dispatch(
    harnessRequest("again", { options: { session: "review" } }),
  );
  const dirOf = (output: unknown) => /cwd=([^\]]+)\]/.exec(String(output))?.[1];
  assert.match(dirOf(first.output) ?? "", new RegExp(`^${root.path}/session-[0-9a-f]{32}$`));
  assert.equal(dirOf(second.output), dirOf(first.output));
  const other = await provider.dispatch(harnessRequest("hi", { options: { session: "other" } }));
  assert.notEqual(dirOf(other.output), dirOf(first.output));
});

Deno.test("deno task svc grants the harness environment: the tool gets its key, never the host's other secrets", async () => {
  await using home = await tempDir();
  await Deno.writeTextFile(
    `${home.path}/config.json`,
    JSON.stringify({
      providers: {
        claude: { type: "claude", command: stub("claude"), env: { SVC_TEST_FIXED: "on" } },
      },
    }),
  );
  const result = await runCli(["dispatch", "STUB_ENV", "--provider", "claude", "--wait"], {
    home: home.path,
    env: {
      ANTHROPIC_API_KEY: "own-key-value-1234567890",
      AWS_SECRET_ACCESS_KEY: "aws-secret-value-1234567890",
      OPENAI_API_KEY: "other-provider-key-1234567890",
      LC_PAPER: "C",
    },
  });
  assert.equal(result.code, 0, result.stderr);
  const answer = String(JSON.parse(result.stdout));
  const env = JSON.parse(/ env=(\{.*\})$/.exec(answer)?.[1] ?? "null");
  assert.ok(env, answer);
  assert.equal(env.ANTHROPIC_API_KEY, "own-key-value-1234567890");
  assert.equal(env.SVC_TEST_FIXED, "on");
  assert.equal(env.LC_PAPER, "C");
  assert.equal(env.AWS_SECRET_ACCESS_KEY, undefined);
  assert.equal(env.OPENAI_API_KEY, undefined);
  assert.match(
    /cwd=([^\]]+)\]/.exec(answer)?.[1] ?? "",
    new RegExp(`^${home.path}/tmp/call-`),
    "the call ran under $SVC_HOME/tmp",
  );
});

Deno.test("calls a harness refuses for what the script asked never make the provider look failing", async () => {
  const dispatcher = createDispatcher({
    providers: [claudeProvider({ command: stub("claude") })],
    availability: { window: 4, failureRate: 0.5 },
  });
  const signal = new AbortController().signal;
  for (let i = 0; i < 10; i++) {
    await assert.rejects(
      dispatcher.dispatch({
        prompt: "x",
        options: { provider: "claude", model: "--dir=/" },
        signal,
      }),
      (error: unknown) => error instanceof SvcError && error.code === "invalid_request",
    );
  }
  const [, claude] = await dispatcher.status();
  assert.equal(claude?.name, "claude");
  assert.equal(claude?.available, true, claude?.reason);
});

Deno.test("a harness call that fails after spending tokens is paid for: its usage counts against the budget", async () => {
  await using root = await tempDir("svc-scratch-");
  await using t = await testManager({
    dispatcher: createDispatcher({
      providers: [claudeProvider({ command: stub("claude"), scratchRoot: root.path })],
    }),
  });
  const run = await t.manager.start({
    script: `const a = await agent("STUB_MAX_TURNS", { provider: "claude" });
      const b = await agent("never sent", { provider: "claude" });
      return [a, b];`,
    budget_tokens: 300,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, [null, null]);
  const [failed] = await t.manager.journal(run.run_id, LOCAL);
  assert.equal(failed?.outcome, "failed");
  assert.deepEqual(failed?.usage, { input_tokens: 312, output_tokens: 34 });
  assert.equal(failed?.cost_usd, 0.0456);
  assert.equal(status.budget.spent, 346, "the failed call's tokens count");
  assert.ok(status.conditions.some((c) => c.type === "BudgetExceeded"), "so the next is refused");
});

/** The opencode provider against its stand-in: command line, permissions, step events. */
import assert from "node:assert/strict";
import { opencodeProvider, SpentFailure } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { callDir, harnessRequest, stub } from "./harness_helpers.ts";

Deno.test("opencode: a call returns the last step's text, summed cost and tokens, and the session id", async () => {
  await using dir = await callDir();
  const provider = opencodeProvider({ command: stub("opencode") });
  assert.equal(provider.name, "opencode");
  const result = await provider.dispatch(
    harnessRequest("Review the diff", { cwd: dir.path, model: "anthropic/claude-sonnet-4-5" }),
  );
  const permission = JSON.stringify({
    edit: "deny",
    bash: "deny",
    webfetch: "deny",
    external_directory: "deny",
  });
  assert.deepEqual(result, {
    output:
      `opencode-stub answer to: Review the diff [model=anthropic/claude-sonnet-4-5 permission=${permission} resumed=none cwd=${dir.path}]`,
    // input with cache reads and writes; output with reasoning; both steps
    usage: { input_tokens: 100 + 50 + 10 + 200 + 150, output_tokens: 20 + 5 + 40 },
    cost_usd: 0.003,
    provider: "opencode",
    model: "anthropic/claude-sonnet-4-5",
    session_id: "ses_6f1c2b3a4d5e6f7a8b9c0d1e2f",
  });
  assert.deepEqual(await dir.argv(), [
    "run",
    "--format",
    "json",
    "--title=",
    "--model=anthropic/claude-sonnet-4-5",
  ]);
});

Deno.test("opencode: the prompt goes on standard input and arrives unchanged", async () => {
  await using dir = await callDir();
  const prompt = '42 "quoted" words\n-a line starting with a dash\n';
  const result = await opencodeProvider({ command: stub("opencode") }).dispatch(
    harnessRequest(prompt, { cwd: dir.path }),
  );
  assert.ok(String(result.output).startsWith(`opencode-stub answer to: ${prompt.trimEnd()} [`));
  assert.deepEqual(await dir.argv(), ["run", "--format", "json", "--title="]);
});

Deno.test("opencode: each sandbox level becomes OPENCODE_PERMISSION", async () => {
  const provider = opencodeProvider({ command: stub("opencode") });
  const expected = {
    "read-only": { edit: "deny", bash: "deny", webfetch: "deny", external_directory: "deny" },
    write: { edit: "allow", bash: "deny", webfetch: "deny", external_directory: "deny" },
    full: { edit: "allow", bash: "allow", webfetch: "allow", external_directory: "allow" },
  };
  for (const sandbox of ["read-only", "write", "full"] as const) {
    await using dir = await callDir();
    const result = await provider.dispatch(harnessRequest("hi", { cwd: dir.path, sandbox }));
    const seen = /permission=(\{[^}]*\})/.exec(String(result.output))?.[1];
    assert.deepEqual(JSON.parse(seen ?? "null"), expected[sandbox]);
  }
});

Deno.test("opencode: resuming passes --session=<id> and keeps that session", async () => {
  await using dir = await callDir();
  const result = await opencodeProvider({ command: stub("opencode") }).dispatch(
    harnessRequest("Go on", { cwd: dir.path, resumeSession: "ses_earlier0001" }),
  );
  assert.equal(result.session_id, "ses_earlier0001");
  assert.match(String(result.output), /resumed=ses_earlier0001 /);
  assert.deepEqual(await dir.argv(), [
    "run",
    "--format",
    "json",
    "--session=ses_earlier0001",
  ]);
});

Deno.test("opencode: a run stopped by a rejected tool call fails, says why, and is paid for", async () => {
  await using dir = await callDir();
  const provider = opencodeProvider({ command: stub("opencode") });
  await assert.rejects(
    provider.dispatch(harnessRequest("STUB_REJECTED", { cwd: dir.path, sandbox: "write" })),
    (error: unknown) => {
      assert.ok(error instanceof SpentFailure, String(error));
      assert.equal(error.code, "provider_failed");
      assert.match(
        error.message,
        /stopped after a tool call, before the model answered: permission requested: external_directory \(\/elsewhere\/\*\); auto-rejecting/,
      );
      assert.ok(!error.message.includes("\u001b"), "no terminal escapes");
      assert.deepEqual(error.usage, { input_tokens: 100, output_tokens: 20 });
      assert.equal(error.cost_usd, 0.001);
      return true;
    },
  );
});

Deno.test("opencode: a base URL points the model's provider at it in OPENCODE_CONFIG_CONTENT", async () => {
  await using dir = await callDir();
  const provider = opencodeProvider({
    command: stub("opencode"),
    baseUrl: "http://127.0.0.1:9/v1",
    model: "gateway/big-model",
  });
  const result = await provider.dispatch(harnessRequest("STUB_ENV", { cwd: dir.path }));
  const env = JSON.parse(/ env=(\{.*\})$/.exec(String(result.output))?.[1] ?? "{}");
  assert.deepEqual(JSON.parse(env.OPENCODE_CONFIG_CONTENT), {
    provider: {
      gateway: { options: { baseURL: "http://127.0.0.1:9/v1" }, models: { "big-model": {} } },
    },
  });
  assert.equal(env.OPENCODE_DISABLE_AUTOUPDATE, "1");
  assert.equal(env.OPENCODE_DISABLE_SHARE, "1");
  assert.equal(env.OPENCODE_DISABLE_MODELS_FETCH, "1");
  assert.equal(env.OPENCODE_DISABLE_LSP_DOWNLOAD, "1");
});

Deno.test("opencode: without a base URL svc sets no inline configuration", async () => {
  await using dir = await callDir();
  const result = await opencodeProvider({ command: stub("opencode") }).dispatch(
    harnessRequest("STUB_ENV", { cwd: dir.path }),
  );
  const env = JSON.parse(/ env=(\{.*\})$/.exec(String(result.output))?.[1] ?? "{}");
  assert.equal(env.OPENCODE_CONFIG_CONTENT, undefined);
});

Deno.test("opencode: the configuration's env can turn a default switch back", async () => {
  await using dir = await callDir();
  const provider = opencodeProvider({
    command: stub("opencode"),
    env: { OPENCODE_DISABLE_MODELS_FETCH: "0" },
  });
  const result = await provider.dispatch(harnessRequest("STUB_ENV", { cwd: dir.path }));
  const env = JSON.parse(/ env=(\{.*\})$/.exec(String(result.output))?.[1] ?? "{}");
  assert.equal(env.OPENCODE_DISABLE_MODELS_FETCH, "0");
});

Deno.test("opencode: with a base URL, a model that names no provider, or could expand, is refused", async () => {
  for (const model of [undefined, "big-model", "gw/{env:HOME}", "gw/{file:~/.ssh/id_rsa}"]) {
    await using dir = await callDir();
    const provider = opencodeProvider({
      command: stub("opencode"),
      baseUrl: "http://127.0.0.1:9/v1",
    });
    await assert.rejects(
      provider.dispatch(harnessRequest("hi", { cwd: dir.path, ...(model ? { model } : {}) })),
      (error: unknown) =>
        error instanceof SvcError && error.code === "invalid_request" &&
        /must be named provider\/model/.test(error.message),
    );
  }
  assert.throws(
    () => opencodeProvider({ baseUrl: "file:///etc/passwd" }),
    (error: unknown) => error instanceof SvcError && /not an http or https URL/.test(error.message),
  );
});

/** The Codex provider against its stand-in: command line, JSON-lines events, threads. */
import assert from "node:assert/strict";
import { codexProvider } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { CODEX_QUIET } from "../src/dispatch/harness/codex.ts";
import { callDir, harnessRequest, stub } from "./harness_helpers.ts";

/** svc's switches of Codex's non-essential traffic, as they open every command line. */
const QUIET = CODEX_QUIET.flatMap((entry) => ["-c", entry]);

Deno.test("codex: a call returns the last agent message, the turn's usage, no cost, and the thread id", async () => {
  await using dir = await callDir();
  const provider = codexProvider({ command: stub("codex") });
  assert.equal(provider.name, "codex");
  const result = await provider.dispatch(
    harnessRequest("List the risky areas", { cwd: dir.path, model: "gpt-5-codex" }),
  );
  assert.deepEqual(result, {
    output:
      `codex-stub answer to: List the risky areas [model=gpt-5-codex sandbox=read-only resumed=none cwd=${dir.path}]`,
    usage: { input_tokens: 24763, output_tokens: 122 },
    cost_usd: null,
    provider: "codex",
    model: "gpt-5-codex",
    session_id: "0199a213-81c0-7800-8aa1-bbab2a035a53",
  });
  assert.deepEqual(await dir.argv(), [
    "exec",
    ...QUIET,
    "--json",
    "--skip-git-repo-check",
    "--model=gpt-5-codex",
    "--sandbox",
    "read-only",
    "--",
    "-",
  ]);
});

Deno.test("codex: without a model the model is reported unknown (Codex chose its default)", async () => {
  await using dir = await callDir();
  const result = await codexProvider({ command: stub("codex") }).dispatch(
    harnessRequest("hi", { cwd: dir.path }),
  );
  assert.equal(result.model, null);
  assert.match(String(result.output), /\[model=default /);
});

Deno.test("codex: each sandbox level maps to Codex's sandbox mode", async () => {
  const provider = codexProvider({ command: stub("codex") });
  const modes = { "read-only": "read-only", write: "workspace-write", full: "danger-full-access" };
  for (const sandbox of ["read-only", "write", "full"] as const) {
    await using dir = await callDir();
    const result = await provider.dispatch(harnessRequest("hi", { cwd: dir.path, sandbox }));
    const argv = await dir.argv();
    const at = argv.indexOf("--sandbox");
    assert.deepEqual(argv.slice(at, at + 2), ["--sandbox", modes[sandbox]]);
    assert.match(String(result.output), new RegExp(`sandbox=${modes[sandbox]} `));
  }
});

Deno.test("codex: resuming runs `codex exec resume <thread>` with the sandbox as a config override", async () => {
  await using dir = await callDir();
  const thread = "0199b000-0000-7000-8000-000000000001";
  const result = await codexProvider({ command: stub("codex"), extraArgs: ["--ephemeral"] })
    .dispatch(
      harnessRequest("Fix it", { cwd: dir.path, resumeSession: thread, sandbox: "write" }),
    );
  assert.equal(result.session_id, thread);
  assert.match(String(result.output), new RegExp(`sandbox=workspace-write resumed=${thread} `));
  assert.deepEqual(await dir.argv(), [
    "exec",
    ...QUIET,
    "--ephemeral",
    "resume",
    "--json",
    "--skip-git-repo-check",
    "-c",
    'sandbox_mode="workspace-write"',
    "-c",
    "sandbox_workspace_write.exclude_slash_tmp=true",
    "-c",
    "sandbox_workspace_write.exclude_tmpdir_env_var=true",
    "--",
    thread,
    "-",
  ]);
});

Deno.test("codex: a failed turn fails the call with Codex's message", async () => {
  await using dir = await callDir();
  await assert.rejects(
    codexProvider({ command: stub("codex") }).dispatch(
      harnessRequest("STUB_TURN_FAILED", { cwd: dir.path }),
    ),
    (error: unknown) => {
      assert.ok(error instanceof SvcError);
      assert.equal(error.code, "provider_failed");
      assert.equal(
        error.message,
        "Cannot dispatch to codex: codex reported an error: model response stream ended unexpectedly (it exited with code 1)",
      );
      return true;
    },
  );
});

Deno.test("codex: a base URL becomes a model provider of the command line, the user's files untouched", async () => {
  await using dir = await callDir();
  const provider = codexProvider({
    command: stub("codex"),
    baseUrl: "http://127.0.0.1:9/v1/",
    extraArgs: ["-c", "model_providers.svc.request_max_retries=0"],
  });
  await provider.dispatch(harnessRequest("hi", { cwd: dir.path }));
  assert.deepEqual(await dir.argv(), [
    "exec",
    ...QUIET,
    "-c",
    'model_provider="svc"',
    "-c",
    'model_providers.svc.name="svc"',
    "-c",
    'model_providers.svc.base_url="http://127.0.0.1:9/v1"',
    "-c",
    'model_providers.svc.wire_api="responses"',
    "-c",
    "model_providers.svc.requires_openai_auth=true",
    "-c",
    "model_providers.svc.request_max_retries=0",
    "--json",
    "--skip-git-repo-check",
    "--sandbox",
    "read-only",
    "--",
    "-",
  ]);
});

Deno.test("codex: a base URL that is not http(s) is refused, and one with quotes cannot leave its TOML string", async () => {
  for (const baseUrl of ["file:///etc/passwd", "not a url", "javascript:alert(1)"]) {
    assert.throws(
      () => codexProvider({ command: stub("codex"), baseUrl }),
      (error: unknown) => error instanceof SvcError && error.code === "invalid_request",
    );
  }
  await using dir = await callDir();
  const hostile = 'http://127.0.0.1:9/v1"\nmodel_provider="openai';
  await codexProvider({ command: stub("codex"), baseUrl: hostile }).dispatch(
    harnessRequest("hi", { cwd: dir.path }),
  );
  const argv = await dir.argv();
  assert.ok(
    argv.includes(
      'model_providers.svc.base_url="http://127.0.0.1:9/v1%22model_provider=%22openai"',
    ),
  );
  assert.equal(argv.filter((arg) => arg.startsWith("model_provider=")).length, 1);
});

Deno.test("codex: Codex's warning that it made no sandbox helper fails a read-only or write call; full is answered", async () => {
  await using dir = await callDir();
  const provider = codexProvider({ command: stub("codex") });
  for (const sandbox of ["read-only", "write"] as const) {
    await assert.rejects(
      provider.dispatch(harnessRequest("STUB_HELPER_WARNING", { cwd: dir.path, sandbox })),
      (error: unknown) => {
        assert.ok(error instanceof SvcError);
        assert.equal(error.code, "provider_failed");
        assert.match(error.message, /Refusing to create helper binaries under temporary dir/);
        return true;
      },
    );
  }
  const full = await provider.dispatch(
    harnessRequest("STUB_HELPER_WARNING", { cwd: dir.path, sandbox: "full" }),
  );
  assert.match(String(full.output), /codex-stub answer/);
});

Deno.test("codex: shell commands failing for want of Codex's sandbox helper fail the call with cause and remedy", async () => {
  await using dir = await callDir();
  await assert.rejects(
    codexProvider({ command: stub("codex") }).dispatch(
      harnessRequest("STUB_SANDBOX_HELPER", { cwd: dir.path, sandbox: "write" }),
    ),
    (error: unknown) => {
      assert.ok(error instanceof SvcError);
      assert.equal(error.code, "provider_failed");
      assert.match(error.message, /execvp codex-linux-sandbox/);
      assert.match(error.message, /Refusing to create helper binaries under temporary dir/);
      assert.match(error.message, /put CODEX_HOME \(or HOME\) outside TMPDIR/);
      return true;
    },
  );
});

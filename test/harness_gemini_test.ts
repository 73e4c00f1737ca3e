/** The Gemini CLI provider against its stand-in: command line, the JSON document, sessions. */
import assert from "node:assert/strict";
import { geminiProvider } from "../src/dispatch/mod.ts";
import { callDir, harnessRequest, stub } from "./harness_helpers.ts";

Deno.test("gemini: a call reads the pretty-printed document: response, usage over every model, session id", async () => {
  await using dir = await callDir();
  const provider = geminiProvider({ command: stub("gemini") });
  assert.equal(provider.name, "gemini");
  const result = await provider.dispatch(harnessRequest("Explain main.ts", { cwd: dir.path }));
  assert.deepEqual(result, {
    output:
      `gemini-stub answer to: Explain main.ts [model=gemini-2.5-pro approval=default resumed=none cwd=${dir.path}]`,
    // prompt tokens of both models; candidates and thoughts of both models
    usage: { input_tokens: 1200 + 24939, output_tokens: 8 + 52 + 120 + 154 },
    cost_usd: null,
    provider: "gemini",
    model: "gemini-2.5-pro",
    session_id: "3c9a3f5e-8d2b-4b1e-9f7a-6e5d4c3b2a10",
  });
  assert.deepEqual(await dir.argv(), [
    "--output-format",
    "json",
    "--skip-trust",
    "--approval-mode",
    "default",
  ]);
});

Deno.test("gemini: each sandbox level maps to an approval mode; the model is passed and reported", async () => {
  const provider = geminiProvider({ command: stub("gemini"), model: "gemini-2.5-flash" });
  const modes = { "read-only": "default", write: "auto_edit", full: "yolo" };
  for (const sandbox of ["read-only", "write", "full"] as const) {
    await using dir = await callDir();
    const result = await provider.dispatch(harnessRequest("hi", { cwd: dir.path, sandbox }));
    assert.equal(result.model, "gemini-2.5-flash");
    assert.deepEqual(await dir.argv(), [
      "--output-format",
      "json",
      "--skip-trust",
      "--model=gemini-2.5-flash",
      "--approval-mode",
      modes[sandbox],
    ]);
    assert.match(String(result.output), new RegExp(`approval=${modes[sandbox]} `));
  }
});

Deno.test("gemini: resuming passes --resume=<session id> and keeps that session", async () => {
  await using dir = await callDir();
  const session = "9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a";
  const result = await geminiProvider({ command: stub("gemini") }).dispatch(
    harnessRequest("Go on", { cwd: dir.path, resumeSession: session }),
  );
  assert.equal(result.session_id, session);
  assert.match(String(result.output), new RegExp(`resumed=${session} `));
  assert.deepEqual((await dir.argv())[5], `--resume=${session}`);
});

Deno.test("gemini: a prompt starting with '-' reaches Gemini as the prompt", async () => {
  await using dir = await callDir();
  const result = await geminiProvider({ command: stub("gemini") }).dispatch(
    harnessRequest("- list the files\n- say hi", { cwd: dir.path }),
  );
  assert.match(String(result.output), /^gemini-stub answer to: - list the files\n- say hi \[/);
});

Deno.test("gemini: with routing, the model in the main role is reported, not the router's", async () => {
  await using dir = await callDir();
  // The router's model wrote as many tokens as the answering one.
  const result = await geminiProvider({ command: stub("gemini") }).dispatch(
    harnessRequest("STUB_TIE", { cwd: dir.path }),
  );
  assert.equal(result.model, "gemini-2.5-pro");
  assert.deepEqual(result.usage, {
    input_tokens: 1200 + 24939,
    output_tokens: 120 + 52 + 120 + 154,
  });
});

Deno.test("gemini: telemetry is off unless configured; a base URL points Gemini at it with a home of svc's", async () => {
  await using dir = await callDir();
  const envOf = (output: unknown) => JSON.parse(String(output).replace(/^[\s\S]* env=/, ""));
  const plain = await geminiProvider({ command: stub("gemini") }).dispatch(
    harnessRequest("STUB_ENV", { cwd: dir.path }),
  );
  assert.equal(envOf(plain.output).GEMINI_TELEMETRY_ENABLED, "false");
  assert.equal(envOf(plain.output).GOOGLE_GEMINI_BASE_URL, undefined);
  assert.equal(envOf(plain.output).GEMINI_CLI_HOME, undefined);

  const state = `${dir.path}/state`;
  const routed = await geminiProvider({
    command: stub("gemini"),
    baseUrl: "http://127.0.0.1:9/",
    stateRoot: state,
    env: { GEMINI_TELEMETRY_ENABLED: "true" },
  }).dispatch(harnessRequest("STUB_ENV", { cwd: dir.path }));
  const env = envOf(routed.output);
  assert.equal(env.GEMINI_TELEMETRY_ENABLED, "true");
  assert.equal(env.GOOGLE_GEMINI_BASE_URL, "http://127.0.0.1:9/");
  assert.equal(env.GEMINI_CLI_HOME, `${state}/gemini`);
  const settings = JSON.parse(await Deno.readTextFile(`${state}/gemini/.gemini/settings.json`));
  assert.equal(settings.security.auth.selectedType, "gemini-api-key");
});

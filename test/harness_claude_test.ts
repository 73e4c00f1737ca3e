/** The Claude Code provider against its stand-in: command line, result line, sessions. */
import assert from "node:assert/strict";
import { claudeProvider } from "../src/dispatch/mod.ts";
import { callDir, harnessRequest, stub } from "./harness_helpers.ts";

const STREAM = ["-p", "--output-format", "stream-json", "--verbose"];

Deno.test("claude: a call returns the result text, usage with cache tokens, cost, model and session id", async () => {
  await using dir = await callDir();
  const provider = claudeProvider({ command: stub("claude") });
  assert.equal(provider.name, "claude");
  assert.equal(provider.kind, "harness");
  const result = await provider.dispatch(
    harnessRequest("Summarise the README", { cwd: dir.path, model: "claude-opus-4-1" }),
  );
  assert.deepEqual(result, {
    output:
      `claude-stub answer to: Summarise the README [model=claude-opus-4-1 permission=default denied=Bash,Edit,Write,NotebookEdit resumed=none cwd=${dir.path}]`,
    usage: { input_tokens: 12 + 200 + 100, output_tokens: 34 },
    cost_usd: 0.0123,
    provider: "claude",
    model: "claude-opus-4-1",
    session_id: "11111111-1111-4111-8111-111111111111",
  });
  assert.deepEqual(await dir.argv(), [
    ...STREAM,
    "--model=claude-opus-4-1",
    "--permission-mode",
    "default",
    "--disallowedTools",
    "Bash,Edit,Write,NotebookEdit",
  ]);
});

Deno.test("claude: each sandbox level maps to its permission flags", async () => {
  const provider = claudeProvider({ command: stub("claude") });
  const flags: Record<string, string[]> = {
    "read-only": [
      "--permission-mode",
      "default",
      "--disallowedTools",
      "Bash,Edit,Write,NotebookEdit",
    ],
    write: ["--permission-mode", "acceptEdits"],
    full: ["--dangerously-skip-permissions"],
  };
  for (const sandbox of ["read-only", "write", "full"] as const) {
    await using dir = await callDir();
    const result = await provider.dispatch(harnessRequest("hi", { cwd: dir.path, sandbox }));
    assert.deepEqual(await dir.argv(), [...STREAM, ...flags[sandbox]!]);
    const seen = { "read-only": "default", write: "acceptEdits", full: "bypassPermissions" };
    assert.match(String(result.output), new RegExp(`permission=${seen[sandbox]} `));
  }
});

Deno.test("claude: resuming passes --resume=<id> and returns the new session id Claude reports", async () => {
  await using dir = await callDir();
  const result = await claudeProvider({ command: stub("claude") }).dispatch(
    harnessRequest("Go on", {
      cwd: dir.path,
      resumeSession: "11111111-1111-4111-8111-111111111111",
    }),
  );
  assert.equal(result.session_id, "22222222-2222-4222-8222-222222222222");
  // The turn's cost, not the session's total so far (the result line's total_cost_usd).
  assert.equal(result.cost_usd, 0.0123);
  assert.match(String(result.output), /resumed=11111111-1111-4111-8111-111111111111 /);
  const argv = await dir.argv();
  assert.deepEqual(argv[4], "--resume=11111111-1111-4111-8111-111111111111");
});

Deno.test("claude: the default model and extra arguments come from the options; a prompt starting with '-' stays a prompt", async () => {
  await using dir = await callDir();
  const provider = claudeProvider({
    command: stub("claude"),
    model: "claude-haiku-4-5",
    extraArgs: ["--append-system-prompt", "Be terse."],
  });
  const result = await provider.dispatch(harnessRequest("--help me", { cwd: dir.path }));
  assert.equal(result.model, "claude-haiku-4-5");
  assert.match(
    String(result.output),
    /^claude-stub answer to: --help me \[model=claude-haiku-4-5 /,
  );
  assert.match(String(result.output), / system=Be terse\.\]$/);
  assert.deepEqual((await dir.argv()).slice(-3), [
    "Bash,Edit,Write,NotebookEdit",
    "--append-system-prompt",
    "Be terse.",
  ]);
});

Deno.test("claude: a call's model option is used when the request names no model", async () => {
  await using dir = await callDir();
  const result = await claudeProvider({ command: stub("claude"), model: "claude-haiku-4-5" })
    .dispatch(harnessRequest("hi", { cwd: dir.path, options: { model: "claude-sonnet-4-5" } }));
  assert.equal(result.model, "claude-sonnet-4-5");
});

Deno.test("claude: a schema call asks for JSON only, with the schema in the prompt", async () => {
  await using dir = await callDir();
  const schema = { type: "object", properties: { ok: { type: "boolean" } } };
  const result = await claudeProvider({ command: stub("claude") }).dispatch(
    harnessRequest("Check it", { cwd: dir.path, options: { schema } }),
  );
  const answer = String(result.output);
  assert.ok(
    answer.startsWith("claude-stub answer to: Check it\n\nAnswer with a single JSON value"),
  );
  assert.ok(answer.includes(`\n${JSON.stringify(schema)} [model=`));
});

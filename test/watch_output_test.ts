/**
 * `svc workflow watch --output none|tools|all`: calls' live output printed under the
 * narration at the chosen verbosity (tools by default), a line at a time with the call's
 * number, control characters shown, never acted on.
 */
import assert from "node:assert/strict";
import { createDispatcher } from "../src/dispatch/mod.ts";
import type { DispatchRequest, DispatchResult, Provider } from "../src/dispatch/mod.ts";
import { LOCAL, runCli, tempDir, testManager } from "./helpers.ts";

/** A provider that reports a tool use, text over two deltas, a file and an error. */
const busy: Provider = {
  name: "busy",
  kind: "api",
  dispatch(request: DispatchRequest): Promise<DispatchResult> {
    const say = request.onProgress!;
    say({ kind: "tool", name: "Bash", target: "ls -la" });
    say({ kind: "text", text: "first line\nsecond " });
    say({ kind: "text", text: "line \u202eevil\u202c end" });
    say({ kind: "file", path: "src/app.ts", change: "update" });
    say({ kind: "error", message: "grep: no match" });
    return Promise.resolve({
      output: "ok",
      usage: { input_tokens: 1, output_tokens: 1 },
      cost_usd: 0,
      provider: "busy",
      model: "busy",
    });
  },
};

Deno.test("workflow watch prints calls' output at the chosen verbosity, tools by default", async () => {
  await using home = await tempDir("svc-home-");
  let runId: string;
  {
    await using t = await testManager({
      home: home.path,
      dispatcher: createDispatcher({ providers: [busy], fakeLatencyMs: 0 }),
    });
    const run = await t.manager.start({
      script: `phase("Work"); return await agent("go", { provider: "busy" })`,
    }, LOCAL);
    assert.equal((await t.manager.wait(run.run_id, LOCAL)).state, "succeeded");
    runId = run.run_id;
  }
  const watch = (...flags: string[]) =>
    runCli(["workflow", "watch", runId, ...flags], { home: home.path });

  const all = await watch("--output", "all");
  assert.equal(all.code, 0, all.stderr);
  assert.match(
    all.stderr,
    /== Work\n {2}#1 → Bash: ls -la\n {2}#1 │ first line\n {2}#1 ✎ src\/app\.ts \(update\)\n {2}#1 ! grep: no match\n {2}#1 │ second line \\u\{202e\}evil\\u\{202c\} end\n/,
  );
  assert.ok(!all.stderr.includes("\u202e"), "a bidirectional override is shown, not acted on");

  const tools = await watch();
  assert.equal(tools.code, 0, tools.stderr);
  assert.match(
    tools.stderr,
    / {2}#1 → Bash: ls -la\n {2}#1 ✎ src\/app\.ts \(update\)\n {2}#1 ! grep/,
  );
  assert.doesNotMatch(tools.stderr, /first line/);

  const none = await watch("--output", "none");
  assert.equal(none.code, 0, none.stderr);
  assert.doesNotMatch(none.stderr, /#1/);

  const bad = await watch("--output", "loud");
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Cannot use --output 'loud': it must be one of none, tools, all/);
});

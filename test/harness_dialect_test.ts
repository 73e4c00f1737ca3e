/**
 * The dialect of Claude Code's workflow scripts as each harness receives it: `effort` on each
 * tool's own setting, an agent type's system prompt (issue 10). The stand-ins parse the
 * command line with the real tools' parsers and record what they made of it.
 */
import assert from "node:assert/strict";
import {
  claudeProvider,
  codexProvider,
  geminiProvider,
  opencodeProvider,
} from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { CODEX_QUIET } from "../src/dispatch/harness/codex.ts";
import { type CallDir, callDir, harnessRequest, stub } from "./harness_helpers.ts";

async function parsed(dir: CallDir): Promise<{ options: Record<string, unknown> }> {
  return JSON.parse(await Deno.readTextFile(`${dir.path}/stub_parsed.json`));
}

Deno.test("claude: each effort level reaches Claude Code as its own --effort, which its parser accepts", async () => {
  const provider = claudeProvider({ command: stub("claude") });
  for (const effort of ["low", "medium", "high", "xhigh", "max"] as const) {
    await using dir = await callDir();
    const result = await provider.dispatch(
      harnessRequest("hi", { cwd: dir.path, options: { effort } }),
    );
    assert.ok((await dir.argv()).includes(`--effort=${effort}`));
    assert.equal((await parsed(dir)).options.effort, effort);
    assert.match(String(result.output), new RegExp(` effort=${effort}\\]$`));
  }
});

Deno.test("claude: an agent's system prompt is Claude Code's --system-prompt, read whole even when it starts with '-' and spans lines", async () => {
  await using dir = await callDir();
  const system = "--dangerously-skip-permissions\nYou review code.\n\tNever edit files.";
  const result = await claudeProvider({ command: stub("claude") }).dispatch(
    harnessRequest("Review it", { cwd: dir.path, system }),
  );
  const options = (await parsed(dir)).options;
  assert.equal(options.systemPrompt, system);
  assert.equal(options.dangerouslySkipPermissions, undefined, "the text is no option");
  assert.match(String(result.output), /^claude-stub answer to: Review it \[model=/);
  assert.match(String(result.output), /permission=default /);
});

Deno.test("claude: a system prompt too long for one argument, or with a control character, is refused before anything runs", async () => {
  const provider = claudeProvider({ command: stub("claude") });
  for (
    const [system, reason] of [
      ["x".repeat(100 * 1024 + 1), /longer than 102400 characters/],
      ["be\u0000good", /control character/],
      ["be\u001bgood", /control character/],
    ] as const
  ) {
    await using dir = await callDir();
    await assert.rejects(
      provider.dispatch(harnessRequest("hi", { cwd: dir.path, system })),
      (error: unknown) =>
        error instanceof SvcError && error.code === "invalid_request" && reason.test(error.message),
    );
    await assert.rejects(Deno.stat(`${dir.path}/stub_argv.json`), Deno.errors.NotFound);
  }
});

Deno.test("codex: effort becomes -c model_reasoning_effort, max as Codex's highest (xhigh), also when resuming", async () => {
  const provider = codexProvider({ command: stub("codex") });
  const expected = { low: "low", medium: "medium", high: "high", xhigh: "xhigh", max: "xhigh" };
  for (const [effort, value] of Object.entries(expected)) {
    await using dir = await callDir();
    await provider.dispatch(
      harnessRequest("hi", { cwd: dir.path, options: { effort: effort as "low" } }),
    );
    assert.deepEqual((await parsed(dir)).options.config, [
      ...CODEX_QUIET,
      `model_reasoning_effort="${value}"`,
    ]);
  }
  await using dir = await callDir();
  await provider.dispatch(harnessRequest("again", {
    cwd: dir.path,
    options: { effort: "max" },
    resumeSession: "0199a213-81c0-7800-8aa1-bbab2a035a53",
  }));
  assert.deepEqual((await parsed(dir)).options.config, [
    'model_reasoning_effort="xhigh"',
    'sandbox_mode="read-only"',
  ]);
});

Deno.test("opencode: effort becomes the model's --variant", async () => {
  await using dir = await callDir();
  await opencodeProvider({ command: stub("opencode") }).dispatch(
    harnessRequest("hi", { cwd: dir.path, options: { effort: "max" } }),
  );
  assert.ok((await dir.argv()).includes("--variant=max"));
  assert.equal((await parsed(dir)).options.variant, "max");
});

Deno.test("gemini: effort has no command-line setting, and the call still runs", async () => {
  await using dir = await callDir();
  const result = await geminiProvider({ command: stub("gemini") }).dispatch(
    harnessRequest("hi", { cwd: dir.path, options: { effort: "high" } }),
  );
  assert.match(String(result.output), /^gemini-stub answer to: hi/);
  assert.ok(!(await dir.argv()).some((arg) => arg.includes("high")));
});

Deno.test("codex, gemini and opencode get an agent's system prompt in front of the prompt", async () => {
  const system = "You are a careful reviewer.";
  for (
    const [provider, name] of [
      [codexProvider({ command: stub("codex") }), "codex"],
      [geminiProvider({ command: stub("gemini") }), "gemini"],
      [opencodeProvider({ command: stub("opencode") }), "opencode"],
    ] as const
  ) {
    await using dir = await callDir();
    const result = await provider.dispatch(harnessRequest("Review it", { cwd: dir.path, system }));
    assert.ok(
      String(result.output).startsWith(`${name}-stub answer to: ${system}\n\nReview it [`),
      `${name}: ${result.output}`,
    );
    assert.ok(!(await dir.argv()).some((arg) => arg.includes(system)), name);
  }
});

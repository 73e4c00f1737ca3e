/** The dialect of Claude Code's workflow scripts: meta, effort, model aliases (issue 10). */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import {
  ANTHROPIC_MODEL_ALIASES,
  createDispatcher,
  dispatcherFromConfig,
  type ModelAliases,
  NATIVE_CLAUDE_ALIASES,
  type Provider,
  providerFromConfig,
} from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { fixture, narration, runCli, runScript, tempDir } from "./helpers.ts";
import { stub } from "./harness_helpers.ts";
import { type RecordingProvider, recordingProvider } from "./providers.ts";

Deno.test("an unknown meta field is narrated as a warning at the start of the run, and the run goes on", async () => {
  const status = await runScript(
    `export const meta = {\n  name: "w",\n  colour: "red",\n  phases: [{ title: "A", detail: "d" }],\n}\nreturn 1`,
    { filename: "w.js" },
  );
  assert.equal(status.state, "succeeded");
  assert.deepEqual(narration(status, "warning"), [
    `w.js:3:3: meta field "colour" is not known to svc: kept, not used`,
  ]);
  assert.equal(status.narration[0]?.kind, "warning", "before anything else the run narrates");
  assert.deepEqual(status.meta, { name: "w", phases: ["A"] });
});

Deno.test("svc workflow run prints an unknown meta field as one warning line on stderr", async () => {
  const result = await runCli([
    "workflow",
    "run",
    fixture("dialect/unknown_meta.js"),
    "--fake-dispatch",
  ]);
  assert.equal(result.code, 0, result.stderr);
  const warnings = result.stderr.split("\n").filter((line) => line.includes("warning"));
  assert.deepEqual(warnings, [
    `warning: unknown_meta.js:6:3: meta field "icon" is not known to svc: kept, not used`,
  ]);
});

// ---------------------------------------------------------------------------------------------
// Claude Code's model aliases

/** A provider that records its requests; `aliases` says which Claude aliases it serves. */
function recorder(
  name: string,
  kind: Provider["kind"],
  aliases?: ModelAliases,
): RecordingProvider {
  return recordingProvider(name, { kind, ...(aliases ? { modelAliases: aliases } : {}) });
}

const signal = new AbortController().signal;

Deno.test("auto routing sends a Claude alias only to a provider that serves Claude models, as it names the model", async () => {
  const codex = recorder("codex", "harness");
  const anthropic = recorder("anthropic", "api", ANTHROPIC_MODEL_ALIASES);
  const dispatcher = createDispatcher({
    providers: [codex, anthropic],
    config: ConfigSchema.parse({
      providers: {
        codex: { type: "codex" },
        anthropic: { type: "anthropic", model: "claude-sonnet-4-5" },
      },
      routing: { prefer: ["codex"] },
    }),
    fakeLatencyMs: 0,
  });
  const outcome = await dispatcher.dispatch({ prompt: "p", options: { model: "haiku" }, signal });
  assert.equal(outcome.provider, "anthropic");
  assert.equal(anthropic.requests[0]!.model, "claude-haiku-4-5");
  assert.match(outcome.route.reason, /codex serve no Claude models \('haiku'\)/);
  const plain = await dispatcher.dispatch({ prompt: "p", options: {}, signal });
  assert.equal(plain.provider, "codex", "without an alias the preference holds");
});

Deno.test("auto routing refuses a Claude alias when no provider serves Claude models, saying why", async () => {
  const dispatcher = createDispatcher({
    providers: [recorder("codex", "harness"), recorder("gemini", "harness")],
    fakeLatencyMs: 0,
  });
  await assert.rejects(
    dispatcher.dispatch({ prompt: "p", options: { model: "opus" }, signal }),
    (error: unknown) =>
      error instanceof SvcError && error.code === "unavailable" &&
      /no provider can take it \(codex, gemini serve no Claude models \('opus'\)\)/.test(
        error.message,
      ),
  );
});

Deno.test("a provider named for a call with a Claude alias it does not serve is refused, naming those that do", async () => {
  const codex = recorder("codex", "harness");
  const dispatcher = createDispatcher({
    providers: [codex, recorder("claude", "harness", NATIVE_CLAUDE_ALIASES)],
    config: ConfigSchema.parse({
      providers: { codex: { type: "codex" }, claude: { type: "claude" } },
      profiles: { cheap: { provider: "codex", model: "sonnet" } },
    }),
    fakeLatencyMs: 0,
  });
  for (const options of [{ provider: "codex", model: "haiku" }, { profile: "cheap" }]) {
    await assert.rejects(
      dispatcher.dispatch({ prompt: "p", options, signal }),
      (error: unknown) =>
        error instanceof SvcError && error.code === "invalid_request" &&
        /^Cannot dispatch to codex: the model '(haiku|sonnet)' names a Claude model, which codex does not serve \(providers that do: claude\)$/
          .test(error.message),
    );
  }
  assert.equal(codex.requests.length, 0);
  const named = await dispatcher.dispatch({
    prompt: "p",
    options: { provider: "claude", model: "haiku" },
    signal,
  });
  assert.equal(named.route.model, "haiku", "Claude Code takes the alias itself");
});

Deno.test("the configuration maps aliases for the Anthropic API (over its defaults) and for opencode", () => {
  const config = ConfigSchema.parse({
    providers: {
      anthropic: { type: "anthropic", model: "m", model_aliases: { opus: "claude-opus-4-6" } },
      opencode: { type: "opencode", model_aliases: { sonnet: "anthropic/claude-sonnet-4-5" } },
      codex: { type: "codex" },
      claude: { type: "claude" },
    },
  });
  const aliases = Object.fromEntries(
    Object.entries(config.providers).map((
      [name, settings],
    ) => [name, providerFromConfig(name, settings)?.modelAliases]),
  );
  assert.deepEqual(aliases, {
    anthropic: { haiku: "claude-haiku-4-5", sonnet: "claude-sonnet-4-5", opus: "claude-opus-4-6" },
    opencode: { sonnet: "anthropic/claude-sonnet-4-5" },
    codex: undefined,
    claude: { haiku: "haiku", sonnet: "sonnet", opus: "opus" },
  });
});

Deno.test("a script's model: 'haiku' runs on the Claude Code stand-in as --model=haiku, while other calls follow the preference", async () => {
  await using work = await tempDir();
  const dispatcher = dispatcherFromConfig(
    ConfigSchema.parse({
      providers: {
        claude: { type: "claude", command: stub("claude") },
        codex: { type: "codex", command: stub("codex") },
      },
      routing: { prefer: ["codex"] },
    }),
    { scratchRoot: work.path },
  );
  const status = await runScript(
    `const a = await agent("cheap", { model: "haiku", effort: "low" })\nconst b = await agent("plain")\nreturn [a, b]`,
    {},
    { dispatcher },
  );
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const [a, b] = status.result as string[];
  assert.match(a!, /^claude-stub answer to: cheap \[model=haiku .* effort=low\]$/);
  assert.match(b!, /^codex-stub answer to: plain /);
});

// ---------------------------------------------------------------------------------------------
// workflow() from a script file

Deno.test("svc workflow run: the script's workflow({scriptPath}) starts from the project's root, as Claude Code's does", async () => {
  await using project = await tempDir("svc-project-");
  const folder = `${project.path}/.claude/workflows`;
  await Deno.mkdir(`${folder}/helpers`, { recursive: true });
  await Deno.writeTextFile(`${folder}/helpers/greet.js`, `return "hello " + args;`);
  await Deno.writeTextFile(
    `${folder}/main.js`,
    `export const meta = { name: "main", description: "calls a helper next to it" }\nreturn await workflow({ scriptPath: ".claude/workflows/helpers/greet.js" }, "world")`,
  );
  const result = await runCli([
    "workflow",
    "run",
    `${folder}/main.js`,
    "--workdir",
    project.path,
    "--fake-dispatch",
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout.trim(), `"hello world"`);
});

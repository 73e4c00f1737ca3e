/**
 * `agent(prompt, {agentType})`: Claude Code's subagent definitions (issue 10). Real files under
 * temporary project and home folders, real guest runs.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import {
  AGENT_TYPE_LIMITS,
  agentFolders,
  AgentTypeRegistry,
  parseAgentFile,
} from "../src/agent_types/mod.ts";
import {
  createDispatcher,
  dispatcherFromConfig,
  NATIVE_CLAUDE_ALIASES,
} from "../src/dispatch/mod.ts";
import { SessionStore, TaskManager } from "../src/tasks/mod.ts";
import { openLedger } from "../src/ledger/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { LOCAL, runScript, tempDir } from "./helpers.ts";
import { stub } from "./harness_helpers.ts";
import { type RecordingProvider, recordingProvider } from "./providers.ts";

const REVIEWER = `---
name: reviewer
description: Reviews code for bugs
tools: Read, Grep, Glob
model: sonnet
---

You are a meticulous code reviewer.
Report bugs only.
`;

/** A project folder and a home folder, each with `.claude/agents/`, removed when disposed. */
async function folders(): Promise<
  {
    project: string;
    home: string;
    write(where: "project" | "home", file: string, text: string): Promise<void>;
  } & AsyncDisposable
> {
  const project = await tempDir("svc-project-");
  const home = await tempDir("svc-user-");
  for (const dir of [project.path, home.path]) {
    await Deno.mkdir(`${dir}/.claude/agents`, { recursive: true });
  }
  return {
    project: project.path,
    home: home.path,
    async write(where, file, text) {
      const dir = where === "project" ? project.path : home.path;
      await Deno.writeTextFile(`${dir}/.claude/agents/${file}`, text);
    },
    async [Symbol.asyncDispose]() {
      await project[Symbol.asyncDispose]();
      await home[Symbol.asyncDispose]();
    },
  };
}

function registry(f: { project: string; home: string }): AgentTypeRegistry {
  return new AgentTypeRegistry(agentFolders({ projectDir: f.project, userHome: f.home }));
}

Deno.test("an agent file gives its system prompt, model and tools; without writing tools it is read-only", async () => {
  assert.deepEqual(await parseAgentFile(REVIEWER, "reviewer.md"), {
    name: "reviewer",
    description: "Reviews code for bugs",
    system: "You are a meticulous code reviewer.\nReport bugs only.",
    model: "sonnet",
    tools: ["Read", "Grep", "Glob"],
    readOnly: true,
    source: "reviewer.md",
  });
  const cases: Array<[string, boolean]> = [
    ["tools: [Read, Edit]", false],
    ["tools: Read, Bash(git diff:*)", false],
    ["tools:\n  - Read\n  - NotebookEdit", false],
    ["tools: Read, WebFetch, mcp__github__get_issue", true],
    ["description: every tool", false],
    ["disallowedTools: Edit, Write, MultiEdit, NotebookEdit, Bash", true],
    ["tools: Read, Write\ndisallowedTools: Write", true],
  ];
  for (const [front, readOnly] of cases) {
    assert.equal(
      (await parseAgentFile(`---\n${front}\n---\nBody`, "a.md")).readOnly,
      readOnly,
      front,
    );
  }
  const inherit = await parseAgentFile("---\nname: a\nmodel: inherit\n---\n", "a.md");
  assert.equal(inherit.model, undefined, "inherit: the call's model");
  assert.equal(inherit.system, undefined, "an empty body is no system prompt");
});

Deno.test("an agent file without front matter, with broken YAML, or with an alias bomb is refused naming the file", async () => {
  const refused = (text: string, pattern: RegExp) =>
    assert.rejects(
      () => parseAgentFile(text, "/p/.claude/agents/a.md"),
      (error: unknown) =>
        error instanceof SvcError && error.code === "invalid_argument" &&
        error.message.startsWith("agent(): cannot read the agent type /p/.claude/agents/a.md: ") &&
        pattern.test(error.message),
    );
  await refused("You are a reviewer.", /no YAML front matter/);
  await refused("---\nname: [unclosed\n---\nbody", /not valid YAML/);
  await refused("---\nname: a\nname: b\n---\n", /not valid YAML/);
  await refused("---\ntools: 3\n---\n", /front matter tools: /);
  const bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"];
  for (let i = 1; i < 12; i++) {
    bomb.push(
      `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [*${
        String.fromCharCode(96 + i)
      }, *${String.fromCharCode(96 + i)}]`,
    );
  }
  await refused(`---\n${bomb.join("\n")}\n---\n`, /not valid YAML/);
});

Deno.test("agent types come from the project's .claude/agents, then the home's, then the built-ins", async () => {
  await using f = await folders();
  await f.write("project", "reviewer.md", REVIEWER);
  await f.write("home", "reviewer.md", "---\nname: reviewer\n---\nThe home's reviewer.");
  await f.write("home", "writer.md", "---\nname: writer\ntools: Read, Edit\n---\nYou write.");
  // Claude Code knows an agent by its front matter's name, whatever the file is called.
  await f.write("project", "zz-named-elsewhere.md", "---\nname: auditor\n---\nYou audit.");
  await f.write("project", "Explore.md", "---\nname: Explore\ntools: Read, Write\n---\nMine.");
  const types = registry(f);
  assert.equal(
    (await types.resolve("reviewer")).system,
    "You are a meticulous code reviewer.\nReport bugs only.",
  );
  const writer = await types.resolve("writer");
  assert.deepEqual([writer.system, writer.readOnly], ["You write.", false]);
  assert.equal((await types.resolve("auditor")).system, "You audit.");
  assert.equal((await types.resolve("Explore")).system, "Mine.", "a file wins over a built-in");
  const plan = await types.resolve("Plan");
  assert.deepEqual([plan.source, plan.readOnly], ["built-in", true]);
  const general = await types.resolve("general-purpose");
  assert.deepEqual([general.readOnly, general.system], [false, undefined]);
});

Deno.test("an unknown agent type is an error that names every place svc looked", async () => {
  await using f = await folders();
  await assert.rejects(
    registry(f).resolve("code-reviewer"),
    (error: unknown) =>
      error instanceof SvcError && error.code === "not_found" &&
      error.message ===
        `agent(): no agent type 'code-reviewer' (looked for the project's .claude/agents/code-reviewer.md, ~/.claude/agents/code-reviewer.md, the built-in types general-purpose, Explore, Plan)`,
  );
});

Deno.test("an agent type name that is not one plain file name is refused before any file is opened", async () => {
  await using f = await folders();
  await f.write("project", "ok.md", "---\nname: ok\n---\n");
  for (
    const name of [
      "../ok",
      "a/b",
      "/etc/passwd",
      ".hidden",
      "..",
      "",
      "a\nb",
      "x".repeat(AGENT_TYPE_LIMITS.name + 1),
      "ok.md/..",
    ]
  ) {
    await assert.rejects(
      registry(f).resolve(name),
      (error: unknown) =>
        error instanceof SvcError && error.code === "invalid_argument" &&
        /is not an agent type name/.test(error.message) && !error.message.includes("\n"),
      JSON.stringify(name),
    );
  }
});

Deno.test("a symbolic link cannot hand an agent type a file from outside its folder, and an oversized file is refused, naming the folder by role", async () => {
  await using f = await folders();
  await using outside = await tempDir("svc-outside-");
  await Deno.writeTextFile(`${outside.path}/secret.md`, "---\nname: leak\n---\nSecret text.");
  await Deno.symlink(`${outside.path}/secret.md`, `${f.project}/.claude/agents/leak.md`);
  await Deno.symlink(`${outside.path}/secret.md`, `${f.home}/.claude/agents/leak2.md`);
  // Each folder is named by its role, never by its path on the host.
  const where = { leak: "the project's .claude/agents", leak2: "~/.claude/agents" };
  for (const [name, folder] of Object.entries(where)) {
    await assert.rejects(registry(f).resolve(name), (error: unknown) => {
      assert.equal(
        (error as Error).message,
        `agent(): the agent type '${name}' leads outside ${folder} through a symbolic link`,
      );
      return true;
    });
  }
  await f.write(
    "project",
    "big.md",
    `---\nname: big\n---\n${"x".repeat(AGENT_TYPE_LIMITS.fileBytes)}`,
  );
  await assert.rejects(registry(f).resolve("big"), (error: unknown) => {
    assert.equal(
      (error as Error).message,
      "agent(): the agent type big.md in the project's .claude/agents is larger than 65536 bytes",
    );
    return true;
  });
});

/** A provider that records every request it gets. */
function recorder(): RecordingProvider {
  return recordingProvider("claude", {
    modelAliases: NATIVE_CLAUDE_ALIASES,
    answer: (request) =>
      Promise.resolve({
        output: "done",
        usage: { input_tokens: 1, output_tokens: 1 },
        cost_usd: 0,
        provider: "claude",
        model: request.model ?? null,
      }),
  });
}

Deno.test("a run applies an agent type to its calls: system prompt, model, and read-only for an agent that cannot write", async () => {
  await using f = await folders();
  await f.write("project", "reviewer.md", REVIEWER);
  await f.write("project", "fixer.md", "---\nname: fixer\ntools: Read, Edit\n---\nYou fix bugs.");
  const provider = recorder();
  const dispatcher = createDispatcher({
    providers: [provider],
    config: ConfigSchema.parse({ providers: { claude: { type: "claude" } } }),
    fakeLatencyMs: 0,
  });
  const status = await runScript(
    `await agent("review", { agentType: "reviewer", sandbox: "write" })
await agent("review again", { agentType: "reviewer", model: "opus" })
await agent("fix", { agentType: "fixer" })
await agent("look", { agentType: "Explore" })
return "ok"`,
    { workdir: f.project, sandbox_default: "write" },
    { dispatcher, userHome: f.home },
  );
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const seen = provider.requests.map((
    r,
  ) => [r.prompt, r.system?.split("\n")[0], r.model ?? null, r.sandbox]);
  assert.deepEqual(seen, [
    ["review", "You are a meticulous code reviewer.", "sonnet", "read-only"],
    ["review again", "You are a meticulous code reviewer.", "opus", "read-only"],
    ["fix", "You fix bugs.", null, "write"],
    [
      "look",
      "You explore a code base to answer a question. Search for files and read them; do not create, edit or delete anything, and run no command that changes state. Report what you found, with file paths.",
      null,
      "read-only",
    ],
  ]);
});

Deno.test("agent() with an unknown agent type throws in the script, naming where svc looked, and dispatches nothing", async () => {
  await using f = await folders();
  const provider = recorder();
  const dispatcher = createDispatcher({ providers: [provider], fakeLatencyMs: 0 });
  const status = await runScript(
    `try { await agent("x", { agentType: "code-reviewer" }) } catch (e) { return e.message }`,
    { workdir: f.project },
    { dispatcher, userHome: f.home },
  );
  assert.equal(status.state, "succeeded");
  assert.equal(
    status.result,
    `agent(): no agent type 'code-reviewer' (looked for the project's .claude/agents/code-reviewer.md, ~/.claude/agents/code-reviewer.md, the built-in types general-purpose, Explore, Plan)`,
  );
  assert.equal(provider.requests.length, 0);
  assert.equal(status.calls.total, 0);
});

Deno.test("Claude Code gets an agent type's body as its --system-prompt and runs it read-only", async () => {
  await using f = await folders();
  await using scratch = await tempDir();
  await f.write("project", "reviewer.md", REVIEWER);
  const dispatcher = dispatcherFromConfig(
    ConfigSchema.parse({ providers: { claude: { type: "claude", command: stub("claude") } } }),
    { scratchRoot: scratch.path },
  );
  const status = await runScript(
    `return await agent("Review it", { agentType: "reviewer" })`,
    { workdir: f.project, sandbox_default: "write" },
    { dispatcher, userHome: f.home },
  );
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const answer = String(status.result);
  assert.match(
    answer,
    /^claude-stub answer to: Review it \[model=sonnet permission=default denied=Bash,Edit,Write,NotebookEdit /,
  );
  assert.ok(
    answer.endsWith(
      ` system-prompt=${JSON.stringify("You are a meticulous code reviewer.\nReport bugs only.")}]`,
    ),
    answer,
  );
});

Deno.test("a direct dispatch (svc dispatch, the HTTP API) applies an agent type from its workdir too, and refuses an unknown one", async () => {
  await using f = await folders();
  await f.write("project", "reviewer.md", REVIEWER);
  await using home = await tempDir();
  const ledger = await openLedger(home.path);
  const provider = recorder();
  const tasks = new TaskManager({
    dispatcher: createDispatcher({ providers: [provider], fakeLatencyMs: 0 }),
    ledger,
    sessions: new SessionStore(ledger),
  });
  try {
    const started = await tasks.start({
      prompt: "Review it",
      provider: "claude",
      agentType: "reviewer",
      sandbox: "write",
      workdir: f.project,
    }, LOCAL);
    const done = await tasks.wait(started.task_id, LOCAL);
    assert.equal(done.state, "succeeded", JSON.stringify(done.error));
    const [request] = provider.requests;
    assert.deepEqual([request?.system?.split("\n")[0], request?.model, request?.sandbox], [
      "You are a meticulous code reviewer.",
      "sonnet",
      "read-only",
    ]);
    const unknown = await tasks.wait(
      (await tasks.start({ prompt: "x", agentType: "nobody", workdir: f.project }, LOCAL)).task_id,
      LOCAL,
    );
    assert.equal(unknown.state, "failed");
    assert.match(
      unknown.error?.message ?? "",
      /^Cannot dispatch: no agent type 'nobody' \(looked for /,
    );
    assert.equal(provider.requests.length, 1);
  } finally {
    await tasks.close();
    ledger.close();
  }
});

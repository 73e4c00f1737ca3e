/**
 * `agent()`'s narrowing options against the real tools, through svc's providers and the model
 * stand-in: the request a tool sends shows the tools it offers (no Bash after
 * `disallowedTools: ["Bash"]`), and a shell command outside a `bashCommandClamp` shows as
 * denied and leaves nothing behind, at `write` and at `full`. A tool that cannot hold them
 * refuses the call before anything starts.
 */
import assert from "node:assert/strict";
import {
  codexProvider,
  createDispatcher,
  type DispatchRequest,
  geminiProvider,
  opencodeProvider,
  type Provider,
} from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import type { SandboxLevel } from "../src/schemas/mod.ts";
import { harnessRequest } from "./harness_helpers.ts";
import { exists, runScript } from "./helpers.ts";
import { type ModelStandIn, type Responder, startModelStandIn } from "./model_standin/mod.ts";
import { type AgentHome, agentHome, claudeAt, realToolTest } from "./real_agents.ts";

/** A stand-in, a throw-away HOME and a provider pointed at both. */
interface Rig extends AsyncDisposable {
  standin: ModelStandIn;
  home: AgentHome;
  provider: Provider;
}

type ProviderAt = (bin: string, url: string, home: AgentHome) => Provider | Promise<Provider>;

async function rig(bin: string, at: ProviderAt, responder: Responder): Promise<Rig> {
  const standin = startModelStandIn(responder);
  const home = await agentHome();
  return {
    standin,
    home,
    provider: await at(bin, standin.url, home),
    async [Symbol.asyncDispose]() {
      await standin.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

function request(
  r: Rig,
  sandbox: SandboxLevel,
  options: DispatchRequest["options"],
): DispatchRequest {
  return harnessRequest("work on it", { cwd: r.home.work, sandbox, options });
}

/** The tools the first model request offered. */
function offered(standin: ModelStandIn): string[] {
  return standin.modelRequests()[0]?.tools ?? [];
}

/**
 * Scripts shell commands, one per tool call, then a text quoting every result: the first
 * request gets the calls, the one carrying their results gets `results: …`.
 */
function shellThenText(tool: string, commands: string[], input: (c: string) => object): Responder {
  return (req) =>
    req.toolResults.length === 0
      ? {
        toolCalls: commands.map((command, i) => ({
          name: tool,
          id: `call_${i}`,
          input: input(command) as Record<string, unknown>,
        })),
      }
      : { text: `results: ${req.toolResults.map((t) => t.content).join(" | ")}` };
}

const claude: ProviderAt = (bin, url, home) => claudeAt(bin, url, home);
const bashInput = (command: string) => ({ command, description: "run it" });

realToolTest(
  "claude",
  "disallowedTools Bash at write: the model is offered no Bash, and still Write",
  async (bin) => {
    await using r = await rig(bin, claude, () => ({ text: "done" }));
    await r.provider.dispatch(request(r, "write", { disallowedTools: ["Bash"] }));
    const tools = offered(r.standin);
    assert.ok(!tools.includes("Bash"), tools.join(","));
    assert.ok(tools.includes("Write") && tools.includes("Edit"), tools.join(","));
  },
);

realToolTest(
  "claude",
  "disallowedTools Write and Edit at write: neither is offered, Bash is",
  async (bin) => {
    await using r = await rig(bin, claude, () => ({ text: "done" }));
    await r.provider.dispatch(request(r, "write", { disallowedTools: ["Write", "Edit"] }));
    const tools = offered(r.standin);
    assert.ok(!tools.includes("Write") && !tools.includes("Edit"), tools.join(","));
    assert.ok(tools.includes("Bash"), tools.join(","));
  },
);

realToolTest(
  "claude",
  "a workflow run's agent() with disallowedTools, and an agent type's, reaches Claude Code: no Bash or Edit offered",
  async (bin) => {
    await using r = await rig(bin, claude, () => ({ text: "done" }));
    await Deno.mkdir(`${r.home.work}/.claude/agents`, { recursive: true });
    await Deno.writeTextFile(
      `${r.home.work}/.claude/agents/careful.md`,
      "---\nname: careful\ndisallowedTools: Edit\n---\nBe careful.\n",
    );
    const status = await runScript(
      `return await agent("narrowed", { provider: "claude", sandbox: "write", agentType: "careful", disallowedTools: ["Bash"] })`,
      { workdir: r.home.work, sandbox_default: "write" },
      { dispatcher: createDispatcher({ providers: [r.provider], fakeLatencyMs: 0 }) },
    );
    assert.equal(status.state, "succeeded", JSON.stringify(status.error));
    const tools = offered(r.standin);
    assert.ok(!tools.includes("Bash") && !tools.includes("Edit"), tools.join(","));
    assert.ok(tools.includes("Write"), tools.join(","));
  },
);

for (const sandbox of ["write", "full"] as const) {
  realToolTest(
    "claude",
    `bashCommandClamp at ${sandbox}: clamped commands run; others, read-only ones too, are denied and leave nothing`,
    async (bin) => {
      await using r = await rig(bin, claude, () => ({ text: "unused" }));
      const work = r.home.work;
      await Deno.writeTextFile(`${work}/secret.txt`, "the-secret-text\n");
      r.standin.respond(shellThenText("Bash", [
        "echo clamped-ok",
        "ls -a",
        `touch ${work}/outside.txt`,
        `mkdir ${work}/made`,
        "echo clamped-ok && touch also.txt",
        "ls -a; touch semi.txt",
        "pwd",
        "cat secret.txt",
      ], bashInput));
      const result = await r.provider.dispatch(
        request(r, sandbox, { bashCommandClamp: ["Bash(echo clamped-ok)", "Bash(ls:*)"] }),
      );
      const answered = r.standin.modelRequests().at(-1)!.toolResults;
      assert.equal(answered.length, 8, String(result.output));
      // In the order of the calls: a tool may answer them in any order.
      const results = answered.map((_, i) => answered.find((t) => t.id === `call_${i}`)!);
      assert.match(results[0]!.content, /clamped-ok/);
      assert.match(results[1]!.content, /secret\.txt/, "ls -a is clamped in");
      for (const denied of results.slice(2)) {
        assert.ok(denied.isError, denied.content);
        assert.match(denied.content, /clamped to a fixed set of command forms/, denied.content);
        assert.doesNotMatch(denied.content, /the-secret-text/);
      }
      for (const left of ["outside.txt", "made", "also.txt", "semi.txt"]) {
        assert.equal(await exists(`${work}/${left}`), false, left);
      }
    },
  );
}

/** Gemini CLI at the stand-in, with svc's Gemini home under the throw-away HOME. */
const gemini: ProviderAt = (bin, url, home) =>
  geminiProvider({
    command: bin,
    baseUrl: url,
    passEnv: [],
    env: { HOME: home.home, TMPDIR: home.tmp, GEMINI_API_KEY: "stand-in-key" },
    stateRoot: `${home.home}/svc_state`,
    sessionRoot: `${home.home}/sessions`,
    scratchRoot: home.tmp,
    timeoutMs: 120_000,
  });

/** Gemini's routing call (not streamed) gets the JSON it needs; the answer gets `answer`. */
function geminiReplies(answer: Responder): Responder {
  return (req) => req.stream ? answer(req) : { text: '{"reasoning":"x","model_choice":"flash"}' };
}

realToolTest(
  "gemini",
  "disallowedTools Bash and Write at write: the model is offered neither shell nor write_file",
  async (bin) => {
    await using r = await rig(bin, gemini, geminiReplies(() => ({ text: "done" })));
    await r.provider.dispatch(request(r, "write", { disallowedTools: ["Bash", "Write"] }));
    const tools = r.standin.modelRequests().find((q) => q.stream)!.tools;
    for (const gone of ["run_shell_command", "write_file", "invoke_agent"]) {
      assert.ok(!tools.includes(gone), tools.join(","));
    }
    assert.ok(tools.includes("replace") && tools.includes("read_file"), tools.join(","));
  },
);

for (const sandbox of ["write", "full"] as const) {
  realToolTest(
    "gemini",
    `bashCommandClamp at ${sandbox}: clamped commands run; others, chained or redirected, are denied`,
    async (bin) => {
      const commands = [
        "echo clamped-ok",
        "ls -a",
        "echo clamped-ok extra",
        "touch t1.txt",
        "echo clamped-ok; touch t2.txt",
        "ls -a && touch t3.txt",
        "echo clamped-ok > t4.txt",
        "ls $(touch t5.txt)",
        "pwd",
      ];
      await using r = await rig(
        bin,
        gemini,
        geminiReplies(shellThenText("run_shell_command", commands, (command) => ({ command }))),
      );
      await Deno.writeTextFile(`${r.home.work}/secret.txt`, "x\n");
      await r.provider.dispatch(
        request(r, sandbox, { bashCommandClamp: ["Bash(echo clamped-ok)", "Bash(ls:*)"] }),
      );
      const answered = r.standin.modelRequests().filter((q) => q.stream).at(-1)!.toolResults;
      const results = commands.map((_, i) => answered.find((t) => t.id === `call_${i}`)!);
      assert.match(results[0]!.content, /clamped-ok/);
      assert.match(results[1]!.content, /secret\.txt/);
      for (const [i, denied] of results.slice(2).entries()) {
        assert.match(denied.content, /denied by policy/, `${commands[i + 2]}: ${denied.content}`);
      }
      for (const n of [1, 2, 3, 4, 5]) {
        assert.equal(await exists(`${r.home.work}/t${n}.txt`), false, `t${n}.txt`);
      }
    },
  );
}

/** opencode at the stand-in's OpenAI-compatible endpoint, its state under the throw-away HOME. */
const opencode: ProviderAt = (bin, url, home) =>
  opencodeProvider({
    command: bin,
    baseUrl: `${url}/v1`,
    model: "standin/m1",
    timeoutMs: 120_000,
    env: {
      HOME: home.home,
      TMPDIR: home.tmp,
      XDG_CONFIG_HOME: `${home.home}/.config`,
      XDG_DATA_HOME: `${home.home}/.local/share`,
      XDG_CACHE_HOME: `${home.home}/.cache`,
      XDG_STATE_HOME: `${home.home}/.local/state`,
    },
    scratchRoot: home.tmp,
    sessionRoot: home.tmp,
  });

realToolTest(
  "opencode",
  "disallowedTools Bash and Read at full: the model is offered neither bash nor read",
  async (bin) => {
    await using r = await rig(bin, opencode, () => ({ text: "done" }));
    await r.provider.dispatch(request(r, "full", { disallowedTools: ["Bash", "Read"] }));
    const tools = r.standin.modelRequests()[0]!.tools;
    for (const gone of ["bash", "read", "task"]) assert.ok(!tools.includes(gone), tools.join(","));
    assert.ok(tools.includes("edit") || tools.includes("write"), tools.join(","));
  },
);

realToolTest(
  "opencode",
  "bashCommandClamp at full: clamped commands run; others, chained or redirected, are denied",
  async (bin) => {
    const commands = [
      "echo clamped-ok",
      "ls -a",
      "echo clamped-ok extra",
      "touch t1.txt",
      "echo clamped-ok; touch t2.txt",
      "ls -a && touch t3.txt",
      "echo clamped-ok > t4.txt",
      "ls $(touch t5.txt)",
      "pwd",
    ];
    await using r = await rig(
      bin,
      opencode,
      shellThenText("bash", commands, (command) => ({ command, description: "run it" })),
    );
    await Deno.writeTextFile(`${r.home.work}/secret.txt`, "x\n");
    const result = await r.provider.dispatch(
      request(r, "full", { bashCommandClamp: ["Bash(echo clamped-ok)", "Bash(ls:*)"] }),
    );
    const answered = r.standin.modelRequests().at(-1)!.toolResults;
    const results = commands.map((_, i) => answered.find((t) => t.id === `call_${i}`));
    assert.match(results[0]!.content, /clamped-ok/, String(result.output));
    assert.match(results[1]!.content, /secret\.txt/);
    for (const [i, denied] of results.slice(2).entries()) {
      assert.match(
        denied?.content ?? "",
        /a rule which prevents you from using this specific tool call/,
        commands[i + 2],
      );
    }
    for (const n of [1, 2, 3, 4, 5]) {
      assert.equal(await exists(`${r.home.work}/t${n}.txt`), false, `t${n}.txt`);
    }
  },
);

/** Rejects with an SvcError of `code` whose message matches. */
async function rejectsWith(promise: Promise<unknown>, code: string, message: RegExp) {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  assert.ok(error instanceof SvcError, `expected an SvcError, got ${error}`);
  assert.equal(error.code, code, error.message);
  assert.match(error.message, message);
}

/** Codex at the stand-in's Responses endpoint, its state under the throw-away HOME. */
const codex: ProviderAt = (bin, url, home) =>
  codexProvider({
    command: bin,
    baseUrl: `${url}/v1`,
    timeoutMs: 120_000,
    env: { HOME: home.home, TMPDIR: home.tmp, CODEX_API_KEY: "sk-standin-codex-key" },
    scratchRoot: home.tmp,
    sessionRoot: home.tmp,
  });

for (
  const [sandbox, options] of [
    ["full", { bashCommandClamp: ["Bash(ls:*)"] }],
    ["read-only", { bashCommandClamp: ["Bash(ls:*)"] }],
    ["write", { disallowedTools: ["Write"] }],
    ["read-only", { disallowedTools: ["Bash"] }],
  ] as [SandboxLevel, DispatchRequest["options"]][]
) {
  realToolTest(
    "codex",
    `${Object.keys(options)[0]} at ${sandbox} is refused before Codex starts, naming why`,
    async (bin) => {
      await using r = await rig(bin, codex, () => ({ text: "never asked" }));
      await rejectsWith(
        r.provider.dispatch({ ...request(r, sandbox, options), model: "gpt-5-codex" }),
        "invalid_argument",
        /^Cannot dispatch to codex: the call restricts its agent \(.*\) and Codex has no setting that .*; refused rather than run without the restriction$/,
      );
      assert.equal(r.standin.requests.length, 0);
    },
  );
}

realToolTest(
  "codex",
  "disallowedTools Write and Edit at read-only runs: the read-only sandbox makes them true",
  async (bin) => {
    await using r = await rig(bin, codex, () => ({ text: "read only answer" }));
    const result = await r.provider.dispatch({
      ...request(r, "read-only", { disallowedTools: ["Write", "Edit"] }),
      model: "gpt-5-codex",
    });
    assert.equal(result.output, "read only answer");
  },
);

export { rig, shellThenText };

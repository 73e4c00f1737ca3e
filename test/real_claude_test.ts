/**
 * The real Claude Code, driven through svc's `claudeProvider` against the stand-in model server
 * (Anthropic Messages, streamed), each test with a throw-away HOME: answers, structured output
 * through a workflow run, per-turn usage and cost of a session, the sandbox levels, cancellation,
 * authentication and rate-limit errors, an unknown session and a tool that hangs.
 */
import assert from "node:assert/strict";
import { claudeProvider, createDispatcher } from "../src/dispatch/mod.ts";
import { CLAUDE_DEFAULT_ENV } from "../src/dispatch/harness/claude.ts";
import { SvcError } from "../src/errors/mod.ts";
import type { Provider } from "../src/dispatch/mod.ts";
import { assertAllGone, harnessRequest, killAll, running } from "./harness_helpers.ts";
import { exists, runScript } from "./helpers.ts";
import { type ModelStandIn, type Responder, startModelStandIn } from "./model_standin/mod.ts";
import {
  type AgentHome,
  agentHome,
  realToolTest,
  toolThenText,
  until,
  worktreeCall,
} from "./real_agents.ts";

/** A stand-in, a throw-away HOME and a provider pointed at both. */
interface Rig extends AsyncDisposable {
  standin: ModelStandIn;
  home: AgentHome;
  provider: Provider;
}

const USAGE = { input: 100, output: 20, cacheRead: 50, cacheWrite: 10 };

/**
 * Starts a rig. The provider gets only the throw-away HOME, its temp directories and a fake key
 * (no host key: `passEnv` is empty); `env` adds to that, over svc's own defaults.
 */
async function rig(
  bin: string,
  responder: Responder,
  options: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Rig> {
  const standin = startModelStandIn(responder);
  const home = await agentHome();
  const provider = claudeProvider({
    command: bin,
    baseUrl: standin.url,
    passEnv: [],
    env: {
      HOME: home.home,
      TMPDIR: home.tmp,
      CLAUDE_CODE_TMPDIR: home.tmp,
      ANTHROPIC_API_KEY: "sk-ant-standin-key",
      ...options.env,
    },
    scratchRoot: home.tmp,
    sessionRoot: home.tmp,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
  return {
    standin,
    home,
    provider,
    async [Symbol.asyncDispose]() {
      await standin.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

/** Retries off: the tests that expect an error need not wait for Claude Code's backoff. */
const NO_RETRIES = { CLAUDE_CODE_MAX_RETRIES: "0" };

/**
 * The pids of the running processes whose working directory is `dir` (Claude Code and its
 * tools), only those whose command name is `name` when given.
 */
async function processesIn(dir: string, name?: string): Promise<number[]> {
  const script = `for p in /proc/[0-9]*; do
    [ "$(readlink "$p/cwd" 2>/dev/null)" = "$1" ] || continue
    [ -z "$2" ] || [ "$(cat "$p/comm" 2>/dev/null)" = "$2" ] && echo "\${p#/proc/}"
  done; true`;
  const output = await new Deno.Command("bash", {
    args: ["-c", script, "bash", dir, name ?? ""],
    stdout: "piped",
    stderr: "null",
  }).output();
  const pids = new TextDecoder().decode(output.stdout).split(/\s+/).filter(Boolean).map(Number);
  return await running(pids);
}

/** The tools a logged model request offered. */
function offered(standin: ModelStandIn): string[] {
  return standin.modelRequests()[0]?.tools ?? [];
}

async function rejectsWith(
  promise: Promise<unknown>,
  code: string,
  message: RegExp,
): Promise<SvcError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  assert.ok(error instanceof SvcError, `expected an SvcError, got ${error}`);
  assert.equal(error.code, code, error.message);
  assert.match(error.message, message);
  return error;
}

realToolTest(
  "claude",
  "a call reaches base_url and returns the text, the turn's usage with cache tokens, its cost, model and session id; nothing but /v1/messages is called",
  async (bin) => {
    await using r = await rig(bin, () => ({ text: "hello from the stand-in", usage: USAGE }));
    const result = await r.provider.dispatch(harnessRequest("Say hello", { cwd: r.home.work }));
    assert.equal(result.output, "hello from the stand-in");
    assert.deepEqual(result.usage, { input_tokens: 100 + 50 + 10, output_tokens: 20 });
    assert.ok(typeof result.cost_usd === "number" && result.cost_usd > 0, String(result.cost_usd));
    assert.equal(result.model, r.standin.modelRequests()[0]!.model);
    assert.match(String(result.session_id), /^[0-9a-f-]{36}$/);
    // The non-essential traffic (a HEAD of the base URL, update checks) is off by default.
    assert.deepEqual(
      [...new Set(r.standin.requests.map((q) => `${q.method} ${q.path}`))],
      ["POST /v1/messages"],
    );
    const first = r.standin.requests[0]!;
    assert.equal(first.headers["x-api-key"], "sk-ant-standin-key");
    assert.equal(first.query, "beta=true");
    assert.equal(r.standin.modelRequests()[0]!.prompt.trim(), "Say hello");
  },
);

realToolTest(
  "claude",
  "a schema call in a workflow run returns the stand-in's JSON as the value",
  async (bin) => {
    await using r = await rig(
      bin,
      (request) =>
        request.prompt.includes("JSON Schema")
          ? { text: '{"verdict":"ship","score":7}' }
          : { text: "not asked for JSON" },
    );
    const status = await runScript(
      `return await agent("Judge it", { provider: "claude", schema: { type: "object", properties: { verdict: { type: "string" }, score: { type: "integer" } }, required: ["verdict", "score"] } })`,
      { workdir: r.home.work },
      { dispatcher: createDispatcher({ providers: [r.provider], fakeLatencyMs: 0 }) },
    );
    assert.equal(status.state, "succeeded", JSON.stringify(status.error));
    assert.deepEqual(status.result, { verdict: "ship", score: 7 });
  },
);

realToolTest(
  "claude",
  "three session turns each report that turn's usage and cost, not the session's so far",
  async (bin) => {
    await using r = await rig(bin, () => ({ text: "noted", usage: USAGE }));
    const results = [];
    let session: string | undefined;
    for (const prompt of ["one", "two", "three"]) {
      const result = await r.provider.dispatch(harnessRequest(prompt, {
        cwd: r.home.work,
        ...(session !== undefined ? { resumeSession: session } : {}),
      }));
      session = result.session_id ?? undefined;
      results.push(result);
    }
    assert.equal(new Set(results.map((x) => x.session_id)).size, 1);
    const first = results[0]!;
    assert.ok(typeof first.cost_usd === "number" && first.cost_usd > 0);
    for (const result of results) {
      assert.deepEqual(result.usage, first.usage);
      assert.ok(Math.abs(result.cost_usd! - first.cost_usd!) < 1e-12, `${result.cost_usd}`);
    }
    // The third turn's request carries the whole conversation: it really was one session.
    assert.match(r.standin.modelRequests()[2]!.transcript, /one[\s\S]*two[\s\S]*three/);
  },
);

realToolTest(
  "claude",
  "a workflow run's three session turns add up to three turns' cost",
  async (bin) => {
    await using r = await rig(bin, () => ({ text: "noted", usage: USAGE }));
    const one = await r.provider.dispatch(harnessRequest("price one turn", { cwd: r.home.work }));
    const status = await runScript(
      `for (const p of ["one", "two", "three"]) await agent(p, { provider: "claude", session: "pair" }); return "done"`,
      { workdir: r.home.work },
      { dispatcher: createDispatcher({ providers: [r.provider], fakeLatencyMs: 0 }) },
    );
    assert.equal(status.state, "succeeded", JSON.stringify(status.error));
    const cost = status.journal.usage.cost_usd!;
    assert.ok(
      Math.abs(cost - 3 * one.cost_usd!) < 1e-9,
      `${cost} for three turns of ${one.cost_usd}`,
    );
    assert.equal(status.journal.usage.input_tokens, 3 * one.usage.input_tokens);
  },
);

realToolTest(
  "claude",
  "read-only offers no writing tool and a scripted Write creates nothing",
  async (bin) => {
    await using r = await rig(bin, () => ({ text: "unused" }), { env: NO_RETRIES });
    const file = `${r.home.work}/made.txt`;
    r.standin.respond(
      toolThenText([{ name: "Write", input: { file_path: file, content: "x\n" } }], USAGE),
    );
    const result = await r.provider.dispatch(
      harnessRequest("write it", { cwd: r.home.work, sandbox: "read-only" }),
    );
    const tools = offered(r.standin);
    for (const tool of ["Bash", "Edit", "Write", "NotebookEdit"]) {
      assert.ok(
        !tools.includes(tool),
        tool,
      );
    }
    assert.ok(tools.includes("Read"), tools.join(","));
    assert.match(String(result.output), /No such tool available: Write/);
    assert.equal(await exists(file), false);
  },
);

realToolTest(
  "claude",
  "write offers Write and Bash, writes inside the working directory and not outside it",
  async (bin) => {
    await using r = await rig(bin, () => ({ text: "unused" }), { env: NO_RETRIES });
    const inside = `${r.home.work}/inside.txt`;
    r.standin.respond(
      toolThenText([{ name: "Write", input: { file_path: inside, content: "in\n" } }], USAGE),
    );
    await r.provider.dispatch(
      harnessRequest("write inside", { cwd: r.home.work, sandbox: "write" }),
    );
    const tools = offered(r.standin);
    for (const tool of ["Bash", "Edit", "Write"]) assert.ok(tools.includes(tool), tool);
    assert.equal(await Deno.readTextFile(inside), "in\n");

    const outside = `${r.home.home}/outside.txt`;
    r.standin.respond(
      toolThenText([{ name: "Write", input: { file_path: outside, content: "out\n" } }], USAGE),
    );
    const result = await r.provider.dispatch(
      harnessRequest("write outside", { cwd: r.home.work, sandbox: "write" }),
    );
    assert.equal(await exists(outside), false, String(result.output));
  },
);

realToolTest(
  "claude",
  "full as root without IS_SANDBOX fails with the cause and the remedy, before any model request",
  async (bin) => {
    if (Deno.uid() !== 0) return; // The refusal only exists for root.
    await using r = await rig(bin, () => ({ text: "unused" }), { env: NO_RETRIES });
    await rejectsWith(
      r.provider.dispatch(harnessRequest("anything", { cwd: r.home.work, sandbox: "full" })),
      "provider_failed",
      /refuses sandbox "full" \(--dangerously-skip-permissions\) when it runs as root: run svc as a user other than root, or, .*providers\.claude\.env\.IS_SANDBOX = "1"/,
    );
    assert.equal(r.standin.requests.length, 0);
  },
);

realToolTest(
  "claude",
  "full with IS_SANDBOX=1 runs a shell command as the CI user and writes outside the working directory",
  async (bin) => {
    await using r = await rig(bin, () => ({ text: "unused" }), {
      env: { ...NO_RETRIES, IS_SANDBOX: "1" },
    });
    const outside = `${r.home.home}/who.txt`;
    r.standin.respond(toolThenText([{
      name: "Bash",
      input: { command: `id -u > '${outside}'`, description: "who am I" },
    }], USAGE));
    await r.provider.dispatch(harnessRequest("who", { cwd: r.home.work, sandbox: "full" }));
    assert.equal((await Deno.readTextFile(outside)).trim(), String(Deno.uid()));
  },
);

realToolTest(
  "claude",
  "aborting a call while the model hangs ends Claude Code's whole process tree",
  async (bin) => {
    await using r = await rig(bin, () => ({ hang: true }), { env: NO_RETRIES });
    const controller = new AbortController();
    const call = r.provider.dispatch(
      harnessRequest("wait forever", { cwd: r.home.work, signal: controller.signal }),
    );
    const outcome = call.then(() => "answered", (e: unknown) => e);
    await until(() => r.standin.requests.length > 0);
    const pids = await processesIn(r.home.work);
    try {
      assert.ok(pids.length > 0, "no process of the call was found");
      controller.abort(new Error("stop it"));
      const error = await outcome;
      assert.ok(error instanceof Error && error.message === "stop it", String(error));
      await assertAllGone(pids);
      assert.deepEqual(await processesIn(r.home.work), []);
    } finally {
      killAll(pids);
    }
  },
);

realToolTest(
  "claude",
  "a refused key fails fast as provider_unauthenticated with svc's default retries",
  async (bin) => {
    // svc's defaults only: Claude Code's own would retry the 401 for minutes, past the timeout.
    await using r = await rig(
      bin,
      () => ({ error: { status: 401, message: "invalid x-api-key" } }),
      { timeoutMs: 60_000 },
    );
    const started = Date.now();
    await rejectsWith(
      r.provider.dispatch(harnessRequest("hi", { cwd: r.home.work })),
      "provider_unauthenticated",
      /not authenticated/,
    );
    const seconds = (Date.now() - started) / 1000;
    assert.ok(seconds < 20, `${seconds} s`);
    assert.equal(r.standin.requests.length, Number(CLAUDE_DEFAULT_ENV.CLAUDE_CODE_MAX_RETRIES) + 1);
  },
);

realToolTest(
  "claude",
  "a 429 is retried after retry-after, then fails as provider_failed naming the status",
  async (bin) => {
    await using r = await rig(
      bin,
      () => ({ error: { status: 429, message: "slow down", headers: { "retry-after": "1" } } }),
      { env: { CLAUDE_CODE_MAX_RETRIES: "1" } },
    );
    const seen: number[] = [];
    r.standin.respond(() => {
      seen.push(Date.now());
      return { error: { status: 429, message: "slow down", headers: { "retry-after": "1" } } };
    });
    await rejectsWith(
      r.provider.dispatch(harnessRequest("hi", { cwd: r.home.work })),
      "provider_failed",
      /429.*slow down/,
    );
    assert.equal(seen.length, 2);
    assert.ok(seen[1]! - seen[0]! >= 900, `retried after ${seen[1]! - seen[0]!} ms`);
  },
);

realToolTest("claude", "an unknown session id fails with Claude Code's reason", async (bin) => {
  await using r = await rig(bin, () => ({ text: "unused" }), { env: NO_RETRIES });
  const id = "11111111-1111-4111-8111-111111111111";
  await rejectsWith(
    r.provider.dispatch(harnessRequest("go on", { cwd: r.home.work, resumeSession: id })),
    "provider_failed",
    new RegExp(`No conversation found with session ID: ${id}`),
  );
  assert.equal(r.standin.requests.length, 0);
});

realToolTest("claude", "a tool that hangs is killed with the call at its timeout", async (bin) => {
  await using r = await rig(bin, () => ({ text: "unused" }), {
    env: { ...NO_RETRIES, IS_SANDBOX: "1" },
    timeoutMs: 8_000,
  });
  r.standin.respond(toolThenText([{
    name: "Bash",
    input: { command: "tail -f /dev/null", description: "wait" },
  }], USAGE));
  const call = r.provider.dispatch(harnessRequest("hang", { cwd: r.home.work, sandbox: "full" }));
  const outcome = call.then(() => undefined, (e: unknown) => e);
  let pids: number[] = [];
  try {
    await until(async () => (await processesIn(r.home.work, "tail")).length > 0);
    pids = await processesIn(r.home.work);
    const error = await outcome;
    assert.ok(error instanceof SvcError && error.code === "provider_timeout", String(error));
    await assertAllGone(pids);
    assert.deepEqual(await processesIn(r.home.work), []);
  } finally {
    killAll(pids);
  }
});

realToolTest(
  "claude",
  "a workflow run's worktree call edits the worktree, not the repository, and keeps its diff",
  async (bin) => {
    // The Write goes to README.md in the directory Claude Code says it works in.
    await using r = await rig(bin, (request) => {
      if (request.toolResults.length > 0) {
        return { text: `edited: ${request.toolResults[0]!.content}` };
      }
      const cwd = /working directory: (\S+)/i.exec(request.system)?.[1];
      if (cwd === undefined) return { text: "no working directory in the system prompt" };
      return {
        toolCalls: [{
          name: "Write",
          input: { file_path: `${cwd}/NOTES.md`, content: "new\n" },
        }],
      };
    }, { env: NO_RETRIES });
    const { result, worktree: kept } = await worktreeCall(r.provider, "edit the readme", {
      work: r.home.work,
      home: r.home.home,
    });
    assert.match(String(result), /^edited: File created successfully/);
    assert.equal(kept.kept, true);
    assert.match(kept.diff ?? "", /NOTES\.md/);
    assert.equal(await Deno.readTextFile(`${kept.path}/NOTES.md`), "new\n");
    assert.equal(await exists(`${r.home.work}/NOTES.md`), false, "the repository is untouched");
  },
);

realToolTest(
  "claude",
  "a background sub-agent's answer reaches the call, and every model request's tokens are counted",
  async (bin) => {
    // Claude Code 2.1.337 runs an Agent call in the background: the tool answers "launched" at
    // once, the main loop ends its turn (one result line), and the sub-agent's notification
    // starts another turn (a second result line).
    const SUB = { input: 1000, output: 200 };
    await using r = await rig(bin, (request) => {
      if (request.system.includes("cc_is_subagent=true")) {
        return { text: "the sub-agent looked", usage: SUB };
      }
      if (request.transcript.includes("the sub-agent looked")) {
        return { text: "main heard the sub-agent", usage: USAGE };
      }
      if (request.toolResults.length > 0) return { text: "waiting for it", usage: USAGE };
      return {
        toolCalls: [{
          name: "Agent",
          input: { description: "look", prompt: "look around", subagent_type: "general-purpose" },
        }],
        usage: USAGE,
      };
    }, { env: NO_RETRIES });
    const result = await r.provider.dispatch(harnessRequest("delegate", { cwd: r.home.work }));
    assert.equal(result.output, "main heard the sub-agent");
    const requests = r.standin.modelRequests();
    assert.equal(requests.length, 4, requests.map((q) => q.prompt).join(" | "));
    const main = USAGE.input + USAGE.cacheRead + USAGE.cacheWrite;
    assert.deepEqual(result.usage, {
      input_tokens: 3 * main + SUB.input,
      output_tokens: 3 * USAGE.output + SUB.output,
    });
  },
);

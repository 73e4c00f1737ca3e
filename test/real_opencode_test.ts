/**
 * The real opencode, driven through svc's provider against the stand-in model server (Chat
 * Completions): a throw-away HOME per test, with its own TMPDIR and XDG directories. opencode
 * 1.18.33 has `@ai-sdk/openai-compatible` built in, so nothing is installed at first use.
 */
import assert from "node:assert/strict";
import { SvcError } from "../src/errors/mod.ts";
import { opencodeProvider } from "../src/dispatch/mod.ts";
import type { HarnessOptions } from "../src/dispatch/harness/run_harness.ts";
import type { Provider } from "../src/dispatch/types.ts";
import { assertAllGone, harnessRequest, killAll } from "./harness_helpers.ts";
import { exists } from "./helpers.ts";
import {
  type ModelStandIn,
  type Responder,
  startModelStandIn,
  type ToolCall,
} from "./model_standin/mod.ts";
import { type AgentHome, agentHome, realToolTest, toolThenText, until } from "./real_agents.ts";
import { assertWroteInWorktree, worktreeCall, writeInWorktree } from "./real_agents.ts";

/** The model every test names: a provider id opencode's catalog does not know. */
const MODEL = "standin/m1";
/** What the stand-in reports per request: 40 of the 100 prompt tokens cached, 5 of 20 reasoning. */
const USAGE = { input: 100, output: 20, cacheRead: 40, reasoning: 5 };
/** USD per million tokens, as a user's opencode.json declares them. */
const PRICE = { input: 1, output: 2, cache_read: 0.5 };
/** One request's cost at PRICE: 60 fresh input, 40 cached, 20 output (reasoning included). */
const REQUEST_COST = (60 * 1 + 40 * 0.5 + 20 * 2) / 1e6;

/** One test's world: a HOME, a stand-in, and opencode's environment inside that HOME. */
interface Rig extends AsyncDisposable {
  home: AgentHome;
  standin: ModelStandIn;
  /** HOME, TMPDIR and the XDG directories, all under the throw-away HOME. */
  env: Record<string, string>;
  /** An opencode provider for the real binary, pointed at the stand-in unless told otherwise. */
  provider(options?: HarnessOptions): Provider;
}

async function rig(bin: string, responder: Responder): Promise<Rig> {
  const home = await agentHome();
  const standin = startModelStandIn(responder);
  const env = {
    HOME: home.home,
    TMPDIR: home.tmp,
    XDG_CONFIG_HOME: `${home.home}/.config`,
    XDG_DATA_HOME: `${home.home}/.local/share`,
    XDG_CACHE_HOME: `${home.home}/.cache`,
    XDG_STATE_HOME: `${home.home}/.local/state`,
  };
  return {
    home,
    standin,
    env,
    provider: (options = {}) =>
      opencodeProvider({
        command: bin,
        baseUrl: `${standin.url}/v1`,
        model: MODEL,
        timeoutMs: 60_000,
        ...options,
        env: { ...env, ...options.env },
      }),
    async [Symbol.asyncDispose]() {
      await standin.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

/**
 * Writes the user's own global opencode.json (what svc must leave alone and keep working), with
 * the `$schema` line opencode itself adds to a configuration file that lacks it.
 */
async function userConfig(world: Rig, config: Record<string, unknown>): Promise<void> {
  await Deno.mkdir(`${world.env.XDG_CONFIG_HOME}/opencode`, { recursive: true });
  await Deno.writeTextFile(
    `${world.env.XDG_CONFIG_HOME}/opencode/opencode.json`,
    JSON.stringify({ $schema: "https://opencode.ai/config.json", ...config }),
  );
}

/** The user's price for the stand-in's model (the provider's endpoint left to svc's base_url). */
const PRICED = { provider: { standin: { models: { m1: { cost: PRICE } } } } };

/** The text answer of every request, naming the prompt; USAGE as the usage. */
const ANSWER: Responder = (request) => ({ text: `answer to: ${request.prompt}`, usage: USAGE });

/** The pids of the processes whose working directory is `dir` (opencode and its children). */
async function processesIn(dir: string): Promise<number[]> {
  const script = `for p in /proc/[0-9]*; do
    [ "$(readlink "$p/cwd" 2>/dev/null)" = "$1" ] && echo "\${p#/proc/}"
  done; true`;
  const output = await new Deno.Command("bash", {
    args: ["-c", script, "bash", dir],
    stdout: "piped",
    stderr: "null",
  }).output();
  return new TextDecoder().decode(output.stdout).split(/\s+/).filter(Boolean).map(Number)
    .filter((pid) => pid !== Deno.pid);
}

realToolTest(
  "opencode",
  "a call answers with the model's text and usage in one model request (no title request)",
  async (bin) => {
    await using world = await rig(bin, ANSWER);
    const result = await world.provider().dispatch(
      harnessRequest("Say hello", { cwd: world.home.work }),
    );
    assert.equal(result.output, "answer to: Say hello");
    assert.deepEqual(result.usage, { input_tokens: 100, output_tokens: 20 });
    assert.equal(result.model, MODEL);
    assert.match(String(result.session_id), /^ses_/);
    // Without --title, a new session makes a second request for its title that no event reports.
    const requests = world.standin.requests.map((r) => `${r.method} ${r.path}`);
    assert.deepEqual(requests, ["POST /v1/chat/completions"]);
    assert.equal(world.standin.modelRequests()[0]?.model, "m1");
  },
);

realToolTest(
  "opencode",
  "base_url leaves the user's own configuration working: their price for the model applies",
  async (bin) => {
    await using world = await rig(bin, ANSWER);
    await userConfig(world, PRICED);
    const before = await Deno.readTextFile(`${world.env.XDG_CONFIG_HOME}/opencode/opencode.json`);
    const result = await world.provider().dispatch(
      harnessRequest("Price this", { cwd: world.home.work }),
    );
    assert.equal(result.cost_usd, Math.round(REQUEST_COST * 1e9) / 1e9);
    const after = await Deno.readTextFile(`${world.env.XDG_CONFIG_HOME}/opencode/opencode.json`);
    assert.equal(after, before);
  },
);

realToolTest(
  "opencode",
  "without base_url the endpoint of the user's own configuration is used",
  async (bin) => {
    await using world = await rig(bin, ANSWER);
    await userConfig(world, {
      provider: {
        mine: {
          npm: "@ai-sdk/openai-compatible",
          options: { baseURL: `${world.standin.url}/v1`, apiKey: "sk-user-key" },
          models: { m2: { cost: PRICE } },
        },
      },
    });
    const provider = opencodeProvider({
      command: bin,
      model: "mine/m2",
      timeoutMs: 60_000,
      env: world.env,
    });
    const result = await provider.dispatch(harnessRequest("Hi", { cwd: world.home.work }));
    assert.equal(result.output, "answer to: Hi");
    assert.equal(result.cost_usd, Math.round(REQUEST_COST * 1e9) / 1e9);
    const [request] = world.standin.requests;
    assert.equal(request?.headers.authorization, "Bearer sk-user-key");
  },
);

realToolTest(
  "opencode",
  "a schema call gets the JSON instruction and answers with the JSON",
  async (bin) => {
    const value = { verdict: "ok", score: 3 };
    await using world = await rig(bin, () => ({ text: JSON.stringify(value) }));
    const schema = {
      type: "object",
      properties: { verdict: { type: "string" }, score: { type: "number" } },
      required: ["verdict", "score"],
    };
    const result = await world.provider().dispatch(
      harnessRequest("Judge it", { cwd: world.home.work, options: { schema } }),
    );
    assert.deepEqual(JSON.parse(String(result.output)), value);
    const prompt = world.standin.modelRequests()[0]?.prompt ?? "";
    assert.ok(prompt.startsWith("Judge it\n\nAnswer with a single JSON value"), prompt);
    assert.ok(prompt.includes(JSON.stringify(schema)));
  },
);

realToolTest(
  "opencode",
  "each turn of a three-turn session reports that turn's usage and cost",
  async (bin) => {
    await using world = await rig(bin, ANSWER);
    await userConfig(world, PRICED);
    const provider = world.provider();
    const first = await provider.dispatch(harnessRequest("Turn one", { cwd: world.home.work }));
    const turns = [first];
    for (const prompt of ["Turn two", "Turn three"]) {
      turns.push(
        await provider.dispatch(
          harnessRequest(prompt, {
            cwd: world.home.work,
            resumeSession: String(first.session_id),
          }),
        ),
      );
    }
    for (const turn of turns) {
      assert.equal(turn.session_id, first.session_id);
      assert.deepEqual(turn.usage, { input_tokens: 100, output_tokens: 20 });
      assert.equal(turn.cost_usd, Math.round(REQUEST_COST * 1e9) / 1e9);
    }
    const requests = world.standin.modelRequests();
    assert.equal(requests.length, 3);
    assert.ok(requests[2]?.transcript.includes("answer to: Turn two"));
    assert.equal(requests[2]?.prompt, "Turn three");
  },
);

realToolTest(
  "opencode",
  "read-only: a scripted write is not offered and writes nothing",
  async (bin) => {
    let file = "";
    await using world = await rig(bin, (request) =>
      toolThenText([{
        name: "write",
        input: { filePath: file, content: "written\n" },
      }])(request));
    file = `${world.home.work}/made.txt`;
    const result = await world.provider().dispatch(
      harnessRequest("Write it", { cwd: world.home.work, sandbox: "read-only" }),
    );
    assert.match(String(result.output), /unavailable tool 'write'/);
    assert.equal(await exists(file), false);
    const tools = world.standin.modelRequests()[0]?.tools ?? [];
    assert.ok(!tools.includes("write") && !tools.includes("edit") && !tools.includes("bash"));
  },
);

realToolTest(
  "opencode",
  "write: a file inside the working directory is written, one outside is refused to the model",
  async (bin) => {
    let target = "";
    await using world = await rig(bin, (request) =>
      toolThenText([{
        name: "write",
        input: { filePath: target, content: "written\n" },
      }])(request));
    const provider = world.provider();
    target = `${world.home.work}/inside.txt`;
    const inside = await provider.dispatch(
      harnessRequest("Write inside", { cwd: world.home.work, sandbox: "write" }),
    );
    assert.equal(inside.output, "tool said: Wrote file successfully.");
    assert.equal(await Deno.readTextFile(target), "written\n");
    target = `${world.home.home}/outside.txt`;
    const outside = await provider.dispatch(
      harnessRequest("Write outside", { cwd: world.home.work, sandbox: "write" }),
    );
    assert.match(
      String(outside.output),
      /^tool said: The user has specified a rule which prevents/,
    );
    assert.equal(await exists(target), false);
  },
);

realToolTest(
  "opencode",
  "full: a shell command runs (as root here) and a file outside the working directory is written",
  async (bin) => {
    let call: ToolCall = {
      name: "bash",
      input: { command: "id -u", description: "Print the user id" },
    };
    await using world = await rig(bin, (request) => toolThenText([call])(request));
    const provider = world.provider();
    const shell = await provider.dispatch(
      harnessRequest("Who am I", { cwd: world.home.work, sandbox: "full" }),
    );
    assert.equal(String(shell.output).trim(), `tool said: ${Deno.uid()}`);
    const outside = `${world.home.home}/outside.txt`;
    call = { name: "write", input: { filePath: outside, content: "anywhere\n" } };
    await provider.dispatch(harnessRequest("Write", { cwd: world.home.work, sandbox: "full" }));
    assert.equal(await Deno.readTextFile(outside), "anywhere\n");
  },
);

realToolTest(
  "opencode",
  "a tool call rejected for want of a permission fails the call and says why",
  async (bin) => {
    let file = "";
    await using world = await rig(bin, (request) =>
      toolThenText([{
        name: "read",
        input: { filePath: file },
      }])(request));
    // opencode asks before reading *.env files; nobody can answer in `run`, so it rejects.
    file = `${world.home.work}/.env`;
    await Deno.writeTextFile(file, "TOKEN=secret\n");
    await assert.rejects(
      world.provider().dispatch(harnessRequest("Read the env", { cwd: world.home.work })),
      (error: unknown) =>
        error instanceof SvcError && error.code === "provider_failed" &&
        /stopped after a tool call.*permission requested: read \(.*\.env\); auto-rejecting/
          .test(error.message),
    );
    assert.equal(world.standin.modelRequests().length, 1);
  },
);

realToolTest("opencode", "a 401 is a call that is not authenticated", async (bin) => {
  await using world = await rig(bin, () => ({
    error: { status: 401, message: "Incorrect API key provided" },
  }));
  await assert.rejects(
    world.provider().dispatch(harnessRequest("Hi", { cwd: world.home.work })),
    (error: unknown) => error instanceof SvcError && error.code === "provider_unauthenticated",
  );
  assert.equal(world.standin.modelRequests().length, 1);
});

realToolTest(
  "opencode",
  "a 429 is retried five times, obeying retry-after, then fails naming the status",
  async (bin) => {
    await using world = await rig(bin, () => ({
      error: { status: 429, message: "Rate limit reached", headers: { "retry-after": "0" } },
    }));
    await assert.rejects(
      world.provider().dispatch(harnessRequest("Hi", { cwd: world.home.work })),
      (error: unknown) =>
        error instanceof SvcError && error.code === "provider_failed" &&
        /Rate limit reached \(HTTP 429\)/.test(error.message),
    );
    assert.equal(world.standin.modelRequests().length, 6);
  },
);

realToolTest("opencode", "an unknown session fails and says so", async (bin) => {
  await using world = await rig(bin, ANSWER);
  await assert.rejects(
    world.provider().dispatch(
      harnessRequest("Hi", { cwd: world.home.work, resumeSession: "ses_0000000000000unknown" }),
    ),
    (error: unknown) =>
      error instanceof SvcError && error.code === "provider_failed" &&
      /Session not found/.test(error.message),
  );
  assert.deepEqual(world.standin.requests, []);
});

realToolTest(
  "opencode",
  "cancelling a call while the model hangs ends the whole process tree",
  async (bin) => {
    await using world = await rig(bin, () => ({ hang: true }));
    const controller = new AbortController();
    const call = world.provider().dispatch(
      harnessRequest("Hang", { cwd: world.home.work, signal: controller.signal }),
    );
    call.catch(() => {});
    await until(() => world.standin.requests.length > 0, "the model request");
    const pids = await processesIn(world.home.work);
    try {
      assert.ok(pids.length > 0, "opencode runs in the working directory");
      controller.abort(new Error("cancelled by the test"));
      await assert.rejects(call, /cancelled by the test/);
      await assertAllGone(pids);
    } finally {
      killAll(pids);
    }
  },
);

realToolTest("opencode", "a hanging model is killed by the call's timeout", async (bin) => {
  await using world = await rig(bin, () => ({ hang: true }));
  let pids: number[] = [];
  let ended = false;
  // Every process the call started, until its request hangs at the model: on a loaded machine
  // opencode may still be starting when the timeout comes, and then that start is what hangs.
  const watch = until(async () => {
    pids = [...new Set([...pids, ...(await processesIn(world.home.work))])];
    return world.standin.requests.length > 0 || ended;
  }, "the model request");
  try {
    await assert.rejects(
      world.provider({ timeoutMs: 5_000 }).dispatch(
        harnessRequest("Hang", { cwd: world.home.work }),
      ),
      (error: unknown) => error instanceof SvcError && error.code === "provider_timeout",
    );
    ended = true;
    await watch;
    assert.ok(pids.length > 0);
    await assertAllGone(pids);
  } finally {
    killAll(pids);
  }
});

realToolTest(
  "opencode",
  "svc's runs fetch no model catalog (the default environment turns it off)",
  async (bin) => {
    await using world = await rig(bin, ANSWER);
    // The catalog's address, pointed at the stand-in: a refresh would show as GET /api.json.
    const provider = world.provider({ env: { OPENCODE_MODELS_URL: world.standin.url } });
    await provider.dispatch(harnessRequest("Hi", { cwd: world.home.work }));
    assert.deepEqual(world.standin.requests.map((r) => r.path), ["/v1/chat/completions"]);
  },
);

realToolTest(
  "opencode",
  "a workflow run's worktree call writes in the worktree, not the repository, and keeps its diff",
  async (bin) => {
    await using r = await rig(bin, () => ({ text: "unused" }));
    r.standin.respond(
      writeInWorktree(r.home.home, "write", (file) => ({ filePath: file, content: "new\n" })),
    );
    const provider = r.provider();
    const call = await worktreeCall(provider, "write the notes", {
      work: r.home.work,
      home: r.home.home,
    });
    await assertWroteInWorktree(call, r.home.work);
  },
);

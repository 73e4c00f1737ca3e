/**
 * The real Codex command line, driven through svc's `codexProvider` against the stand-in model
 * server (OpenAI Responses): text, structured output, sessions, sandbox levels, cancellation,
 * errors. Each test has a throw-away HOME (Codex keeps its state in `HOME/.codex`) with its own
 * TMPDIR inside, so that CODEX_HOME never lies under the temp directory.
 */
import assert from "node:assert/strict";
import { codexProvider } from "../src/dispatch/mod.ts";
import { CODEX, createHarnessProvider } from "../src/dispatch/harness/mod.ts";
import type { DispatchRequest, DispatchResult } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { type Responder, startModelStandIn } from "./model_standin/mod.ts";
import { assertAllGone, harnessRequest, killAll } from "./harness_helpers.ts";
import { exists, processesMentioning } from "./helpers.ts";
import { agentHome, realToolTest, worktreeCall } from "./real_agents.ts";

const KEY = "sk-standin-codex-key";

/** A stand-in, a throw-away HOME and the provider pointed at both; disposing ends them all. */
async function setup(bin: string, responder: Responder, timeoutMs = 60_000) {
  const standin = startModelStandIn(responder);
  const home = await agentHome();
  const provider = codexProvider({
    command: bin,
    baseUrl: `${standin.url}/v1`,
    timeoutMs,
    // Codex retries 429s and broken streams with backoff: a test wants the first answer.
    extraArgs: [
      "-c",
      "model_providers.svc.request_max_retries=0",
      "-c",
      "model_providers.svc.stream_max_retries=0",
    ],
    env: { HOME: home.home, TMPDIR: home.tmp, CODEX_API_KEY: KEY },
    scratchRoot: home.tmp,
    sessionRoot: home.tmp,
  });
  return {
    standin,
    home,
    provider,
    dispatch: (prompt: string, overrides: Partial<DispatchRequest> = {}) =>
      provider.dispatch(
        harnessRequest(prompt, { cwd: home.work, model: "gpt-5-codex", ...overrides }),
      ),
    async [Symbol.asyncDispose]() {
      await standin.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

/** Answers a prompt holding `RUN{{command}}` with Codex's shell tool, then with what it printed. */
const SHELL: Responder = (request) => {
  if (request.toolResults.length > 0) {
    return { text: `ran: ${request.toolResults.map((result) => result.content).join("\n")}` };
  }
  const command = /RUN\{\{(.*?)\}\}/s.exec(request.prompt)?.[1];
  if (command === undefined) return { text: "no command" };
  return { toolCalls: [{ name: "exec_command", input: { cmd: command } }] };
};

function rejection(code: string, pattern: RegExp) {
  return (error: unknown) => {
    assert.ok(error instanceof SvcError, String(error));
    assert.equal(error.code, code, error.message);
    assert.match(error.message, pattern);
    return true;
  };
}

realToolTest(
  "codex",
  "a text answer arrives through the base URL with svc's key, its usage and thread",
  async (bin) => {
    await using t = await setup(bin, () => ({ text: "hello from the stand-in" }));
    const result = await t.dispatch("Say hello");
    assert.equal(result.output, "hello from the stand-in");
    assert.deepEqual(result.usage, { input_tokens: 13, output_tokens: 6 });
    assert.equal(result.cost_usd, null);
    assert.match(String(result.session_id), /^[0-9a-f-]{36}$/);
    const [request] = t.standin.modelRequests();
    assert.equal(request?.path, "/v1/responses");
    assert.equal(request?.prompt.trim(), "Say hello");
    assert.equal(request?.model, "gpt-5-codex");
    assert.equal(request?.headers.authorization, `Bearer ${KEY}`);
    assert.ok(request?.tools.includes("exec_command"), request?.tools.join(","));
    // svc's switch of Codex's analytics reaches the request's own metadata.
    const metadata = JSON.parse(
      String(
        (request?.body as { client_metadata: Record<string, string> }).client_metadata[
          "x-codex-turn-metadata"
        ],
      ),
    );
    assert.equal(metadata.analytics_enabled, false);
    // Only model requests: no other traffic reached the endpoint.
    assert.deepEqual(t.standin.requests.map((r) => `${r.method} ${r.path}`), [
      "POST /v1/responses",
    ]);
  },
);

realToolTest(
  "codex",
  "usage counts the cached, cache-written and reasoning tokens once",
  async (bin) => {
    await using t = await setup(bin, () => ({
      text: "ok",
      usage: { input: 100, output: 50, cacheRead: 40, cacheWrite: 30, reasoning: 20 },
    }));
    const result = await t.dispatch("Count");
    assert.deepEqual(result.usage, { input_tokens: 100, output_tokens: 50 });
  },
);

realToolTest(
  "codex",
  "a schema call gets the schema in its prompt and answers with the JSON",
  async (bin) => {
    await using t = await setup(bin, (request) => ({
      text: request.prompt.includes('"required":["verdict"]') ? '{"verdict":"ship"}' : "no schema",
    }));
    const schema = {
      type: "object",
      properties: { verdict: { type: "string" } },
      required: ["verdict"],
    };
    const result = await t.dispatch("Review it", { options: { schema } });
    assert.equal(result.output, '{"verdict":"ship"}');
  },
);

realToolTest(
  "codex",
  "each turn of a three-turn session records that turn's usage, not the thread's total",
  async (bin) => {
    await using t = await setup(bin, () => ({ text: "turn answered" }));
    const first = await t.dispatch("Turn one");
    const thread = String(first.session_id);
    const results: DispatchResult[] = [first];
    for (const prompt of ["Turn two", "Turn three"]) {
      results.push(await t.dispatch(prompt, { resumeSession: thread }));
    }
    // Codex itself reports 13/6, 26/12, 39/18: the thread's running total.
    assert.deepEqual(results.map((r) => r.usage), [
      { input_tokens: 13, output_tokens: 6 },
      { input_tokens: 13, output_tokens: 6 },
      { input_tokens: 13, output_tokens: 6 },
    ]);
    assert.deepEqual(results.map((r) => r.session_id), [thread, thread, thread]);
    // The third request carries the whole conversation: the thread really was resumed.
    const last = t.standin.modelRequests().at(-1)!;
    assert.match(last.transcript, /Turn one[\s\S]*Turn two[\s\S]*Turn three/);
  },
);

realToolTest("codex", "read-only: a shell command cannot write a file", async (bin) => {
  await using t = await setup(bin, SHELL);
  const result = await t.dispatch("RUN{{echo hi > ro.txt; echo finished}}", {
    sandbox: "read-only",
  });
  assert.match(String(result.output), /Read-only file system/);
  assert.equal(await exists(`${t.home.work}/ro.txt`), false);
});

realToolTest(
  "codex",
  "write: a shell command writes inside the working directory and not outside, /tmp and TMPDIR included",
  async (bin) => {
    await using t = await setup(bin, SHELL);
    const outside = `${t.home.home}/outside.txt`;
    const temp = `${t.home.tmp}/temp.txt`;
    await t.dispatch("RUN{{echo hi > inside.txt}}", { sandbox: "write" });
    assert.equal(await Deno.readTextFile(`${t.home.work}/inside.txt`), "hi\n");
    // HOME lies under /tmp here: Codex's workspace-write alone would let both writes through.
    const result = await t.dispatch(`RUN{{echo hi > ${outside}; echo hi > ${temp}}}`, {
      sandbox: "write",
    });
    assert.equal(
      String(result.output).match(/Read-only file system/g)?.length,
      2,
      String(result.output),
    );
    assert.equal(await exists(outside), false);
    assert.equal(await exists(temp), false);
  },
);

realToolTest(
  "codex",
  "full: a shell command writes outside the working directory (as root too)",
  async (bin) => {
    await using t = await setup(bin, SHELL);
    const outside = `${t.home.home}/outside.txt`;
    await t.dispatch(`RUN{{echo hi > ${outside}}}`, { sandbox: "full" });
    assert.equal(await Deno.readTextFile(outside), "hi\n");
  },
);

realToolTest("codex", "cancelling a running call ends the real process tree", async (bin) => {
  await using t = await setup(bin, () => ({ hang: true }));
  const controller = new AbortController();
  const call = t.dispatch("Hang", { signal: controller.signal });
  const outcome = call.then(() => "answered", (error: unknown) => error);
  let pids: number[] = [];
  try {
    const deadline = Date.now() + 30_000;
    while (t.standin.modelRequests().length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Every process of the call names the stand-in's port on its command line (the base URL).
    pids = (await processesMentioning(t.standin.url)).map((line) =>
      Number(line.trim().split(/\s+/)[0])
    );
    assert.ok(pids.length >= 2, `expected the shim and codex itself, found ${pids.join(", ")}`);
    controller.abort(new Error("cancelled by the test"));
    const error = await outcome;
    assert.ok(error instanceof Error && error.message === "cancelled by the test", String(error));
    await assertAllGone(pids);
  } finally {
    controller.abort();
    await outcome;
    killAll(pids);
  }
});

realToolTest("codex", "a hang is killed by the call's timeout", async (bin) => {
  await using t = await setup(bin, () => ({ hang: true }), 3_000);
  const started = Date.now();
  await assert.rejects(
    t.dispatch("Hang"),
    rejection("provider_timeout", /gave no answer within 3 s/),
  );
  assert.ok(Date.now() - started < 15_000);
  assert.deepEqual(await processesMentioning(t.standin.url), []);
});

realToolTest("codex", "a 401 from the endpoint is an authentication failure", async (bin) => {
  await using t = await setup(
    bin,
    () => ({ error: { status: 401, message: "Incorrect API key provided" } }),
  );
  await assert.rejects(
    t.dispatch("Hello"),
    rejection("provider_unauthenticated", /not authenticated/),
  );
});

realToolTest("codex", "a 429 fails the call with the endpoint's message", async (bin) => {
  await using t = await setup(bin, () => ({
    error: {
      status: 429,
      message: "Rate limit reached for gpt-5-codex",
      headers: { "retry-after": "0" },
    },
  }));
  await assert.rejects(t.dispatch("Hello"), rejection("provider_failed", /Rate limit reached|429/));
});

realToolTest("codex", "an unknown thread id fails the call and names it", async (bin) => {
  await using t = await setup(bin, () => ({ text: "never" }));
  const thread = "01a2143c-fb06-70d0-973b-ead8d4c54a7c";
  await assert.rejects(
    t.dispatch("Continue", { resumeSession: thread }),
    rejection("provider_failed", /01a2143c-fb06-70d0-973b-ead8d4c54a7c|no rollout|not found/i),
  );
  assert.equal(t.standin.modelRequests().length, 0);
});

realToolTest("codex", "a stream that breaks mid-answer fails the call", async (bin) => {
  await using t = await setup(bin, () => ({ text: "half an answer", broken: true }));
  await assert.rejects(t.dispatch("Hello"), rejection("provider_failed", /stream disconnected/));
});

realToolTest(
  "codex",
  "a workflow run's worktree call writes in the worktree, not the repository, and keeps its diff",
  async (bin) => {
    await using t = await setup(bin, SHELL);
    const { result, worktree } = await worktreeCall(t.provider, "RUN{{echo new > NOTES.md}}", {
      work: t.home.work,
      home: t.home.home,
    });
    assert.match(String(result), /^ran: /);
    assert.equal(worktree.kept, true);
    assert.match(worktree.diff ?? "", /NOTES\.md/);
    assert.equal(await Deno.readTextFile(`${worktree.path}/NOTES.md`), "new\n");
    assert.equal(await exists(`${t.home.work}/NOTES.md`), false, "the repository is untouched");
  },
);

/**
 * A provider whose Codex home is the default `~/.codex` with HOME under the temp directory, as
 * on a machine whose HOME lies in /tmp: `env` adds to HOME and the key (no TMPDIR of the test's
 * own unless `env` names one), svc's state root under HOME too (SVC_HOME may lie in /tmp).
 */
async function homeInTemp(
  bin: string,
  responder: Responder,
  env: (home: string) => Record<string, string> = () => ({}),
) {
  const standin = startModelStandIn(responder);
  const home = await agentHome();
  await Deno.mkdir(`${home.home}/.codex`);
  // The user's own configuration, which must still reach Codex.
  await Deno.writeTextFile(
    `${home.home}/.codex/config.toml`,
    'developer_instructions = "USER-CONFIG-MARKER: kept from the user\'s config.toml"\n',
  );
  await Deno.writeTextFile(`${home.work}/note.txt`, "the note's text\n");
  const provider = codexProvider({
    command: bin,
    baseUrl: `${standin.url}/v1`,
    extraArgs: ["-c", "model_providers.svc.request_max_retries=0"],
    env: { HOME: home.home, CODEX_API_KEY: KEY, ...env(home.home) },
    scratchRoot: home.tmp,
    sessionRoot: home.tmp,
    stateRoot: `${home.home}/svc-state`,
  });
  return {
    standin,
    home,
    dispatch: (prompt: string, overrides: Partial<DispatchRequest> = {}) =>
      provider.dispatch(
        harnessRequest(prompt, { cwd: home.work, model: "gpt-5-codex", ...overrides }),
      ),
    async [Symbol.asyncDispose]() {
      await standin.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

realToolTest(
  "codex",
  "CODEX_HOME under the temp directory: a read-only shell command runs and its output reaches the model, with the user's config",
  async (bin) => {
    // HOME lies under the temp directory (TMPDIR, else /tmp), and so does svc's state root.
    const temp = Deno.env.get("TMPDIR") || "/tmp";
    await using t = await homeInTemp(bin, SHELL);
    assert.ok(t.home.home.startsWith(`${temp.replace(/\/+$/, "")}/`), t.home.home);
    const result = await t.dispatch("RUN{{cat note.txt}}", { sandbox: "read-only" });
    const results = t.standin.modelRequests().flatMap((r) => r.toolResults.map((x) => x.content));
    assert.ok(results.some((content) => content.includes("the note's text")), results.join("\n"));
    assert.doesNotMatch(results.join("\n"), /execvp codex-linux-sandbox/);
    assert.match(String(result.output), /the note's text/);
    // The helper lives in the user's own Codex home, whose configuration Codex still read.
    // (0.171 names its directory `tmp/arg0-linux`, earlier versions `tmp/arg0`.)
    const helperDirs = await Array.fromAsync(Deno.readDir(`${t.home.home}/.codex/tmp`));
    assert.ok(helperDirs.some((entry) => entry.name.startsWith("arg0")), "no helper directory");
    const sent = JSON.stringify(t.standin.requests.map((r) => r.body));
    assert.match(sent, /USER-CONFIG-MARKER/);
  },
);

realToolTest(
  "codex",
  "CODEX_HOME under a TMPDIR the configuration fixes: read-only and write are refused before Codex starts, naming both; full runs",
  async (bin) => {
    // The configuration fixes TMPDIR at HOME itself, which holds ~/.codex.
    await using u = await homeInTemp(bin, SHELL, (home) => ({ TMPDIR: home }));
    const codexHome = `${u.home.home}/.codex`;
    for (const sandbox of ["read-only", "write"] as const) {
      await assert.rejects(
        u.dispatch("RUN{{cat note.txt}}", { sandbox }),
        rejection(
          "unavailable",
          new RegExp(
            `CODEX_HOME ${codexHome} lies under the temp directory ${u.home.home} \\(TMPDIR\\)`,
          ),
        ),
      );
    }
    assert.equal(u.standin.requests.length, 0, "nothing reached the model");
    const full = await u.dispatch("RUN{{echo full-ran}}", { sandbox: "full" });
    assert.match(String(full.output), /full-ran/);
  },
);

realToolTest(
  "codex",
  "without svc's temp directory, Codex's refused helper fails a read-only call rather than answering from failed commands",
  async (bin) => {
    // The bare tool, without the provider's preparation: Codex makes no helper here.
    const standin = startModelStandIn(SHELL);
    await using home = await agentHome();
    try {
      await Deno.writeTextFile(`${home.work}/note.txt`, "the note's text\n");
      const provider = createHarnessProvider(CODEX, {
        command: bin,
        baseUrl: `${standin.url}/v1`,
        env: { HOME: home.home, CODEX_API_KEY: KEY },
        scratchRoot: home.tmp,
        sessionRoot: home.tmp,
      });
      await assert.rejects(
        provider.dispatch(
          harnessRequest("RUN{{cat note.txt}}", {
            cwd: home.work,
            model: "gpt-5-codex",
            sandbox: "read-only",
          }),
        ),
        rejection("provider_failed", /Refusing to create helper binaries under temporary dir/),
      );
      // What the model was told: the command never ran.
      const results = standin.modelRequests().flatMap((r) => r.toolResults.map((x) => x.content));
      assert.match(results.join("\n"), /execvp codex-linux-sandbox/);
    } finally {
      await standin.close();
    }
  },
);

/**
 * The real Gemini CLI driven through svc's `geminiProvider` against the stand-in model server:
 * every call runs in a throw-away HOME (its TMPDIR inside), with the base URL mapped by svc
 * itself (no settings file written by the test, except the operator's retry switch).
 */
import assert from "node:assert/strict";
import { geminiProvider, type Provider } from "../src/dispatch/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import type { HarnessOptions } from "../src/dispatch/harness/run_harness.ts";
import { harnessRequest } from "./harness_helpers.ts";
import { exists, processesMentioning } from "./helpers.ts";
import {
  type ModelRequest,
  type ModelStandIn,
  type Responder,
  startModelStandIn,
} from "./model_standin/mod.ts";
import { type AgentHome, agentHome, realToolTest } from "./real_agents.ts";
import { assertWroteInWorktree, worktreeCall, writeInWorktree } from "./real_agents.ts";

/** A throw-away HOME, a stand-in, and a Gemini provider wired to both. */
interface Rig extends AsyncDisposable {
  home: AgentHome;
  standin: ModelStandIn;
  provider: Provider;
  /** The binary's path as the processes show it (a link under HOME: a marker for `ps`). */
  bin: string;
  /** The main model requests (streamed), oldest first. */
  answers(): ModelRequest[];
}

async function rig(
  realBin: string,
  responder: Responder,
  options: Partial<HarnessOptions> = {},
): Promise<Rig> {
  const home = await agentHome();
  const standin = startModelStandIn(responder);
  const bin = `${home.home}/bin/gemini`;
  await Deno.mkdir(`${home.home}/bin`);
  await Deno.symlink(realBin, bin);
  const provider = geminiProvider({
    command: bin,
    baseUrl: standin.url,
    passEnv: [],
    env: { HOME: home.home, TMPDIR: home.tmp, GEMINI_API_KEY: "stand-in-key" },
    stateRoot: `${home.home}/svc_state`,
    sessionRoot: `${home.home}/sessions`,
    scratchRoot: home.tmp,
    timeoutMs: 60_000,
    ...options,
  });
  return {
    home,
    standin,
    provider,
    bin,
    answers: () => standin.modelRequests().filter((r) => r.stream),
    async [Symbol.asyncDispose]() {
      await standin.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

/** The error a promise rejects with. */
async function rejection(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof SvcError, `not an SvcError: ${error}`);
    return error;
  }
  assert.fail("the call did not fail");
}

realToolTest(
  "gemini",
  "a call in a directory nobody trusted answers, routed, naming the model that answered",
  async (bin) => {
    await using r = await rig(bin, () => ({ text: "hello from the stand-in" }));
    const result = await r.provider.dispatch(harnessRequest("Say hello", { cwd: r.home.work }));
    assert.equal(result.output, "hello from the stand-in");
    const [router, ...rest] = r.standin.modelRequests();
    // Without a model, Gemini asks its router first (a JSON answer), then the chosen model.
    assert.equal(router?.stream, false);
    assert.equal(rest.length, 1);
    // Router and answer used the same tokens: only roles.main tells which one answered.
    assert.notEqual(router!.model, rest[0]!.model);
    assert.equal(result.model, rest[0]!.model);
    assert.deepEqual(result.usage, { input_tokens: 2 * 13, output_tokens: 2 * 6 });
    assert.equal(r.answers()[0]!.headers["x-goog-api-key"], "stand-in-key");
    // svc's settings live in its own Gemini home, not in the user's ~/.gemini.
    assert.equal(await exists(`${r.home.home}/.gemini/settings.json`), false);
    const settings = JSON.parse(
      await Deno.readTextFile(`${r.home.home}/svc_state/gemini/.gemini/settings.json`),
    );
    assert.equal(settings.security.auth.selectedType, "gemini-api-key");
    assert.equal(settings.privacy.usageStatisticsEnabled, false);
  },
);

realToolTest("gemini", "a schema call with a model answers its JSON, unrouted", async (bin) => {
  await using r = await rig(bin, () => ({ text: '{"answer":42}' }));
  const result = await r.provider.dispatch(harnessRequest("What is six times seven?", {
    cwd: r.home.work,
    options: { model: "gemini-2.5-flash", schema: { type: "object" } },
  }));
  assert.equal(result.output, '{"answer":42}');
  assert.equal(result.model, "gemini-2.5-flash");
  const requests = r.standin.modelRequests();
  assert.deepEqual(requests.map((q) => [q.model, q.stream]), [["gemini-2.5-flash", true]]);
  assert.match(requests[0]!.prompt, /valid against this JSON Schema/);
});

realToolTest(
  "gemini",
  "each turn of a three-turn session records that turn's usage",
  async (bin) => {
    let turn = 0;
    await using r = await rig(bin, () => {
      turn++;
      return { text: `turn ${turn}`, usage: { input: 100 * turn, output: turn, reasoning: 1 } };
    }, { model: "gemini-2.5-flash" });
    let session: string | undefined;
    for (const n of [1, 2, 3]) {
      const result = await r.provider.dispatch(harnessRequest(`Turn ${n}`, {
        options: { session: "s1" },
        ...(session !== undefined ? { resumeSession: session } : {}),
      }));
      assert.equal(result.output, `turn ${n}`);
      assert.deepEqual(result.usage, { input_tokens: 100 * n, output_tokens: n + 1 });
      session ??= result.session_id ?? undefined;
      assert.equal(result.session_id, session);
    }
    // The later turns carried the earlier ones.
    assert.match(r.answers()[2]!.transcript, /Turn 1[\s\S]*turn 1[\s\S]*Turn 2[\s\S]*Turn 3/);
  },
);

/** Scripts one tool call per prompt `TOOL <name> <json input>`, then a text answer. */
const TOOL_CALLER: Responder = (request) => {
  const match = /^TOOL (\S+) (.+)$/m.exec(request.prompt);
  if (match && request.toolResults.length === 0) {
    return { toolCalls: [{ name: match[1]!, input: JSON.parse(match[2]!) }] };
  }
  return { text: `done: ${request.toolResults.map((t) => t.content).join(" ")}` };
};

realToolTest("gemini", "read-only cannot write, write only inside, full anywhere", async (bin) => {
  await using r = await rig(bin, TOOL_CALLER, { model: "gemini-2.5-flash" });
  const inside = `${r.home.work}/inside.txt`;
  const outside = `${r.home.home}/outside.txt`;
  const write = (path: string) =>
    `TOOL write_file ${JSON.stringify({ file_path: path, content: "x" })}`;
  const shell = (path: string) =>
    `TOOL run_shell_command ${JSON.stringify({ command: `echo x > ${path}` })}`;
  const call = (prompt: string, sandbox: "read-only" | "write" | "full") =>
    r.provider.dispatch(harnessRequest(prompt, { cwd: r.home.work, sandbox }));

  await call(write(inside), "read-only");
  await call(shell(inside), "read-only");
  assert.equal(await exists(inside), false);
  assert.ok(!r.answers()[0]!.tools.includes("write_file"));

  await call(write(outside), "write");
  await call(shell(outside), "write");
  assert.equal(await exists(outside), false);
  await call(write(inside), "write");
  assert.equal(await Deno.readTextFile(inside), "x");

  await call(shell(outside), "full");
  assert.equal((await Deno.readTextFile(outside)).trim(), "x");
});

realToolTest("gemini", "cancelling a running call ends its whole process tree", async (bin) => {
  await using r = await rig(bin, () => ({ hang: true }), { model: "gemini-2.5-flash" });
  const abort = new AbortController();
  const call = r.provider.dispatch(
    harnessRequest("Wait", { cwd: r.home.work, signal: abort.signal }),
  );
  const deadline = Date.now() + 30_000;
  while (r.answers().length === 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  let running: string[];
  try {
    running = await processesMentioning(r.bin);
  } finally {
    abort.abort(new Error("cancelled by the test"));
  }
  await assert.rejects(call, /cancelled by the test/);
  // Gemini relaunches itself as a child node process: both ran, both ended.
  assert.equal(running.length, 2, `expected gemini and its child: ${running.join(" | ")}`);
  assert.deepEqual(await processesMentioning(r.bin), []);
});

realToolTest("gemini", "a hang is killed by the call's timeout", async (bin) => {
  await using r = await rig(bin, () => ({ hang: true }), {
    model: "gemini-2.5-flash",
    timeoutMs: 8_000,
  });
  const error = await rejection(r.provider.dispatch(harnessRequest("Wait", { cwd: r.home.work })));
  assert.equal(error.code, "provider_timeout");
  assert.equal(r.answers().length, 1);
  assert.deepEqual(await processesMentioning(r.bin), []);
});

realToolTest("gemini", "a 401 or a 403 is provider_unauthenticated", async (bin) => {
  let status = 401;
  await using r = await rig(
    bin,
    () => ({ error: { status, message: "the gateway refused the request" } }),
    {
      model: "gemini-2.5-flash",
    },
  );
  for (const code of [401, 403]) {
    status = code;
    const error = await rejection(r.provider.dispatch(harnessRequest("Hi", { cwd: r.home.work })));
    assert.equal(error.code, "provider_unauthenticated", `HTTP ${code}: ${error.message}`);
  }
  assert.equal(r.answers().length, 2);
});

realToolTest(
  "gemini",
  "a 429 fails fast with the API's message when the operator turns retries off",
  async (bin) => {
    await using r = await rig(bin, () => ({
      error: {
        status: 429,
        message: "Resource has been exhausted",
        headers: { "retry-after": "1" },
      },
    }), { model: "gemini-2.5-flash" });
    // The operator's key in svc's Gemini settings is kept beside svc's own.
    const gemini = `${r.home.home}/svc_state/gemini/.gemini`;
    await Deno.mkdir(gemini, { recursive: true });
    await Deno.writeTextFile(`${gemini}/settings.json`, '{"general":{"maxAttempts":1}}');
    const started = Date.now();
    const error = await rejection(r.provider.dispatch(harnessRequest("Hi", { cwd: r.home.work })));
    assert.equal(error.code, "provider_failed");
    assert.match(
      error.message,
      /gemini reported an error: the model API answered HTTP 429: Resource has been exhausted/,
    );
    assert.equal(r.answers().length, 1);
    assert.ok(Date.now() - started < 20_000);
  },
);

realToolTest("gemini", "an unknown session fails saying so", async (bin) => {
  await using r = await rig(bin, () => ({ text: "never" }), { model: "gemini-2.5-flash" });
  const error = await rejection(r.provider.dispatch(harnessRequest("Go on", {
    cwd: r.home.work,
    resumeSession: "0b5e1a8c-1111-4222-8333-944455556666",
  })));
  assert.equal(error.code, "provider_failed");
  assert.match(
    error.message,
    /gemini reported an error: cannot resume the session: No previous sessions found/,
  );
  assert.equal(r.standin.modelRequests().length, 0);
});

realToolTest(
  "gemini",
  "a workflow run's worktree call writes in the worktree, not the repository, and keeps its diff",
  async (bin) => {
    // A named model: no routing request for the scripted answer to confuse.
    await using r = await rig(bin, () => ({ text: "unused" }), { model: "gemini-2.5-flash" });
    r.standin.respond(
      writeInWorktree(r.home.home, "write_file", (file) => ({ file_path: file, content: "new\n" })),
    );
    const provider = r.provider;
    const call = await worktreeCall(provider, "write the notes", {
      work: r.home.work,
      home: r.home.home,
    });
    await assertWroteInWorktree(call, r.home.work);
  },
);

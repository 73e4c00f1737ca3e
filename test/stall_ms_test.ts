/**
 * `agent()`'s `stallMs`, as Claude Code's Workflow tool has it: a call whose agent shows no
 * progress for that long is stopped and fails as stalled (`provider_timeout`, narrated and
 * counted), while an agent that keeps showing progress, or runs a tool, is left alone. The
 * value is checked before anything is dispatched. Real Claude Code and the model APIs are
 * stopped when their model's stream goes silent (the stand-in holds it open).
 */
import assert from "node:assert/strict";
import {
  anthropicProvider,
  claudeProvider,
  codexProvider,
  createDispatcher,
  type DispatchRequest,
  type DispatchResult,
  openaiCompatibleProvider,
  type Provider,
  ProviderError,
} from "../src/dispatch/mod.ts";
import { ConfigSchema } from "../src/config/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import type { RunStatus } from "../src/engine/mod.ts";
import { withEnv } from "./api_helpers.ts";
import { assertAllGone, killAll, running } from "./harness_helpers.ts";
import { LOCAL, narration, testManager } from "./helpers.ts";
import { startModelStandIn } from "./model_standin/mod.ts";
import {
  agentHome,
  claudeAt,
  claudeOptions,
  realToolTest,
  toolThenText,
  until,
} from "./real_agents.ts";

/** A provider that reports through `steps`, then answers; its signal's abort ends it at once. */
function stepsProvider(
  steps: (request: DispatchRequest, wait: (ms: number) => Promise<void>) => Promise<void>,
): Provider & { aborted: unknown[] } {
  const aborted: unknown[] = [];
  return {
    name: "steps",
    kind: "api",
    aborted,
    async dispatch(request: DispatchRequest): Promise<DispatchResult> {
      const wait = (ms: number) =>
        new Promise<void>((resolve, reject) => {
          const onAbort = () => {
            clearTimeout(timer);
            aborted.push(request.signal.reason);
            reject(request.signal.reason);
          };
          const timer = setTimeout(() => {
            request.signal.removeEventListener("abort", onAbort);
            resolve();
          }, ms);
          request.signal.addEventListener("abort", onAbort, { once: true });
        });
      await steps(request, wait);
      return {
        output: "finished",
        usage: { input_tokens: 1, output_tokens: 1 },
        cost_usd: 0,
        provider: "steps",
        model: "steps",
      };
    },
  };
}

async function runWith(provider: Provider, script: string): Promise<RunStatus> {
  await using t = await testManager({
    dispatcher: createDispatcher({ providers: [provider], fakeLatencyMs: 0 }),
  });
  const run = await t.manager.start({ script }, LOCAL);
  return await t.manager.wait(run.run_id, LOCAL);
}

Deno.test("stallMs: an agent silent for that long is stopped, and its call fails as stalled", async () => {
  // Ten times the watch: without it the call would answer.
  const provider = stepsProvider((_request, wait) => wait(10_000));
  const status = await runWith(
    provider,
    `return await agent("think quietly", { provider: "steps", label: "quiet", stallMs: 1000 })`,
  );
  assert.equal(status.state, "succeeded");
  assert.equal(status.result, null);
  assert.equal(status.failures?.provider_timeout, 1, JSON.stringify(status.failures));
  assert.equal(provider.aborted.length, 1, "the provider's signal was aborted");
  const reason = provider.aborted[0];
  assert.ok(reason instanceof SvcError && reason.code === "provider_timeout", String(reason));
  const failed = narration(status, "call").find((text) => /stalled/.test(text));
  assert.ok(failed, "the stall is narrated");
  assert.match(failed!, /quiet/);
  assert.match(failed!, /no progress for 1000 ms \(stallMs\)/);
});

Deno.test("stallMs: a stall is the script's own limit, not held against the provider's availability", async () => {
  const provider = stepsProvider((_request, wait) => wait(10_000));
  const dispatcher = createDispatcher({ providers: [provider], availability: { window: 2 } });
  for (let i = 0; i < 2; i++) {
    const error = await dispatcher.dispatch({
      prompt: "think quietly",
      options: { provider: "steps", stallMs: 1000 },
      signal: new AbortController().signal,
    }).then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof ProviderError && /stalled/.test(error.message), String(error));
  }
  const steps = (await dispatcher.status()).find((status) => status.name === "steps");
  assert.equal(steps?.available, true, steps?.reason);
});

Deno.test("stallMs: an agent that keeps showing progress runs past it to its answer", async () => {
  // Ten steps of a fifth of the watch each: twice the watch in all, never silent for it.
  const provider = stepsProvider(async (request, wait) => {
    for (let i = 0; i < 10; i++) {
      await wait(200);
      if (i % 2 === 0) request.onActivity?.();
      else request.onProgress?.({ kind: "text", text: `step ${i}\n` });
    }
  });
  const status = await runWith(
    provider,
    `return await agent("work", { provider: "steps", stallMs: 1000 })`,
  );
  assert.equal(status.result, "finished", JSON.stringify(status.failures));
  assert.deepEqual(provider.aborted, []);
});

Deno.test("stallMs: a tool the agent runs pauses the watch until the agent's next output", async () => {
  const provider = stepsProvider(async (request, wait) => {
    request.onProgress?.({ kind: "tool", name: "Bash", target: "npm test" });
    await wait(2_500);
    request.onActivity?.();
  });
  const status = await runWith(
    provider,
    `return await agent("test it", { provider: "steps", stallMs: 1000 })`,
  );
  assert.equal(status.result, "finished", JSON.stringify(status.failures));
});

Deno.test("stallMs: 0 watches nothing, as Claude Code reads it", async () => {
  const provider = stepsProvider((_request, wait) => wait(1_500));
  const status = await runWith(
    provider,
    `return await agent("slow", { provider: "steps", stallMs: 0 })`,
  );
  assert.equal(status.result, "finished");
});

Deno.test("stallMs: the fake provider's latency without progress is a stall", async () => {
  await using t = await testManager({ fakeLatencyMs: 8_000 });
  const run = await t.manager.start({
    script: `return [
      await agent("one", { label: "watched", stallMs: 1000 }),
    ]`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.deepEqual(status.result, [null]);
  assert.equal(status.failures?.provider_timeout, 1, JSON.stringify(status.failures));
});

Deno.test("stallMs: a bad value makes agent() throw before anything is dispatched", async () => {
  const provider = stepsProvider(() => Promise.resolve());
  let calls = 0;
  const counted: Provider = {
    ...provider,
    dispatch: (request) => {
      calls++;
      return provider.dispatch(request);
    },
  };
  for (const bad of ["-1", "1.5", "999", "86400001", '"5000"', "true", "Infinity"]) {
    const status = await runWith(
      counted,
      `try { await agent("x", { provider: "steps", stallMs: ${bad} }); return "ran" }
       catch (e) { return e.name + ": " + e.message }`,
    );
    assert.match(String(status.result), /^TypeError: agent\(\): option 'stallMs' /, bad);
  }
  assert.equal(calls, 0);
  const status = await runWith(
    counted,
    `try { await agent("x", { provider: "steps", stallMs: 999 }) } catch (e) { return e.message }`,
  );
  assert.match(String(status.result), /from 1000 to 86400000, or 0 for no stall watch/);
});

Deno.test("stallMs: the Anthropic API's silent stream is stopped as stalled, the request streamed", async () => {
  using _key = withEnv("SVC_TEST_STALL_KEY", "sk-ant-test-key");
  await using standin = startModelStandIn(() => ({ stall: true }));
  const provider = anthropicProvider({
    baseUrl: standin.url,
    apiKeyEnv: "SVC_TEST_STALL_KEY",
    model: "claude-test",
    // The attempt's own timeout, far past the watch, bounds the test were the watch missing.
    timeoutMs: 20_000,
    maxRetries: 0,
  });
  const dispatcher = createDispatcher({ providers: [provider] });
  const error = await dispatcher.dispatch({
    prompt: "hello",
    options: { provider: "anthropic", stallMs: 1000 },
    signal: new AbortController().signal,
  }).then(() => undefined, (e: unknown) => e);
  assert.ok(error instanceof ProviderError, String(error));
  assert.equal(error.code, "provider_timeout");
  assert.match(error.message, /Cannot dispatch to anthropic: the call stalled/);
  assert.equal(standin.modelRequests().length, 1, "no retry after a stall");
  assert.equal(standin.modelRequests()[0]!.stream, true, "a watched call streams");
});

Deno.test("stallMs: an OpenAI-compatible API's silent stream is stopped as stalled", async () => {
  await using standin = startModelStandIn(() => ({ stall: true }));
  const provider = openaiCompatibleProvider({
    baseUrl: `${standin.url}/v1`,
    apiKeyEnv: null,
    model: "gpt-test",
    timeoutMs: 20_000,
    maxRetries: 0,
  });
  const dispatcher = createDispatcher({ providers: [provider] });
  const error = await dispatcher.dispatch({
    prompt: "hello",
    options: { provider: "openai", stallMs: 1000 },
    signal: new AbortController().signal,
  }).then(() => undefined, (e: unknown) => e);
  assert.ok(error instanceof ProviderError, String(error));
  assert.equal(error.code, "provider_timeout");
  assert.match(error.message, /stalled/);
  assert.equal(standin.modelRequests()[0]!.stream, true);
});

/** The pids of running processes whose working directory is `dir`. */
async function processesIn(dir: string): Promise<number[]> {
  const script = `for p in /proc/[0-9]*; do
    [ "$(readlink "$p/cwd" 2>/dev/null)" = "$1" ] && echo "\${p#/proc/}"
  done; true`;
  const output = await new Deno.Command("bash", {
    args: ["-c", script, "bash", dir],
    stdout: "piped",
    stderr: "null",
  }).output();
  const pids = new TextDecoder().decode(output.stdout).split(/\s+/).filter(Boolean).map(Number);
  return await running(pids);
}

realToolTest(
  "claude",
  "stallMs stops Claude Code, its whole process group, when the model's stream goes silent",
  async (bin) => {
    await using home = await agentHome();
    await using standin = startModelStandIn(() => ({ stall: true }));
    // The harness's own timeout, far past the watch, bounds the test were the watch missing.
    const claude = claudeProvider({ ...claudeOptions(bin, standin.url, home), timeoutMs: 40_000 });
    const dispatcher = createDispatcher({ providers: [claude] });
    const outcome = dispatcher.dispatch({
      prompt: "answer slowly",
      options: { provider: "claude", stallMs: 4000 },
      signal: new AbortController().signal,
      cwd: home.work,
    }).then(() => undefined, (e: unknown) => e);
    await until(() => standin.modelRequests().length > 0, "Claude Code's model request");
    const pids = await processesIn(home.work);
    try {
      assert.ok(pids.length > 0, "no process of the call was found");
      const error = await outcome;
      assert.ok(error instanceof ProviderError, String(error));
      assert.equal(error.code, "provider_timeout");
      assert.match(error.message, /Cannot dispatch to claude: the call stalled/);
      await assertAllGone(pids);
    } finally {
      killAll(pids);
    }
  },
);

realToolTest(
  "claude",
  "stallMs leaves a Claude Code call that answers alone",
  async (bin) => {
    await using home = await agentHome();
    await using standin = startModelStandIn(() => ({ text: "answered in time" }));
    const dispatcher = createDispatcher({ providers: [claudeAt(bin, standin.url, home)] });
    const result = await dispatcher.dispatch({
      prompt: "answer",
      options: { provider: "claude", stallMs: 60_000 },
      signal: new AbortController().signal,
      cwd: home.work,
    });
    assert.equal(result.output, "answered in time");
  },
);

realToolTest(
  "claude",
  "stallMs pauses while Claude Code runs a tool longer than the watch, and the call answers",
  async (bin) => {
    await using home = await agentHome();
    await using standin = startModelStandIn(toolThenText([{
      name: "Bash",
      input: { command: "sleep 6 && echo slept", description: "wait" },
    }]));
    const claude = claudeProvider({
      ...claudeOptions(bin, standin.url, home, { IS_SANDBOX: "1" }),
      timeoutMs: 60_000,
    });
    const dispatcher = createDispatcher({
      providers: [claude],
      config: ConfigSchema.parse({ sandbox: { full: "allow" } }),
    });
    const result = await dispatcher.dispatch({
      prompt: "run the slow command",
      options: { provider: "claude", sandbox: "full", stallMs: 3000 },
      signal: new AbortController().signal,
      cwd: home.work,
    });
    assert.equal(result.sandbox, "full");
    assert.match(String(result.output), /tool said: .*slept/s);
  },
);

realToolTest(
  "codex",
  "stallMs stops Codex when the model's stream goes silent",
  async (bin) => {
    await using home = await agentHome();
    await using standin = startModelStandIn(() => ({ stall: true }));
    const codex = codexProvider({
      command: bin,
      baseUrl: `${standin.url}/v1`,
      timeoutMs: 40_000,
      extraArgs: ["-c", "model_providers.svc.stream_max_retries=0"],
      env: { HOME: home.home, TMPDIR: home.tmp, CODEX_API_KEY: "sk-standin-codex-key" },
      scratchRoot: home.tmp,
      sessionRoot: home.tmp,
    });
    const outcome = createDispatcher({ providers: [codex] }).dispatch({
      prompt: "answer slowly",
      options: { provider: "codex", model: "gpt-5-codex", stallMs: 4000 },
      signal: new AbortController().signal,
      cwd: home.work,
    }).then(() => undefined, (e: unknown) => e);
    await until(() => standin.modelRequests().length > 0, "Codex's model request");
    const pids = await processesIn(home.work);
    try {
      const error = await outcome;
      assert.ok(error instanceof ProviderError, String(error));
      assert.equal(error.code, "provider_timeout");
      assert.match(error.message, /Cannot dispatch to codex: the call stalled/);
      await assertAllGone(pids);
    } finally {
      killAll(pids);
    }
  },
);

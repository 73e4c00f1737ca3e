/**
 * Agents elsewhere as providers: a workflow on one svc host whose `agent()` calls go through an
 * `a2a` provider to a second svc host (its own services, ledger and A2A server on a real port),
 * with the answer, the usage and cost the peer reported, and cancels carried across.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { a2aAgentProvider, usageOfReply } from "../src/dispatch/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { StopReason } from "../src/dispatch/mod.ts";
import { startA2a, TOKENS } from "./a2a_helpers.ts";
import { runCli, tempDir } from "./helpers.ts";

const TOKEN_ENV = "SVC_TEST_PEER_TOKEN";

Deno.test("a workflow's agent() calls go through an a2a provider to a second svc host, with the peer's usage and cost", async () => {
  await using peer = await startA2a({ fakeCostUsd: 0.125 });
  await using home = await tempDir("svc-a2a-caller-");
  Deno.env.set(TOKEN_ENV, TOKENS.alice);
  try {
    const config = ConfigSchema.parse({
      providers: { peer: { type: "a2a", url: peer.url, token_env: TOKEN_ENV } },
    });
    await using services = await openServices({ home: home.path, config });
    const run = await services.runs.start({
      script: `const a = await agent("first question", { provider: "peer" });
const b = await agent("second question", { provider: "peer" });
return { a, b };`,
    }, { owner: "local" });
    const done = await services.runs.wait(run.run_id, { owner: "local" });
    assert.equal(done.state, "succeeded", JSON.stringify(done.error));
    const result = done.result as { a: string; b: string };
    assert.equal(typeof result.a, "string");
    assert.ok(result.a.length > 0);
    assert.equal(done.journal.usage.cost_usd, 0.25);
    assert.ok(done.journal.usage.input_tokens > 0);
    // The peer served both calls as the token's owner, and recorded them.
    const served = await peer.services.tasks.list({ owner: "alice" });
    assert.equal(served.length, 2);
    const log = await peer.services.collaborations.list({ owner: "alice" });
    assert.equal(log.items.length, 2);
  } finally {
    Deno.env.delete(TOKEN_ENV);
  }
});

Deno.test("an aborted a2a call cancels the task on the peer", async () => {
  await using peer = await startA2a({ fakeLatencyMs: 30_000 });
  Deno.env.set(TOKEN_ENV, TOKENS.alice);
  try {
    const provider = a2aAgentProvider({ name: "peer", url: peer.url, tokenEnv: TOKEN_ENV });
    const controller = new AbortController();
    const call = provider.dispatch({
      prompt: "long",
      options: {},
      signal: controller.signal,
    });
    let svcTask;
    for (let i = 0; i < 400 && svcTask === undefined; i++) {
      [svcTask] = await peer.services.tasks.list({ owner: "alice" });
      if (svcTask === undefined) await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(svcTask);
    controller.abort(new StopReason("cancelled", "the run was cancelled"));
    await assert.rejects(call, (error: unknown) => error instanceof StopReason);
    const ended = await peer.services.tasks.wait(svcTask.task_id, { owner: "alice" });
    assert.equal(ended.state, "cancelled");
  } finally {
    Deno.env.delete(TOKEN_ENV);
  }
});

Deno.test("an a2a call without the token, or with a wrong one, fails naming the provider", async () => {
  await using peer = await startA2a();
  const provider = a2aAgentProvider({ name: "peer", url: peer.url, tokenEnv: TOKEN_ENV });
  await assert.rejects(
    provider.dispatch({ prompt: "x", options: {}, signal: new AbortController().signal }),
    /Cannot dispatch to peer: SVC_TEST_PEER_TOKEN is not set/,
  );
  Deno.env.set(TOKEN_ENV, "wrong-token-0123456789abcdef");
  try {
    await assert.rejects(
      provider.dispatch({ prompt: "x", options: {}, signal: new AbortController().signal }),
      /Cannot dispatch to peer: the agent refused the message/,
    );
  } finally {
    Deno.env.delete(TOKEN_ENV);
  }
});

Deno.test("a reply without svc usage is unmetered: no tokens, cost unknown", () => {
  assert.deepEqual(usageOfReply(undefined), {
    usage: { input_tokens: 0, output_tokens: 0 },
    cost_usd: null,
  });
  assert.deepEqual(
    usageOfReply({ "svc.usage": { input_tokens: 3, output_tokens: -1, cost_usd: "free" } }),
    { usage: { input_tokens: 3, output_tokens: 0 }, cost_usd: null },
  );
});

Deno.test("the configuration takes an a2a provider with an http(s) url and refuses others", () => {
  assert.equal(
    ConfigSchema.safeParse({ providers: { p: { type: "a2a", url: "https://agent.example" } } })
      .success,
    true,
  );
  assert.equal(
    ConfigSchema.safeParse({ providers: { p: { type: "a2a", url: "file:///etc/passwd" } } })
      .success,
    false,
  );
  assert.equal(
    ConfigSchema.safeParse({
      providers: { p: { type: "a2a", url: "https://a.example", token_env: "lower" } },
    }).success,
    false,
  );
});

Deno.test("svc workflow run under the launcher's grants reaches an a2a provider's host with its token variable", async () => {
  await using peer = await startA2a();
  await using home = await tempDir("svc-a2a-launch-");
  await Deno.writeTextFile(
    `${home.path}/config.json`,
    JSON.stringify({
      providers: { peer: { type: "a2a", url: peer.url, token_env: "SVC_PEER_TOKEN" } },
    }),
  );
  await Deno.writeTextFile(
    `${home.path}/ask.js`,
    `return await agent("hello over there", { provider: "peer" });`,
  );
  const result = await runCli(["workflow", "run", `${home.path}/ask.js`, "--json"], {
    home: home.path,
    env: { SVC_PEER_TOKEN: TOKENS.bob },
  });
  assert.equal(result.code, 0, result.stderr);
  const served = await peer.services.tasks.list({ owner: "bob" });
  assert.equal(served.length, 1);
  assert.equal(served[0]?.prompt, "hello over there");
});

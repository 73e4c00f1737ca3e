/**
 * `agent()`'s `sharedHeadLength`, as Claude Code's Workflow tool has it: a call without a label
 * is labelled from the text after the shared head (the whole prompt when nothing follows it),
 * a malformed value makes `agent()` throw before anything is dispatched, and the Anthropic API
 * gets a prompt-cache breakpoint at the head; the OpenAI-compatible API, which caches prefixes
 * by itself, gets the prompt as it is.
 */
import assert from "node:assert/strict";
import {
  anthropicProvider,
  createDispatcher,
  openaiCompatibleProvider,
} from "../src/dispatch/mod.ts";
import { withEnv } from "./api_helpers.ts";
import { LOCAL, testManager } from "./helpers.ts";
import { startModelStandIn } from "./model_standin/mod.ts";

const HEAD = "You review one file of a large change. The rules of the review follow. ";

Deno.test("sharedHeadLength: the default label comes from the text after the shared head", async () => {
  await using t = await testManager();
  const run = await t.manager.start({
    script: `const head = ${JSON.stringify(HEAD)};
      for (const file of ["src/a.ts", "src/b.ts"]) {
        await agent(head + "Review " + file, { sharedHeadLength: head.length });
      }
      await agent(head + "   ", { sharedHeadLength: head.length });
      await agent("short", { sharedHeadLength: 1000 });
      await agent(head + "named", { sharedHeadLength: head.length, label: "mine" });
      return "done"`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const labels = (await t.ledger.getJournal(run.run_id)).map((entry) => entry.label);
  assert.deepEqual(labels, [
    "Review src/a.ts",
    "Review src/b.ts",
    HEAD.trim().slice(0, 60),
    "short",
    "mine",
  ]);
});

Deno.test("sharedHeadLength: a malformed value makes agent() throw before anything is dispatched", async () => {
  await using t = await testManager();
  for (const bad of ["-1", "1.5", '"3"', "NaN", "null", "2 ** 60"]) {
    const run = await t.manager.start({
      script: `try { await agent("x", { sharedHeadLength: ${bad} }); return "ran" }
        catch (e) { return e.name + ": " + e.message }`,
    }, LOCAL);
    const status = await t.manager.wait(run.run_id, LOCAL);
    assert.match(
      String(status.result),
      /^TypeError: agent\(\): option 'sharedHeadLength' /,
      `${bad}: ${status.result}`,
    );
    assert.deepEqual(await t.ledger.getJournal(run.run_id), [], bad);
  }
  const run = await t.manager.start({
    script: `try { await agent("x", { sharedHeadLength: -1 }) } catch (e) { return e.message }`,
  }, LOCAL);
  const status = await t.manager.wait(run.run_id, LOCAL);
  assert.match(String(status.result), /must be a whole number of characters, 0 or more/);
});

Deno.test("sharedHeadLength: the Anthropic API gets a prompt-cache breakpoint at the head", async () => {
  using _key = withEnv("SVC_TEST_HEAD_KEY", "sk-ant-test-key");
  await using standin = startModelStandIn(() => ({ text: "ok" }));
  const dispatcher = createDispatcher({
    providers: [
      anthropicProvider({ baseUrl: standin.url, apiKeyEnv: "SVC_TEST_HEAD_KEY", model: "m" }),
    ],
  });
  const send = (prompt: string, sharedHeadLength?: number) =>
    dispatcher.dispatch({
      prompt,
      options: {
        provider: "anthropic",
        ...(sharedHeadLength !== undefined ? { sharedHeadLength } : {}),
      },
      signal: new AbortController().signal,
    });
  await send(`${HEAD}Review src/a.ts`, HEAD.length);
  await send(`${HEAD}Review src/b.ts`);
  await send(`${HEAD}  `, HEAD.length);
  const bodies = standin.modelRequests().map((r) => r.body as { messages: unknown[] });
  assert.deepEqual(bodies[0]!.messages, [{
    role: "user",
    content: [
      { type: "text", text: HEAD, cache_control: { type: "ephemeral" } },
      { type: "text", text: "Review src/a.ts" },
    ],
  }]);
  assert.deepEqual(bodies[1]!.messages, [{ role: "user", content: `${HEAD}Review src/b.ts` }]);
  // A blank side would be a blank text block, which the API refuses: the prompt goes whole.
  assert.deepEqual(bodies[2]!.messages, [{ role: "user", content: `${HEAD}  ` }]);
});

Deno.test("sharedHeadLength: the OpenAI-compatible API gets the prompt whole (it caches prefixes itself)", async () => {
  await using standin = startModelStandIn(() => ({ text: "ok" }));
  const dispatcher = createDispatcher({
    providers: [
      openaiCompatibleProvider({ baseUrl: `${standin.url}/v1`, apiKeyEnv: null, model: "m" }),
    ],
  });
  await dispatcher.dispatch({
    prompt: `${HEAD}Review src/a.ts`,
    options: { provider: "openai", sharedHeadLength: HEAD.length },
    signal: new AbortController().signal,
  });
  const body = standin.modelRequests()[0]!.body as { messages: unknown[] };
  assert.deepEqual(body.messages, [{ role: "user", content: `${HEAD}Review src/a.ts` }]);
});

/**
 * `svc a2a-server` as a user starts it (`deno task svc`, with the launcher's permissions): it
 * listens, answers its health and card, serves a call under a configured owner token, and stops
 * cleanly on SIGTERM.
 */
import assert from "node:assert/strict";
import { TaskState } from "@a2a-js/sdk";
import { ROOT, svcCommand, tempDir } from "./helpers.ts";
import { asTask, sdkClient, sendRequest, userMessage } from "./a2a_helpers.ts";

const TOKEN = "carol-token-0123456789abcdef";

Deno.test("svc a2a-server listens with the launcher's permissions, serves a call as the token's owner and stops on SIGTERM", async () => {
  await using home = await tempDir("svc-a2a-cli-");
  const child = svcCommand({
    args: ["a2a-server", "--port", "0"],
    env: {
      HOME: home.path,
      SVC_HOME: `${home.path}/.svc`,
      SVC_DASHBOARD_OWNER_TOKENS: `carol:${TOKEN}`,
      NO_COLOR: "1",
      PATH: Deno.env.get("PATH") ?? "",
    },
    clearEnv: true,
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let url: string | undefined;
  try {
    while (url === undefined) {
      const { done, value } = await reader.read();
      if (done) break;
      text += value;
      url = /A2A server on (http:\/\/\S+)/.exec(text)?.[1];
    }
    assert.ok(url, text);
    const health = await (await fetch(`${url}/health`)).json();
    assert.equal(health.status, "ok");
    const client = await sdkClient(url, TOKEN);
    const answer = asTask(await client.sendMessage(sendRequest(userMessage("hello"))));
    assert.equal(answer.status?.state, TaskState.TASK_STATE_COMPLETED);
  } finally {
    child.kill("SIGTERM");
    const status = await child.status;
    const rest = (async () => {
      while (!(await reader.read()).done) { /* drain */ }
    })();
    await rest;
    assert.equal(status.code, 0, text);
  }
});

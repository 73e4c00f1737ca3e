/**
 * The composition root reads the host's environment once, when the services open, and hands
 * the values down: the services below it never read the environment themselves.
 */
import assert from "node:assert/strict";
import { openServices } from "../src/services/mod.ts";
import { LOCAL, tempDir } from "./helpers.ts";

const SCRIPT = 'export const meta = { name: "env" };\nreturn 1;';

/** Runs `body` with `SVC_WORKFLOW_SANDBOX` as `value` (unset for undefined), then puts it back. */
async function withSandboxEnv<T>(value: string | undefined, body: () => Promise<T>): Promise<T> {
  const before = Deno.env.get("SVC_WORKFLOW_SANDBOX");
  const set = (v: string | undefined) =>
    v === undefined
      ? Deno.env.delete("SVC_WORKFLOW_SANDBOX")
      : Deno.env.set("SVC_WORKFLOW_SANDBOX", v);
  set(value);
  try {
    return await body();
  } finally {
    set(before);
  }
}

Deno.test("the guests' sandbox setting is the one the host opened with, whatever the environment says later", async () => {
  await using home = await tempDir("svc-root-env-");
  // Opened with a wrong value: every run fails closed naming it, even once the variable is gone.
  await using refused = await withSandboxEnv("sometimes", () => openServices({ home: home.path }));
  const failed = await withSandboxEnv(
    undefined,
    async () =>
      await refused.runs.wait((await refused.runs.start({ script: SCRIPT }, LOCAL)).run_id, LOCAL),
  );
  assert.equal(failed.state, "failed");
  assert.match(failed.error?.message ?? "", /SVC_WORKFLOW_SANDBOX is "sometimes"/);
});

Deno.test("a wrong sandbox setting set after the host opened does not reach its guests", async () => {
  await using home = await tempDir("svc-root-env-");
  await using services = await withSandboxEnv(undefined, () => openServices({ home: home.path }));
  const done = await withSandboxEnv(
    "sometimes",
    async () =>
      await services.runs.wait(
        (await services.runs.start({ script: SCRIPT }, LOCAL)).run_id,
        LOCAL,
      ),
  );
  assert.equal(done.state, "succeeded", JSON.stringify(done.error));
  assert.equal(done.result, 1);
});

/**
 * `spawn(…, { lifeline: true })` ties a child in a process group of its own to the host's life:
 * a host killed from outside (SIGKILL, which it cannot catch) takes the child with it. Without
 * the lifeline such a child runs on with parent 1, as a micro-VM would.
 */
import assert from "node:assert/strict";
import { fixture } from "./helpers.ts";

function alive(pid: number): boolean {
  const output = new Deno.Command("ps", { args: ["-o", "stat=", "-p", String(pid)] }).outputSync();
  const state = new TextDecoder().decode(output.stdout).trim();
  return output.code === 0 && state !== "" && !/^[ZX]/.test(state);
}

/** Starts the fixture host, kills it once its child runs, and returns whether the child outlived it by 2 s. */
async function childOutlivesKilledHost(mode: "lifeline" | "plain"): Promise<boolean> {
  const host = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-run", "--allow-env", "--allow-read", fixture("lifeline_host.ts"), mode],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = host.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const pid = Number((await reader.read()).value?.trim());
  assert.ok(pid > 0 && alive(pid));
  Deno.kill(host.pid, "SIGKILL");
  await host.status;
  await reader.cancel().catch(() => {});
  const deadline = Date.now() + 2_000;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const outlived = alive(pid);
  if (outlived) Deno.kill(pid, "SIGKILL");
  return outlived;
}

Deno.test("a child spawned with a lifeline dies with its host; one without outlives it", async () => {
  assert.equal(await childOutlivesKilledHost("lifeline"), false);
  assert.equal(await childOutlivesKilledHost("plain"), true);
});

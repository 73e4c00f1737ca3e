/**
 * `svc workflow run` starts its run's guest before it loads the rest of the host and opens its
 * services (`src/engine/early_guest.ts`): the run takes that guest when its settings match, any
 * other run spawns its own, and no guest outlives the command.
 */
import assert from "node:assert/strict";
import { startEarlyGuest } from "../src/engine/early_guest.ts";
import {
  createUnsafeLocalBackend,
  type GuestHandle,
  type GuestSpawnRequest,
  type IsolationBackend,
} from "../src/isolation/mod.ts";
import { openServices } from "../src/services/mod.ts";
import { LOCAL, runCommand, tempDir } from "./helpers.ts";

/** The unsafe-local backend, recording every guest it starts and when that guest has exited. */
function recordingBackend(): IsolationBackend & {
  started: { handle: GuestHandle; exited: boolean; request: GuestSpawnRequest }[];
} {
  const inner = createUnsafeLocalBackend();
  const started: { handle: GuestHandle; exited: boolean; request: GuestSpawnRequest }[] = [];
  return {
    name: inner.name,
    started,
    async spawn(request: GuestSpawnRequest) {
      const handle = await inner.spawn(request);
      const record = { handle, exited: false, request };
      handle.process.status.then(() => (record.exited = true));
      started.push(record);
      return handle;
    },
  };
}

/** The `guest-` scratch directories under `dir`. */
async function guestDirs(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name.startsWith("guest-")) names.push(entry.name);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return names;
}

Deno.test("a run takes the guest started before its services opened: one process, no second spawn", async () => {
  await using home = await tempDir();
  const backend = recordingBackend();
  const { backend: early, spawned } = startEarlyGuest({ home: home.path, timeout: 3600, backend });
  // The guest's process exists before anything of the services is opened.
  await spawned;
  assert.equal(backend.started.length, 1);
  try {
    await using services = await openServices({ home: home.path, earlyGuest: early });
    const started = await services.runs.start(
      { script: `return await agent("one");`, fake_dispatch: true },
      LOCAL,
    );
    const status = await services.runs.wait(started.run_id, LOCAL);
    assert.equal(status.state, "succeeded");
    assert.equal(status.result, "fake response to: one");
    assert.equal(backend.started.length, 1, "the run spawned no guest of its own");
    assert.equal(backend.started[0]!.exited, true);
  } finally {
    await early[Symbol.asyncDispose]();
  }
  assert.deepEqual(await guestDirs(`${home.path}/tmp`), []);
});

Deno.test("a run whose settings differ from the early guest's spawns its own, and the early guest ends with the command", async () => {
  await using home = await tempDir();
  const backend = recordingBackend();
  // Its spawn is not waited for: the run's own spawn waits for it.
  const { backend: early } = startEarlyGuest({ home: home.path, timeout: 3600, backend });
  try {
    await using services = await openServices({ home: home.path, earlyGuest: early });
    const started = await services.runs.start(
      { script: `return await agent("two");`, fake_dispatch: true, timeout: 60 },
      LOCAL,
    );
    const status = await services.runs.wait(started.run_id, LOCAL);
    assert.equal(status.result, "fake response to: two");
    assert.equal(backend.started.length, 2);
    const ofCpu = (seconds: number) =>
      backend.started.find((guest) => guest.request.cpuSeconds === seconds);
    assert.ok(ofCpu(65), "the run spawned a guest for its own timeout");
    // The early guest, started for an hour's run, was not given to a run of a minute.
    assert.equal(ofCpu(3605)?.exited, false);
  } finally {
    await early[Symbol.asyncDispose]();
  }
  assert.equal(backend.started.find((guest) => guest.request.cpuSeconds === 3605)?.exited, true);
  assert.deepEqual(await guestDirs(`${home.path}/tmp`), []);
});

Deno.test("svc workflow run of a script it refuses leaves no guest behind, though it started one first", async () => {
  await using home = await tempDir();
  const script = `${home.path}/bad.js`;
  await Deno.writeTextFile(script, `return await agent("hello"\n`);
  const result = await runCommand(
    Deno.execPath(),
    ["task", "--quiet", "svc", "workflow", "run", script, "--fake-dispatch"],
    { env: { SVC_HOME: `${home.path}/home`, SVC_FAKE_LATENCY_MS: "0", NO_COLOR: "1" } },
  );
  assert.notEqual(result.code, 0);
  assert.match(result.stderr, /bad\.js/);
  assert.deepEqual(await guestDirs(`${home.path}/home/tmp`), []);
});

import assert from "node:assert/strict";
import {
  createMicrovmBackend,
  createUnsafeLocalBackend,
  type GuestHandle,
  type IsolationBackend,
  prestartedBackend,
} from "../src/isolation/mod.ts";
import { LOCAL, testManager } from "./helpers.ts";

/** The unsafe-local backend, recording every guest it starts and whether that guest has exited. */
function recordingBackend(): IsolationBackend & {
  started: { handle: GuestHandle; exited: boolean; timeout?: number }[];
  asked: number;
} {
  const inner = createUnsafeLocalBackend();
  const started: { handle: GuestHandle; exited: boolean; timeout?: number }[] = [];
  const backend = {
    name: inner.name,
    started,
    asked: 0,
    async spawn(request: Parameters<IsolationBackend["spawn"]>[0]) {
      backend.asked++;
      const handle = await inner.spawn(request);
      const record = { handle, exited: false, timeout: request.cpuSeconds };
      handle.process.status.then(() => (record.exited = true));
      started.push(record);
      return handle;
    },
  };
  return backend;
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(condition(), "the condition never held");
}

Deno.test("with prestartGuest a run takes the guest started before it, and every run gets a fresh process", async () => {
  const backend = recordingBackend();
  await using t = await testManager({
    prestartGuest: true,
    isolation: { "unsafe-local": backend, microvm: createMicrovmBackend() },
  });
  // The manager started one guest before any run asked for it.
  await until(() => backend.started.length === 1);
  const first = await t.manager.start({ script: `return await agent("one");` }, LOCAL);
  const status = await t.manager.wait(first.run_id, LOCAL);
  assert.equal(status.state, "succeeded");
  assert.equal(status.result, "fake response to: one");
  // The run used the guest started ahead (now gone), and a new one waits for the next run.
  await until(() => backend.started.length === 2 && backend.started[0]!.exited);
  assert.equal(backend.started[1]!.exited, false);
  const second = await t.manager.start({ script: `return await agent("two");` }, LOCAL);
  assert.equal((await t.manager.wait(second.run_id, LOCAL)).result, "fake response to: two");
  await until(() => backend.started.length === 3 && backend.started[1]!.exited);
  const pids = new Set(backend.started.map((s) => s.handle.process.pid));
  assert.equal(pids.size, 3, "no process served two runs");
  await t.manager.close();
  // Closing the manager disposes of the idle guest.
  await until(() => backend.started.every((s) => s.exited));
});

Deno.test("a prestarted guest that died while idle is not used, and other settings spawn their own", async () => {
  const backend = recordingBackend();
  await using t = await testManager({
    prestartGuest: true,
    isolation: { "unsafe-local": backend, microvm: createMicrovmBackend() },
  });
  await until(() => backend.started.length === 1);
  backend.started[0]!.handle.process.kill("SIGKILL");
  await until(() => backend.started[0]!.exited);
  const run = await t.manager.start({ script: `return await agent("after");` }, LOCAL);
  assert.equal((await t.manager.wait(run.run_id, LOCAL)).state, "succeeded");
  // A run with another timeout (so another CPU limit) cannot take the default's guest.
  await until(() => backend.started.length === 3);
  const other = await t.manager.start({ script: `return 7;`, timeout: 60 }, LOCAL);
  assert.equal((await t.manager.wait(other.run_id, LOCAL)).result, 7);
  const limits = backend.started.map((s) => s.timeout);
  assert.equal(limits[3], 65, "the run with timeout 60 got a guest with its own CPU limit");
  await t.manager.close();
  await until(() => backend.started.every((s) => s.exited));
});

Deno.test("without prestartGuest a run primes its own guest at start() and nothing is left idle after it", async () => {
  const backend = recordingBackend();
  await using t = await testManager({
    isolation: { "unsafe-local": backend, microvm: createMicrovmBackend() },
  });
  assert.equal(backend.started.length, 0, "no guest before a run asks");
  const run = await t.manager.start({ script: `return await agent("one");` }, LOCAL);
  // start() asked for the guest itself: the run executes only on a later task.
  assert.equal(backend.asked, 1);
  assert.equal((await t.manager.wait(run.run_id, LOCAL)).state, "succeeded");
  await until(() => backend.started.length === 1 && backend.started[0]!.exited);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(backend.started.length, 1, "no guest was started for a next run");
});

Deno.test("a microvm backend whose VMs are resident (Lima) or created per run by a tool (krunvm) is never started ahead", async () => {
  let spawned = 0;
  const microvm: IsolationBackend = {
    name: "microvm",
    prestarts: () => false,
    spawn() {
      spawned++;
      return Promise.reject(new Error("not in this test"));
    },
  };
  await using t = await testManager({
    prestartGuest: true,
    isolation: { "unsafe-local": createUnsafeLocalBackend(), microvm },
  });
  const run = await t.manager.start({ script: `return 1;`, isolation: "microvm" }, LOCAL);
  await t.manager.wait(run.run_id, LOCAL);
  // Only the run itself asked for a guest: nothing was started ahead, at start-up or after it.
  assert.equal(spawned, 1);
});

Deno.test("an idle VM that does not match a run is let go before the run spawns, so its slot is free", async () => {
  const events: string[] = [];
  const vm: IsolationBackend = {
    name: "microvm",
    prestarts: () => true,
    spawn(request) {
      const name = `vm-${request.heapMb}`;
      events.push(`spawn ${name}`);
      const child = new Deno.Command("sleep", {
        args: ["30"],
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      return Promise.resolve({
        process: {
          pid: child.pid,
          stdin: child.stdin,
          stdout: child.stdout,
          stderr: child.stderr,
          status: child.status.then((s) => ({ code: s.code, signal: s.signal ?? null })),
          kill: () => child.kill("SIGKILL"),
        },
        async dispose() {
          events.push(`dispose ${name}`);
          try {
            child.kill("SIGKILL");
          } catch {
            // Gone already.
          }
          await child.status;
        },
      });
    },
  };
  await using backend = prestartedBackend(vm);
  backend.prime({ scratchRoot: "/tmp", heapMb: 64, seed: 1 });
  const handle = await backend.spawn({ scratchRoot: "/tmp", heapMb: 128, seed: 1 });
  assert.deepEqual(events, ["spawn vm-64", "dispose vm-64", "spawn vm-128"]);
  await handle.dispose();
});

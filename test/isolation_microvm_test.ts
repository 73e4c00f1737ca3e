// The microvm tier through its production code path, with stand-in `limactl` and `krunvm`
// executables (test/fixtures/microvm) found on PATH, since neither tool can be installed here.
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import { guestImportMap } from "../src/isolation/guest_imports.ts";
import { GUEST_RUNTIME_FLAGS } from "../src/isolation/mod.ts";
import type { RunStatus } from "../src/engine/mod.ts";
import {
  fixture,
  LOCAL,
  narration,
  ROOT,
  runCli,
  runScript,
  testManager,
  untilEvent,
} from "./helpers.ts";

const DENO = Deno.execPath();
const INSTANCE = "svc-test";
const IMAGE = "docker.io/denoland/deno:2.9.1";

/** A Lima instance as `limactl list --json` prints it (Lima 2.x), trimmed to what matters. */
function limaInstance(status = "Running", mounts: unknown[] = []): Record<string, unknown> {
  return {
    name: INSTANCE,
    hostname: `lima-${INSTANCE}`,
    status,
    dir: `/home/user/.lima/${INSTANCE}`,
    vmType: "qemu",
    arch: "x86_64",
    cpus: 2,
    memory: 4294967296,
    disk: 107374182400,
    config: { vmType: "qemu", mounts, ssh: { localPort: 0 } },
    protected: false,
    limaVersion: "2.0.0",
  };
}

interface StandIns extends AsyncDisposable {
  dir: string;
  /** Every call the stand-ins received, as argv arrays ("limactl"/"krunvm" first). */
  calls(): Promise<string[][]>;
  /** Pids of the processes the stand-ins ran "inside the VM". */
  pids(): Promise<number[]>;
  /** VMs krunvm holds. */
  vms(): Promise<string[]>;
}

/**
 * A folder with the stand-ins (those of `tools`) and their state, prepended to PATH, with the
 * `SVC_WORKFLOW_MICROVM_*` variables of `env` set; disposing restores both and removes it.
 */
async function standIns(options: {
  tools?: string[];
  instances?: Record<string, unknown>[];
  images?: string[];
  env?: Record<string, string>;
}): Promise<StandIns> {
  const dir = await Deno.makeTempDir({ prefix: "svc-microvm-" });
  const state = `${dir}/state`;
  await Deno.mkdir(`${state}/instances`, { recursive: true });
  await Deno.mkdir(`${state}/vms`, { recursive: true });
  for (const tool of options.tools ?? ["limactl", "krunvm"]) {
    await Deno.copyFile(fixture(`microvm/${tool}`), `${dir}/${tool}`);
    await Deno.chmod(`${dir}/${tool}`, 0o755);
  }
  for (const instance of options.instances ?? []) {
    await Deno.writeTextFile(
      `${state}/instances/${instance.name}.json`,
      JSON.stringify(instance, null, 2),
    );
  }
  await Deno.writeTextFile(`${state}/images`, (options.images ?? []).map((i) => `${i}\n`).join(""));
  const saved = new Map<string, string | undefined>();
  const env = {
    PATH: `${dir}:${Deno.env.get("PATH")}`,
    SVC_WORKFLOW_MICROVM_GUEST_DENO: DENO,
    SVC_WORKFLOW_MICROVM_LIMA_INSTANCE: INSTANCE,
    ...options.env,
  };
  for (const [name, value] of Object.entries(env)) {
    saved.set(name, Deno.env.get(name));
    Deno.env.set(name, value);
  }
  async function lines(path: string): Promise<string[]> {
    const text = await Deno.readTextFile(path).catch(() => "");
    return text.split("\n").filter((line) => line !== "");
  }
  const pids = async () => (await lines(`${state}/pids`)).map(Number);
  return {
    dir,
    calls: async () => (await lines(`${state}/calls.log`)).map((l) => l.split("\0").slice(0, -1)),
    pids,
    vms: async () => (await Array.fromAsync(Deno.readDir(`${state}/vms`))).map((e) => e.name),
    async [Symbol.asyncDispose]() {
      for (const [name, value] of saved) {
        if (value === undefined) Deno.env.delete(name);
        else Deno.env.set(name, value);
      }
      for (const pid of await pids()) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch {
          // Gone, as it should be.
        }
      }
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Whether the process runs: a zombie (killed, not yet reaped by its new parent) does not. */
function alive(pid: number): boolean {
  const output = new Deno.Command("ps", { args: ["-o", "stat=", "-p", String(pid)] }).outputSync();
  const state = new TextDecoder().decode(output.stdout).trim();
  return output.code === 0 && state !== "" && !/^[ZX]/.test(state);
}

const SCRIPT = `phase("start");
const reply = await agent("say hello");
log("got a reply");
return { reply, sum: args.a + args.b, cwd: Deno.cwd(), pid: Deno.pid };`;

/**
 * The guest's command line inside the VM, checked piece by piece: the data: URLs are decoded and
 * compared with the host's own files, and nothing on it names a host path.
 */
async function assertGuestCommand(command: string[]): Promise<string> {
  const fixed = [
    "/usr/bin/env",
    "-i",
    "DENO_DIR=/dev/null",
    "DENO_NO_PACKAGE_JSON=1",
    "DENO_NO_UPDATE_CHECK=1",
    "NO_COLOR=1",
    DENO,
    "run",
    ...GUEST_RUNTIME_FLAGS,
    "--seed=1",
    "--v8-flags=--max-old-space-size=512",
  ];
  assert.deepEqual(command.slice(0, fixed.length), fixed);
  assert.equal(command.length, fixed.length + 2);
  const importMap = command[fixed.length]!;
  const stage0 = command[fixed.length + 1]!;
  assert.match(importMap, /^--import-map=data:application\/json,/);
  const map = JSON.parse(decodeURIComponent(importMap.slice(importMap.indexOf(",") + 1)));
  assert.deepEqual(map.imports, JSON.parse(guestImportMap()).imports);
  const scopes = Object.keys(map.scopes);
  assert.equal(scopes.length, 1);
  assert.match(scopes[0]!, /^svc-guest-[0-9a-f]{16}:\/$/);
  assert.match(stage0, /^data:text\/javascript,/);
  assert.equal(
    decodeURIComponent(stage0.slice(stage0.indexOf(",") + 1)),
    await Deno.readTextFile(`${ROOT}/guest/stage0.js`),
  );
  for (const arg of command) {
    assert.ok(!arg.includes(ROOT), `no host path in the guest's command line: ${arg}`);
    assert.ok(!/file:|\/guest\//.test(arg), `no guest module is named by path: ${arg}`);
  }
  return scopes[0]!.slice(0, -2);
}

async function runMicrovm(
  script: string,
  request: Record<string, unknown> = {},
): Promise<RunStatus> {
  return await runScript(script, { isolation: "microvm", ...request });
}

Deno.test("backend_a (Lima): a run returns what unsafe-local returns, through limactl shell with no host path", async () => {
  await using tools = await standIns({ instances: [limaInstance()] });
  const request = { args: { a: 2, b: 3 } };
  const local = await runScript(SCRIPT, request);
  const status = await runMicrovm(SCRIPT, request);
  assert.equal(local.state, "succeeded");
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, local.result);
  // The status says where the guest ran.
  assert.equal(status.isolation, "microvm");
  assert.deepEqual(status.guest_sandbox, {
    kind: "microvm",
    hardened: true,
    note: "Lima: one resident instance for every microvm run",
  });
  assert.deepEqual(status.narration.map((e) => [e.kind, e.text]), [
    ["phase", "start"],
    ["log", "got a reply"],
  ]);
  const calls = await tools.calls();
  assert.deepEqual(calls.map((c) => c.slice(0, 5)), [
    ["limactl", "list", "--json", INSTANCE],
    ["limactl", "shell", "--workdir", "/", INSTANCE],
  ]);
  await assertGuestCommand(calls[1]!.slice(5));
  // The guest ended by itself: nothing was left to reap, so no pkill ran.
  for (const pid of await tools.pids()) assert.ok(!alive(pid), `guest ${pid} is gone`);
});

Deno.test("backend_b (krunvm): a run returns what unsafe-local returns, in a VM created, started and deleted", async () => {
  await using tools = await standIns({
    images: [IMAGE],
    env: { SVC_WORKFLOW_MICROVM_BACKEND: "backend_b", SVC_WORKFLOW_MICROVM_KRUNVM_MEM_MB: "768" },
  });
  const request = { args: { a: 20, b: 22 } };
  const local = await runScript(SCRIPT, request);
  const status = await runMicrovm(SCRIPT, request);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, local.result);
  const calls = await tools.calls();
  assert.equal(calls.length, 3);
  const [create, start, remove] = calls as [string[], string[], string[]];
  const vm = create[4]!;
  assert.match(vm, /^svc-guest-[0-9a-f]{16}$/);
  assert.deepEqual(create, [
    "krunvm",
    "create",
    IMAGE,
    "--name",
    vm,
    "--mem",
    "768",
    "--workdir",
    "/",
  ]);
  assert.deepEqual(start.slice(0, 5), ["krunvm", "start", vm, "/usr/bin/env", "--"]);
  assert.equal(await assertGuestCommand(["/usr/bin/env", ...start.slice(5)]), vm);
  assert.deepEqual(remove, ["krunvm", "delete", vm]);
  assert.deepEqual(await tools.vms(), []);
  assert.equal(status.guest_sandbox?.kind, "microvm");
});

Deno.test("microvm fails closed when its backend is unavailable, naming what is missing; the script never runs", async () => {
  const script = `log("ran");\nreturn await agent("x");`;
  const cases: {
    name: string;
    setup: Parameters<typeof standIns>[0];
    message: RegExp;
    calls: string[][];
  }[] = [
    {
      name: "limactl missing",
      setup: { tools: ["krunvm"], instances: [limaInstance()] },
      message:
        /limactl \(Lima, SVC_WORKFLOW_MICROVM_BACKEND=backend_a\) was not found on PATH; install Lima/,
      calls: [],
    },
    {
      name: "instance missing",
      setup: {},
      message:
        /the Lima instance 'svc-test' \(SVC_WORKFLOW_MICROVM_LIMA_INSTANCE\) does not exist \(limactl list: .*No instance matching svc-test found\.\"\); create it with no host mounts/,
      calls: [["limactl", "list", "--json", INSTANCE]],
    },
    {
      name: "instance stopped",
      setup: { instances: [limaInstance("Stopped")] },
      message:
        /the Lima instance 'svc-test' is Stopped, not Running; start it with: limactl start svc-test/,
      calls: [["limactl", "list", "--json", INSTANCE]],
    },
    {
      name: "instance with mounts",
      setup: { instances: [limaInstance("Running", [{ location: "~", writable: false }])] },
      message: /the Lima instance 'svc-test' mounts host directories \(~\)/,
      calls: [["limactl", "list", "--json", INSTANCE]],
    },
    {
      name: "unknown backend",
      setup: { env: { SVC_WORKFLOW_MICROVM_BACKEND: "docker" } },
      message:
        /SVC_WORKFLOW_MICROVM_BACKEND is 'docker', which is no backend: use backend_a \(Lima\), backend_b \(krunvm\) or qemu/,
      calls: [],
    },
    {
      name: "krunvm missing",
      setup: { tools: ["limactl"], env: { SVC_WORKFLOW_MICROVM_BACKEND: "backend_b" } },
      message:
        /krunvm \(SVC_WORKFLOW_MICROVM_BACKEND=backend_b\) was not found on PATH; install krunvm/,
      calls: [],
    },
    {
      name: "image missing",
      setup: { images: [], env: { SVC_WORKFLOW_MICROVM_BACKEND: "backend_b" } },
      message:
        /krunvm could not create a VM from the image 'docker.io\/denoland\/deno:2.9.1' .*manifest unknown; buildah returned an error:\); make the image available with: buildah pull docker.io\/denoland\/deno:2.9.1/,
      calls: [],
    },
  ];
  for (const c of cases) {
    await using tools = await standIns({
      ...c.setup,
      env: { SVC_WORKFLOW_MICROVM_LIMA_INSTANCE: INSTANCE, ...c.setup.env },
    });
    const status = await runMicrovm(script);
    assert.equal(status.state, "failed", c.name);
    assert.equal(status.error?.code, "isolation_unavailable", c.name);
    assert.match(status.error?.message ?? "", c.message, c.name);
    assert.match(status.error?.message ?? "", /the script was not run/, c.name);
    assert.deepEqual(status.narration, [], c.name);
    assert.equal(status.calls.total, 0, c.name);
    const calls = await tools.calls();
    if (c.name === "image missing") {
      // krunvm create was tried, and failed: nothing was started, no VM is left.
      assert.deepEqual(calls.map((call) => call.slice(0, 2)), [["krunvm", "create"]], c.name);
    } else assert.deepEqual(calls, c.calls, c.name);
    assert.deepEqual(await tools.pids(), [], `${c.name}: nothing ran in a VM`);
    assert.deepEqual(await tools.vms(), [], c.name);
  }
});

Deno.test("with SVC_WORKFLOW_MICROVM_MAX_CONCURRENT=1 a second run waits, says so, and starts once the first ends", async () => {
  await using tools = await standIns({
    instances: [limaInstance()],
    env: { SVC_WORKFLOW_MICROVM_LIMA_INSTANCE: INSTANCE, SVC_WORKFLOW_MICROVM_MAX_CONCURRENT: "1" },
  });
  await using t = await testManager();
  const first = await t.manager.start({
    script: `log("first");\nwhile (true) {}`,
    isolation: "microvm",
  }, LOCAL);
  await untilEvent(t.manager, first.run_id, (e) => e.type === "narration");
  const second = await t.manager.start({
    script: `log("second");\nreturn 2;`,
    isolation: "microvm",
  }, LOCAL);
  await untilEvent(t.manager, second.run_id, (e) => e.type === "narration");
  const shells = async () => (await tools.calls()).filter((c) => c[1] === "shell");
  assert.equal((await shells()).length, 1, "the second run has not started a guest");
  await t.manager.cancel(first.run_id, LOCAL);
  const done = await t.manager.wait(second.run_id, LOCAL);
  assert.equal(done.state, "succeeded");
  assert.equal(done.result, 2);
  assert.deepEqual(narration(done, "warning"), [
    "waiting for a microVM slot: 1 of 1 in use (SVC_WORKFLOW_MICROVM_MAX_CONCURRENT)",
  ]);
  assert.equal((await t.manager.wait(first.run_id, LOCAL)).state, "cancelled");
  // The first run's guest was reaped inside the "VM" before the second one's shell started.
  const order = (await tools.calls()).filter((c) => c[1] === "shell").map((c) => c[5]);
  assert.deepEqual(order, ["/usr/bin/env", "pkill", "/usr/bin/env"]);
});

Deno.test("a timed-out krunvm run leaves no VM and no guest process", async () => {
  await using tools = await standIns({
    images: [IMAGE],
    env: { SVC_WORKFLOW_MICROVM_BACKEND: "backend_b" },
  });
  const status = await runMicrovm(`log("spinning");\nwhile (true) {}`, { timeout: 1 });
  assert.equal(status.state, "timeout");
  const calls = await tools.calls();
  assert.deepEqual(calls.map((c) => c[1]), ["create", "start", "delete"]);
  assert.deepEqual(await tools.vms(), []);
  const pids = await tools.pids();
  assert.equal(pids.length, 1);
  assert.ok(!alive(pids[0]!), "the guest process is gone");
});

Deno.test("a timed-out Lima run has its guest killed inside the instance, not only the local shell", async () => {
  await using tools = await standIns({
    instances: [limaInstance()],
    env: { SVC_WORKFLOW_MICROVM_LIMA_INSTANCE: INSTANCE },
  });
  const status = await runMicrovm(`log("spinning");\nwhile (true) {}`, { timeout: 1 });
  assert.equal(status.state, "timeout");
  const [guest] = await tools.pids();
  assert.ok(guest !== undefined && !alive(guest), "the guest process is gone");
  const calls = await tools.calls();
  const marker = await assertGuestCommand(calls[1]!.slice(5));
  assert.deepEqual(calls[2], [
    "limactl",
    "shell",
    "--workdir",
    "/",
    INSTANCE,
    "pkill",
    "-KILL",
    "-f",
    `[s]${marker.slice(1)}`,
  ]);
});

Deno.test("a full sandbox is clamped a second time in a microvm run, even where the server allows full", async () => {
  await using _tools = await standIns({ instances: [limaInstance()] });
  const config = ConfigSchema.parse({ sandbox: { allow_full: true, full: "allow" } });
  const script = `return await agent("deploy", { sandbox: "full" });`;
  const levels: unknown[] = [];
  for (const isolation of ["unsafe-local", "microvm"]) {
    await using t = await testManager({
      dispatcher: createDispatcher({ config, fakeLatencyMs: 0 }),
    });
    const run = await t.manager.start(
      { script, isolation, sandbox_default: "full", sandbox_max: "full" },
      LOCAL,
    );
    assert.equal((await t.manager.wait(run.run_id, LOCAL)).state, "succeeded");
    const [entry] = await t.manager.journal(run.run_id, LOCAL);
    levels.push([isolation, entry?.sandbox, entry?.sandbox_clamped]);
  }
  assert.deepEqual(levels, [
    ["unsafe-local", "full", undefined],
    [
      "microvm",
      "write",
      "full was clamped to write: the run's script is in microvm isolation, and full would " +
      "hand its agents the host it is kept out of",
    ],
  ]);
});

Deno.test("svc workflow run --isolation microvm runs through the launcher, which grants limactl", async () => {
  await using tools = await standIns({ instances: [limaInstance()] });
  const result = await runCli([
    "workflow",
    "run",
    fixture("narrating.js"),
    "--args",
    '{"count":1}',
    "--isolation",
    "microvm",
    "--json",
  ]);
  assert.equal(result.code, 0, result.stderr);
  const status = JSON.parse(result.stdout);
  assert.equal(status.state, "succeeded");
  assert.equal(status.isolation, "microvm");
  assert.deepEqual((await tools.calls()).map((c) => c[1]), ["list", "shell"]);
});

Deno.test("a run that times out while it waits for a microVM slot ends in timeout and never starts a guest", async () => {
  await using tools = await standIns({
    instances: [limaInstance()],
    env: { SVC_WORKFLOW_MICROVM_MAX_CONCURRENT: "1" },
  });
  await using t = await testManager();
  const first = await t.manager.start(
    { script: `log("first");\nwhile (true) {}`, isolation: "microvm" },
    LOCAL,
  );
  await untilEvent(t.manager, first.run_id, (e) => e.type === "narration");
  const second = await t.manager.start(
    { script: `log("second");\nreturn 2;`, isolation: "microvm", timeout: 1 },
    LOCAL,
  );
  const status = await t.manager.wait(second.run_id, LOCAL);
  assert.equal(status.state, "timeout");
  assert.deepEqual(narration(status, "log"), []);
  assert.deepEqual(narration(status, "warning"), [
    "waiting for a microVM slot: 1 of 1 in use (SVC_WORKFLOW_MICROVM_MAX_CONCURRENT)",
  ]);
  assert.equal((await tools.calls()).filter((c) => c[1] === "shell").length, 1);
  await t.manager.cancel(first.run_id, LOCAL);
  assert.equal((await t.manager.wait(first.run_id, LOCAL)).state, "cancelled");
});

Deno.test("a limactl that hangs does not hold the run past its timeout, and is killed", async () => {
  await using tools = await standIns({ instances: [limaInstance()] });
  await Deno.writeTextFile(`${tools.dir}/state/hang`, "");
  const status = await runMicrovm(`return 1;`, { timeout: 1 });
  assert.equal(status.state, "timeout");
  const hung = (await Deno.readTextFile(`${tools.dir}/state/hung`)).trim().split("\n").map(Number);
  assert.equal(hung.length, 1);
  assert.ok(!alive(hung[0]!), "the hanging limactl is gone");
  assert.deepEqual(await tools.pids(), [], "no guest started");
});

Deno.test("a microvm guest is confined as a local one: no node: imports, no permissions, no marker to read", async () => {
  await using _tools = await standIns({ instances: [limaInstance()] });
  const script = `const out = {};
const load = Function("s", "return import(s)");
try { await load("node:fs"); out.fs = "imported"; } catch (e) { out.fs = e.message; }
try { await Deno.readTextFile("/etc/hostname"); out.read = "read"; } catch (e) { out.read = e.name; }
try { Deno.env.get("HOME"); out.env = "read"; } catch (e) { out.env = e.name; }
out.marker = /svc-guest/.test(Deno.mainModule + JSON.stringify(Deno.args));
return out;`;
  const status = await runMicrovm(script);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.deepEqual(status.result, {
    fs: 'import("node:fs") is not available in workflow scripts: scripts import nothing, ' +
      "they reach the outside only through agent()",
    read: "NotCapable",
    env: "NotCapable",
    marker: false,
  });
});

Deno.test("budget and owner isolation hold in a microvm run as in a local one", async () => {
  await using _tools = await standIns({ instances: [limaInstance()] });
  await using t = await testManager();
  const alice = { owner: "alice" };
  // Each fake call costs a few tokens: a budget of 1 token lets the first start, refuses the rest.
  const script = `const a = await agent("first call"); const b = await agent("second call");` +
    ` return [a, b];`;
  const started = await t.manager.start(
    { script, isolation: "microvm", fake_dispatch: true, budget_tokens: 1 },
    alice,
  );
  const status = await t.manager.wait(started.run_id, alice);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.equal(status.guest_sandbox?.kind, "microvm");
  assert.deepEqual(status.result, ["fake response to: first call", null]);
  assert.ok(status.conditions.some((c) => c.type === "BudgetExceeded"));
  assert.equal(status.calls.skipped, 1);
  // Another owner sees nothing of it.
  assert.equal(await t.manager.get(started.run_id, { owner: "bob" }), undefined);
  await assert.rejects(t.manager.cancel(started.run_id, { owner: "bob" }), /no such run|Cannot/);
});

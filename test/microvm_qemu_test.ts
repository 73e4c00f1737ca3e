// The microvm tier's `qemu` backend in real micro-VMs: QEMU's microvm machine from Debian's
// packages, booting the image `deno task microvm:image` builds. CI installs the packages, builds
// (or takes from its cache) the image and names it in SVC_TEST_QEMU: there every test here
// must run. Elsewhere the ones that boot a VM are ignored. Each boot takes seconds under
// software emulation, so one run proves several things where that stays honest.
import assert from "node:assert/strict";
import { ConfigSchema } from "../src/config/mod.ts";
import { createDispatcher } from "../src/dispatch/mod.ts";
import type { RunStatus } from "../src/engine/mod.ts";
import { chooseAccel } from "../src/isolation/microvm_qemu_accel.ts";
import { withVmExit } from "../src/isolation/microvm_qemu_exit.ts";
import { MicrovmSlots, QEMU_IMAGE_FILES } from "../src/isolation/mod.ts";
import type { ChildProcess, ExitStatus } from "../src/platform/mod.ts";
import { startDashboard, TOKENS } from "./dashboard_helpers.ts";
import { LOCAL, narration, ROOT, tempDir, testManager, untilEvent } from "./helpers.ts";

const IMAGE = Deno.env.get("SVC_TEST_QEMU");
const QEMU = new Deno.Command("sh", { args: ["-c", "command -v qemu-system-x86_64"] })
  .outputSync();
if (IMAGE !== undefined && (!QEMU.success || !await isImage(IMAGE))) {
  throw new Error(
    `SVC_TEST_QEMU names ${IMAGE}, but QEMU is not on PATH or that is not an image directory`,
  );
}
const REAL = IMAGE !== undefined;
const IGNORED = REAL ? "" : " (ignored: SVC_TEST_QEMU names no image)";

async function isImage(dir: string): Promise<boolean> {
  const files = [QEMU_IMAGE_FILES.kernel, QEMU_IMAGE_FILES.initramfs, QEMU_IMAGE_FILES.rootfs];
  const found = await Promise.all(
    files.map((f) => Deno.stat(`${dir}/${f}`).then(() => 1, () => 0)),
  );
  return found.every((one) => one === 1);
}

/**
 * An image directory of this test's own (links to the image's files, those of `files`), so
 * that the QEMU processes of this test are found by its path; and the tier's variables set.
 */
async function qemuTier(
  env: Record<string, string> = {},
  files: readonly ("kernel" | "initramfs" | "rootfs")[] = ["kernel", "initramfs", "rootfs"],
): Promise<{ image: string; pids(): number[] } & AsyncDisposable> {
  const temp = await tempDir("svc-qemu-");
  for (const what of files) {
    const name = QEMU_IMAGE_FILES[what];
    await Deno.symlink(`${IMAGE ?? "/nonexistent"}/${name}`, `${temp.path}/${name}`);
  }
  const vars: Record<string, string> = {
    SVC_WORKFLOW_MICROVM_BACKEND: "qemu",
    SVC_WORKFLOW_MICROVM_QEMU_IMAGE: temp.path,
    ...env,
  };
  const saved = new Map<string, string | undefined>();
  for (const [name, value] of Object.entries(vars)) {
    saved.set(name, Deno.env.get(name));
    Deno.env.set(name, value);
  }
  return {
    image: temp.path,
    pids: () => qemuPids(temp.path),
    async [Symbol.asyncDispose]() {
      for (const [name, value] of saved) {
        if (value === undefined) Deno.env.delete(name);
        else Deno.env.set(name, value);
      }
      for (const pid of qemuPids(temp.path)) Deno.kill(pid, "SIGKILL");
      await temp[Symbol.asyncDispose]();
    },
  };
}

/** QEMU processes (not zombies) whose command line names `image`. */
function qemuPids(image: string): number[] {
  const out = new Deno.Command("ps", { args: ["-eo", "pid=,stat=,args="] }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([, stat, command, ...args]) =>
      !/^[ZX]/.test(stat ?? "Z") && /qemu-system/.test(command ?? "") &&
      args.some((arg) => arg.includes(image))
    )
    .map(([pid]) => Number(pid));
}

async function until(what: string, check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// ---- Without a VM: the pieces that decide how a VM runs and how its end is read.

Deno.test("the accelerator: KVM only where it really works, never PVM; kvm required fails closed", async () => {
  const probe = (paths: string[]) => ({
    existing: (asked: readonly string[]) =>
      Promise.resolve(new Set(asked.filter((path) => paths.includes(path)))),
    tscKhz: () => Promise.resolve(2_600_000),
  });
  const kvm = probe(["/dev/kvm", "/sys/module/kvm_intel"]);
  const pvm = probe(["/dev/kvm", "/sys/module/kvm_pvm", "/sys/module/kvm_intel"]);
  const none = probe([]);
  assert.equal((await chooseAccel("auto", kvm)).accel, "kvm");
  assert.deepEqual(await chooseAccel("auto", pvm), {
    accel: "tcg",
    reason: "/dev/kvm is PVM (kvm_pvm), which Debian's kernel cannot boot on",
    tscKhz: 2_600_000,
  });
  assert.deepEqual(await chooseAccel("auto", none), {
    accel: "tcg",
    reason: "/dev/kvm is missing",
    tscKhz: 2_600_000,
  });
  assert.equal((await chooseAccel("tcg", kvm)).accel, "tcg");
  assert.equal((await chooseAccel("kvm", kvm)).accel, "kvm");
  for (const [host, missing] of [[pvm, /\/dev\/kvm is PVM/], [none, /\/dev\/kvm is missing/]]) {
    await assert.rejects(
      chooseAccel("kvm", host as ReturnType<typeof probe>),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, "isolation_unavailable");
        assert.match(error.message, missing as RegExp);
        assert.match(error.message, /SVC_WORKFLOW_MICROVM_QEMU_ACCEL=kvm requires KVM/);
        assert.match(error.message, /never falls back to local execution/);
        return true;
      },
    );
  }
});

/** A QEMU stand-in: `stderr` as it writes it, then `status`. */
function fakeQemu(stderr: string[], status: ExitStatus): ChildProcess {
  const encoder = new TextEncoder();
  return {
    pid: 1,
    stdin: new WritableStream(),
    stdout: new ReadableStream({ start: (c) => c.close() }),
    stderr: new ReadableStream({
      start(controller) {
        for (const chunk of stderr) controller.enqueue(encoder.encode(chunk));
        controller.close();
      },
    }),
    status: Promise.resolve(status),
    kill() {},
  };
}

async function ended(child: ChildProcess): Promise<[string, ExitStatus]> {
  const [stderr, status] = await Promise.all([new Response(child.stderr).text(), child.status]);
  return [stderr, status];
}

Deno.test("the guest's end comes from the init's exit line, which the host never shows and a script cannot forge", async () => {
  const token = "svc-exit-0123456789abcdef0123456789abcdef";
  const clean = { code: 0, signal: null };
  // QEMU exits 0 whatever the guest did: the exit line decides. 152 is the shell's SIGXCPU.
  assert.deepEqual(
    await ended(withVmExit(fakeQemu(["warn", "ing\n", `\n${token} 3\n`], clean), token)),
    [
      "warning\n\n",
      { code: 3, signal: null },
    ],
  );
  assert.deepEqual(
    (await ended(withVmExit(fakeQemu([`${token} 152\n`], clean), token)))[1],
    { code: 152, signal: "SIGXCPU" },
  );
  // A line the script writes with another token is output like any other, and decides nothing.
  const forged = "svc-exit-ffffffffffffffffffffffffffffffff 0\n";
  const [shown, status] = await ended(withVmExit(fakeQemu([forged], clean), token));
  assert.equal(
    shown,
    `${forged}svc: the micro-VM stopped before its guest ended (QEMU exited with 0)\n`,
  );
  assert.deepEqual(status, { code: 1, signal: null });
  // Killed from outside without the line: the signal, and a line that says the VM stopped.
  const killed = await ended(
    withVmExit(fakeQemu(["partial"], { code: 137, signal: "SIGKILL" }), token),
  );
  assert.deepEqual(killed, [
    "partial\nsvc: the micro-VM stopped before its guest ended (QEMU was killed by SIGKILL)\n",
    { code: 137, signal: "SIGKILL" },
  ]);
});

Deno.test("a VM started ahead of need takes only a free slot: never one a queued run waits for", async () => {
  const slots = new MicrovmSlots(1);
  const release = slots.tryAcquire();
  assert.ok(release);
  assert.equal(slots.tryAcquire(), undefined, "the cap is reached");
  const queued = slots.acquire();
  release();
  const runs = await queued;
  assert.equal(slots.tryAcquire(), undefined, "the queued run got the slot");
  const next = slots.acquire();
  runs();
  (await next)();
  assert.equal(slots.inUse, 0);
  const free = slots.tryAcquire();
  assert.equal(slots.inUse, 1);
  free?.();
});

// ---- Fail closed: no VM starts, nothing runs locally.

function failedClosed(status: RunStatus, missing: RegExp): void {
  assert.equal(status.state, "failed");
  assert.equal(status.error?.code, "isolation_unavailable");
  assert.match(status.error?.message ?? "", missing);
  assert.match(status.error?.message ?? "", /never falls back to local execution/);
  assert.equal(status.journal.calls, 0);
  assert.deepEqual(narration(status, "log"), []);
}

Deno.test("missing QEMU, kernel, image, or the KVM it is told to require: the run fails closed naming it", async () => {
  await using t = await testManager();
  const script = `log("ran"); return await agent("x");`;
  const run = async () =>
    await t.manager.wait(
      (await t.manager.start({ script, isolation: "microvm" }, LOCAL)).run_id,
      LOCAL,
    );
  {
    await using _tier = await qemuTier({ PATH: "/nonexistent" });
    failedClosed(await run(), /QEMU \(qemu-system-x86_64, .*\) was not found on PATH/);
  }
  if (QEMU.success) {
    {
      await using tier = await qemuTier({}, ["initramfs", "rootfs"]);
      failedClosed(await run(), new RegExp(`kernel ${tier.image}/vmlinux is missing`));
    }
    {
      await using _tier = await qemuTier({ SVC_WORKFLOW_MICROVM_QEMU_IMAGE: "/nonexistent/image" });
      failedClosed(await run(), /the micro-VM image \/nonexistent\/image does not exist/);
    }
    const hostKvm = await chooseAccel("auto");
    if (hostKvm.accel === "tcg" && IMAGE !== undefined) {
      await using _tier = await qemuTier({ SVC_WORKFLOW_MICROVM_QEMU_ACCEL: "kvm" });
      failedClosed(
        await run(),
        /\/dev\/kvm .*SVC_WORKFLOW_MICROVM_QEMU_ACCEL=kvm requires KVM/,
      );
    }
  }
});

Deno.test("/api/status says which microvm backend runs use, how their VMs run, and whether one could start", async () => {
  // The services read the tier's settings once, when they open: each setting gets a dashboard.
  const microvm = async () => {
    await using d = await startDashboard();
    return ((await d.json("/api/status", { token: TOKENS.alice })).body.isolation as {
      microvm: Record<string, unknown>;
    }).microvm;
  };
  {
    await using _tier = await qemuTier({ PATH: "/nonexistent" });
    const report = await microvm();
    assert.deepEqual({ ...report, note: undefined }, {
      backend: "qemu",
      accel: null,
      ready: false,
      note: undefined,
    });
    assert.match(String(report.note), /QEMU \(qemu-system-x86_64, .*\) was not found on PATH/);
  }
  if (REAL) {
    await using _tier = await qemuTier();
    const report = await microvm();
    assert.equal(report.backend, "qemu");
    assert.equal(report.ready, true);
    assert.equal(report.accel, (await chooseAccel("auto")).accel);
    assert.match(
      String(report.note),
      report.accel === "tcg" ? /^software emulation \(TCG\)/ : /KVM/,
    );
  }
  assert.equal(
    (await microvm()).backend,
    Deno.env.get("SVC_WORKFLOW_MICROVM_BACKEND") || "backend_a",
  );
});

// ---- In real VMs.

Deno.test({
  name:
    `a qemu run: not the host's files, environment or network; budget, owner and the full clamp hold${IGNORED}`,
  ignore: !REAL,
  async fn() {
    await using tier = await qemuTier();
    let connections = 0;
    await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
      connections++;
      return new Response("host");
    });
    const config = ConfigSchema.parse({ sandbox: { full: "allow" } });
    await using t = await testManager({
      dispatcher: createDispatcher({ config, fakeLatencyMs: 0 }),
    });
    const alice = { owner: "alice" };
    const script = `const out = {};
async function attempt(name, f) { try { out[name] = await f(); } catch (e) { out[name] = e.name; } }
await attempt("passwd", () => Deno.readTextFile("/etc/passwd"));
await attempt("passwdImport", () => Function("s", "return import(s)")("file:///etc/passwd"));
await attempt("home", () => Deno.env.get("HOME"));
await attempt("env", () => Deno.env.toObject());
await attempt("net", () => fetch("http://127.0.0.1:" + args.port + "/").then((r) => r.text()));
try { await Function("s", "return import(s)")("node:fs"); out.fs = "imported"; } catch (e) { out.fs = e.message; }
out.first = await agent("deploy", { sandbox: "full" });
out.second = await agent("second call");
return out;`;
    const started = await t.manager.start({
      script,
      args: { port: server.addr.port },
      isolation: "microvm",
      fake_dispatch: true,
      budget_tokens: 1,
      sandbox_default: "full",
      sandbox_max: "full",
    }, alice);
    const status = await t.manager.wait(started.run_id, alice);
    assert.equal(status.state, "succeeded", JSON.stringify(status.error));
    const result = status.result as Record<string, unknown>;
    assert.deepEqual(
      [result.passwd, result.home, result.env, result.net],
      ["NotCapable", "NotCapable", "NotCapable", "NotCapable"],
    );
    // A module import is refused as a failed load: the error, never the file.
    assert.equal(result.passwdImport, "TypeError");
    assert.match(String(result.fs), /not available in workflow scripts/);
    assert.equal(connections, 0, "the host's server heard nothing from the VM");
    // Budget: the first call starts, the second is refused.
    assert.equal(result.first, "fake response to: deploy");
    assert.equal(result.second, null);
    assert.ok(status.conditions.some((c) => c.type === "BudgetExceeded"));
    // `full` is clamped a second time, though the server allows it.
    const [entry] = await t.manager.journal(started.run_id, alice);
    assert.equal(entry?.sandbox, "write");
    assert.match(entry?.sandbox_clamped ?? "", /full was clamped to write/);
    // Another owner sees nothing of it.
    assert.equal(await t.manager.get(started.run_id, { owner: "bob" }), undefined);
    // The status says where the guest ran and how its VM ran.
    assert.equal(status.guest_sandbox?.kind, "microvm");
    assert.equal(status.guest_sandbox?.hardened, true);
    assert.ok(["kvm", "tcg"].includes(status.guest_sandbox?.accel ?? ""));
    assert.match(status.guest_sandbox?.note ?? "", /^qemu: a VM of its own for this run/);
    const report = await t.manager.isolationReport();
    assert.deepEqual(
      { ...report.microvm, note: undefined },
      { backend: "qemu", accel: status.guest_sandbox?.accel, ready: true, note: undefined },
    );
    await until("the VM's end", () => tier.pids().length === 0, 5_000);
  },
});

Deno.test({
  name:
    `a qemu run that times out has its VM killed and reaped, keeps its journal, and resumes${IGNORED}`,
  ignore: !REAL,
  async fn() {
    await using tier = await qemuTier();
    await using t = await testManager();
    const first = await t.manager.start({
      script: `const a = await agent("one");\nlog("waiting");\nawait new Promise(() => {});`,
      isolation: "microvm",
      timeout: 20,
    }, LOCAL);
    await untilEvent(t.manager, first.run_id, (e) => e.type === "narration");
    assert.equal(tier.pids().length, 1, "one VM runs the run");
    const timedOut = await t.manager.wait(first.run_id, LOCAL);
    assert.equal(timedOut.state, "timeout");
    assert.equal(timedOut.journal.calls, 1);
    await until("the VM killed and reaped", () => tier.pids().length === 0, 5_000);
    const resumed = await t.manager.wait(
      (await t.manager.start({
        script: `const a = await agent("one");\nreturn a;`,
        isolation: "microvm",
        resume_from: first.run_id,
      }, LOCAL)).run_id,
      LOCAL,
    );
    assert.equal(resumed.state, "succeeded", JSON.stringify(resumed.error));
    assert.equal(resumed.result, "fake response to: one");
    assert.equal(resumed.journal.replayed, 1);
  },
});

Deno.test({
  name: `a crashing script ends its qemu run clearly: out of memory is reported as such${IGNORED}`,
  ignore: !REAL,
  async fn() {
    await using _tier = await qemuTier();
    await using t = await testManager({ heapMb: 64 });
    const status = await t.manager.wait(
      (await t.manager.start({
        script: `const keep = [];\nwhile (true) keep.push(new Array(100000).fill(keep.length));`,
        isolation: "microvm",
      }, LOCAL)).run_id,
      LOCAL,
    );
    assert.equal(status.state, "failed");
    assert.match(status.error?.message ?? "", /ran out of memory.*heap limit of 64 MiB/);
  },
});

Deno.test({
  name:
    `the qemu VMs share the slot cap, and a VM that dies mid-run ends its run clearly${IGNORED}`,
  ignore: !REAL,
  async fn() {
    await using tier = await qemuTier({ SVC_WORKFLOW_MICROVM_MAX_CONCURRENT: "1" });
    await using t = await testManager();
    const first = await t.manager.start(
      { script: `log("first");\nawait new Promise(() => {});`, isolation: "microvm" },
      LOCAL,
    );
    await untilEvent(t.manager, first.run_id, (e) => e.type === "narration");
    const second = await t.manager.wait(
      (await t.manager.start(
        { script: `log("second");\nreturn 2;`, isolation: "microvm", timeout: 1 },
        LOCAL,
      )).run_id,
      LOCAL,
    );
    assert.equal(second.state, "timeout");
    assert.deepEqual(narration(second, "warning"), [
      "waiting for a microVM slot: 1 of 1 in use (SVC_WORKFLOW_MICROVM_MAX_CONCURRENT)",
    ]);
    const [vm] = tier.pids();
    assert.equal(tier.pids().length, 1, "the second run never started a VM");
    Deno.kill(vm!, "SIGKILL");
    const died = await t.manager.wait(first.run_id, LOCAL);
    assert.equal(died.state, "failed");
    assert.match(
      died.error?.message ?? "",
      /the micro-VM stopped before its guest ended \(QEMU was killed by SIGKILL\)/,
    );
  },
});

Deno.test({
  name: `a host killed from outside takes its qemu VM with it${IGNORED}`,
  ignore: !REAL,
  async fn() {
    await using tier = await qemuTier();
    const host = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}/test/fixtures/microvm/qemu_host.ts`],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = host.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const pid = Number((await reader.read()).value?.trim());
    assert.deepEqual(tier.pids(), [pid]);
    Deno.kill(host.pid, "SIGKILL");
    await host.status;
    // Booting alone takes longer than this: the VM did not end by itself.
    await until("the orphaned VM killed", () => tier.pids().length === 0, 1_500);
    await reader.cancel().catch(() => {});
  },
});

Deno.test({
  name: `a long-lived host keeps one qemu VM booted ahead of need, and a run takes it${IGNORED}`,
  ignore: !REAL,
  async fn() {
    await using tier = await qemuTier();
    await using t = await testManager({ prestartGuest: true });
    await until("the VM started ahead", () => tier.pids().length === 1, 5_000);
    const [waiting] = tier.pids();
    const run = await t.manager.start(
      { script: `return await agent("hello");`, isolation: "microvm" },
      LOCAL,
    );
    const status = await t.manager.wait(run.run_id, LOCAL);
    assert.equal(status.state, "succeeded", JSON.stringify(status.error));
    // The waiting VM ran the script and powered off with its end; one the run did not take would
    // still be waiting. (What this saves, the boot, is the bench's figure, not a test's.)
    await until("the waiting VM to end with the run", () => !tier.pids().includes(waiting!), 5_000);
    assert.equal(tier.pids().length, 1, "one VM waits for the next run");
    await t.manager.close();
    await until("the waiting VM gone at close", () => tier.pids().length === 0, 5_000);
  },
});

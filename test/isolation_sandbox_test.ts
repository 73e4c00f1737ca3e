import assert from "node:assert/strict";
import {
  confine,
  createUnsafeLocalBackend,
  findBubblewrap,
  type GuestCommand,
  guestExit,
  lddPaths,
  macosDenyProfile,
  parseSandboxMode,
  type SandboxMode,
} from "../src/isolation/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { fixture, ROOT, runCli, runCommand, tempDir } from "./helpers.ts";

/**
 * CI installs bubblewrap and names it (`SVC_TEST_BWRAP`): there the hardened tests must run.
 * Elsewhere they run where bwrap works and are ignored, with the reason in their names.
 */
const probe = await findBubblewrap(Deno.execPath());
if (Deno.env.get("SVC_TEST_BWRAP") && !probe.ok) {
  throw new Error(`SVC_TEST_BWRAP is set, but bubblewrap cannot confine a guest: ${probe.reason}`);
}
const HARDENED = probe.ok;
const IGNORED = HARDENED ? "" : " (ignored: bubblewrap cannot run here)";

interface ProbeResult {
  [name: string]: { ok: boolean; value?: unknown; error?: string };
}

/**
 * Runs test/fixtures/sandbox/probe.js WITH every permission (-A) under a guest's confinement:
 * what it still cannot do, the OS sandbox alone stops.
 */
async function probeUnder(mode: SandboxMode, port: number, hostFile: string) {
  await using scratch = await tempDir("svc-sandbox-");
  const denoDir = `${scratch.path}/deno_dir`;
  await Deno.writeTextFile(denoDir, "");
  const script = fixture("sandbox/probe.js");
  const guest: GuestCommand = {
    deno: Deno.execPath(),
    args: [
      "run",
      "-A",
      "--no-config",
      "--no-remote",
      script,
      String(Deno.pid),
      String(port),
      hostFile,
    ],
    env: { DENO_DIR: denoDir, NO_COLOR: "1" },
    readable: [scratch.path, script.slice(0, script.lastIndexOf("/"))],
    dataDir: scratch.path,
  };
  const plan = await confine(guest, mode);
  const output = await new Deno.Command(plan.command, {
    args: plan.args,
    clearEnv: true,
    env: { ...guest.env },
    cwd: "/",
    stdin: "null",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return { sandbox: plan.sandbox, result: JSON.parse(stdout) as ProbeResult };
}

Deno.test(
  `a bubblewrapped guest, even with every Deno permission, reads no host file, no host process's environment and sees no other process${IGNORED}`,
  {
    ignore: !HARDENED,
  },
  async () => {
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("leak"),
    );
    await using home = await tempDir("svc-sandbox-host-");
    const secret = `${home.path}/secret.txt`;
    await Deno.writeTextFile(secret, "host secret");
    {
      // The same probe without the sandbox reaches everything: the test can fail.
      const open = await probeUnder("off", server.addr.port, secret);
      assert.equal(open.sandbox.kind, "none");
      assert.equal(open.result.host_file?.value, "host secret");
      assert.match(String(open.result.host_environ?.value), /(^|\0)PATH=/);
      assert.equal(open.result.loopback?.value, "connected");
      assert.ok((open.result.pids?.value as number[]).includes(Deno.pid));

      const shut = await probeUnder("auto", server.addr.port, secret);
      assert.deepEqual(shut.sandbox, { kind: "bubblewrap", hardened: true, note: null });
      const { result } = shut;
      assert.equal(result.host_file?.ok, false, "a host file");
      assert.match(String(result.host_file?.error), /NotFound/);
      assert.equal(result.host_environ?.ok, false, "the host's /proc/<pid>/environ");
      assert.equal(result.passwd?.ok, false, "/etc of the host");
      // Its own PID namespace: bwrap's init (1) and itself (2), nothing of the host's.
      assert.deepEqual(result.pids?.value, [1, 2]);
      // No network at all: not even the host's loopback.
      assert.equal(result.loopback?.ok, false, "a socket to 127.0.0.1");
      // Only what the host set, and the PWD bwrap sets for --chdir /.
      const env = result.env?.value as Record<string, string>;
      assert.deepEqual(Object.keys(env).sort(), ["DENO_DIR", "NO_COLOR", "PWD"]);
      assert.equal(env.PWD, "/");
    }
  },
);

Deno.test(`two bubblewrapped guests at once cannot see each other's processes${IGNORED}`, {
  ignore: !HARDENED,
}, async () => {
  await using home = await tempDir("svc-sandbox-host-");
  const file = `${home.path}/f`;
  await Deno.writeTextFile(file, "x");
  const [a, b] = await Promise.all([probeUnder("on", 9, file), probeUnder("on", 9, file)]);
  assert.deepEqual(a.result.pids?.value, [1, 2]);
  assert.deepEqual(b.result.pids?.value, [1, 2]);
});

Deno.test(`a workflow run's guest runs in bubblewrap, and the run's status says so${IGNORED}`, {
  ignore: !HARDENED,
}, async () => {
  await using home = await tempDir("svc-home-");
  await Deno.writeTextFile(`${home.path}/s.js`, `return await agent("hi");`);
  const run = await runCli(["workflow", "run", `${home.path}/s.js`, "--fake-dispatch", "--json"], {
    home: home.path,
  });
  assert.equal(run.code, 0, run.stderr);
  const status = JSON.parse(run.stdout);
  assert.equal(status.result, "fake response to: hi");
  assert.deepEqual(status.guest_sandbox, { kind: "bubblewrap", hardened: true, note: null });
  const shown = await runCli(["workflow", "status", status.run_id], { home: home.path });
  assert.match(shown.stdout + shown.stderr, /unsafe-local.*bubblewrap/);
  const off = await runCli(["workflow", "run", `${home.path}/s.js`, "--fake-dispatch", "--json"], {
    home: home.path,
    env: { SVC_WORKFLOW_SANDBOX: "off" },
  });
  assert.deepEqual(JSON.parse(off.stdout).guest_sandbox, {
    kind: "none",
    hardened: false,
    note: "SVC_WORKFLOW_SANDBOX=off",
  });
});

Deno.test("without bubblewrap, SVC_WORKFLOW_SANDBOX=on fails closed and auto runs unconfined, saying why", async () => {
  await using home = await tempDir("svc-home-");
  await Deno.writeTextFile(`${home.path}/s.js`, `return await agent("hi");`);
  // A PATH without bwrap (nor prlimit or ldd): the host finds no sandbox.
  const env = { PATH: "/nonexistent" };
  const on = await runCli(["workflow", "run", `${home.path}/s.js`, "--fake-dispatch", "--json"], {
    home: home.path,
    env: { ...env, SVC_WORKFLOW_SANDBOX: "on" },
  });
  assert.equal(on.code, 1);
  const refused = JSON.parse(on.stdout);
  assert.equal(refused.state, "failed");
  assert.equal(refused.error.code, "isolation_unavailable");
  assert.match(
    refused.error.message,
    /SVC_WORKFLOW_SANDBOX=on, but bubblewrap \(bwrap\) is not installed/,
  );
  assert.match(refused.error.message, /the script was not run/);
  assert.equal(refused.journal.calls, 0);
  const auto = await runCli(["workflow", "run", `${home.path}/s.js`, "--fake-dispatch", "--json"], {
    home: home.path,
    env,
  });
  assert.equal(auto.code, 0, auto.stderr);
  assert.deepEqual(JSON.parse(auto.stdout).guest_sandbox, {
    kind: "none",
    hardened: false,
    note: "bubblewrap (bwrap) is not installed (install it with: apt-get install -y bubblewrap)",
  });
  const bogus = await runCli(
    ["workflow", "run", `${home.path}/s.js`, "--fake-dispatch", "--json"],
    {
      home: home.path,
      env: { SVC_WORKFLOW_SANDBOX: "sometimes" },
    },
  );
  assert.match(
    JSON.parse(bogus.stdout).error.message,
    /SVC_WORKFLOW_SANDBOX is "sometimes"; it must be auto, on or off/,
  );
});

Deno.test("SVC_WORKFLOW_SANDBOX takes auto, on and off, and nothing else", () => {
  assert.equal(parseSandboxMode(undefined), "auto");
  assert.equal(parseSandboxMode(""), "auto");
  assert.equal(parseSandboxMode("ON"), "on");
  assert.equal(parseSandboxMode("off"), "off");
  assert.throws(() => parseSandboxMode("yes"), SvcError);
});

Deno.test("the macOS deny-list profile denies the secret places and the network, and lets the guest read its own files", () => {
  const profile = macosDenyProfile({
    home: "/Users/ann",
    svcHome: "/Users/ann/.svc",
    readable: ["/Users/ann/.svc/tmp/guest-1", '/opt/svc "quoted"/guest'],
  });
  const lines = profile.split("\n");
  assert.equal(lines[0], "(version 1)");
  assert.ok(lines.includes("(deny network*)"));
  for (
    const path of [".ssh", ".aws", ".gnupg", ".config", ".kube", ".docker", ".netrc", ".claude"]
  ) {
    assert.ok(lines.includes(`  (subpath "/Users/ann/${path}")`), path);
  }
  assert.ok(
    lines.includes(`  (subpath "/Users/ann/.svc")`),
    "svc's data directory, tokens and all",
  );
  assert.ok(
    lines.some((line) => line.includes("(regex") && line.includes("\\\\.env")),
    ".env files",
  );
  // The guest's own scratch directory lies under SVC_HOME: its allow comes after the deny.
  const deny = lines.indexOf(`  (subpath "/Users/ann/.svc")`);
  const allow = lines.indexOf(`(allow file-read* (subpath "/Users/ann/.svc/tmp/guest-1"))`);
  assert.ok(allow > deny && deny > 0);
  // A quote in a path cannot end the string early.
  assert.ok(lines.includes(`(allow file-read* (subpath "/opt/svc \\"quoted\\"/guest"))`));
});

Deno.test("bwrap's exit status 128+n is the guest's death by signal n; ldd's output lists the libraries", () => {
  assert.deepEqual(guestExit({ code: 152, signal: null }), { code: 152, signal: "SIGXCPU" });
  assert.deepEqual(guestExit({ code: 137, signal: null }), { code: 137, signal: "SIGKILL" });
  assert.deepEqual(guestExit({ code: 1, signal: null }), { code: 1, signal: null });
  assert.deepEqual(
    lddPaths(
      "\tlinux-vdso.so.1 (0x00007fff)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n" +
        "\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n",
    ),
    ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"],
  );
});

/**
 * `findBubblewrap(deno, { dataDir })` in a process of its own, as the launched host runs it
 * (no --allow-all, so no boot id): the libraries of the verdict it returns.
 */
async function librariesFoundBy(deno: string, dataDir: string): Promise<string[]> {
  const code = `import { findBubblewrap } from ${JSON.stringify(`${ROOT}/src/isolation/mod.ts`)};
    const probe = await findBubblewrap(${JSON.stringify(deno)}, { dataDir: ${
    JSON.stringify(dataDir)
  } });
    console.log(JSON.stringify(probe.ok ? probe.sandbox.libraries : probe.reason));`;
  const result = await runCommand(Deno.execPath(), [
    "eval",
    "--no-prompt",
    "--allow-read",
    `--allow-write=${dataDir}`,
    "--allow-run",
    "--allow-env",
    code,
  ]);
  assert.equal(result.code, 0, result.stderr);
  const found = JSON.parse(result.stdout) as unknown;
  assert.ok(Array.isArray(found), `bubblewrap did not work: ${String(found)}`);
  return found as string[];
}

Deno.test(
  `a working bubblewrap verdict is kept under the data directory until the deno binary changes${IGNORED}`,
  {
    ignore: !HARDENED,
  },
  async () => {
    await using dir = await tempDir("svc-bwrap-cache-");
    const deno = `${dir.path}/deno`;
    await Deno.copyFile(Deno.execPath(), deno);
    await Deno.chmod(deno, 0o755);
    const dataDir = `${dir.path}/home`;
    const cacheFile = `${dataDir}/cache/bubblewrap.json`;
    const probed = await librariesFoundBy(deno, dataDir);
    const cached = JSON.parse(await Deno.readTextFile(cacheFile)) as Record<string, unknown>;
    assert.deepEqual(cached.libraries, probed);
    // A verdict naming a library only the cache knows: a process returning it read the cache.
    const marker = `${dir.path}/libmarker.so`;
    await Deno.writeTextFile(marker, "");
    const plant = async () => {
      const libraries = [...probed, marker];
      const stamps = await Promise.all(libraries.map(async (path) => {
        const info = await Deno.stat(path);
        return [info.size, info.mtime?.getTime() ?? null];
      }));
      await Deno.writeTextFile(
        cacheFile,
        JSON.stringify({ ...cached, libraries, stamps: JSON.stringify(stamps) }),
      );
    };
    await plant();
    const planted = await Deno.readTextFile(cacheFile);
    assert.deepEqual(await librariesFoundBy(deno, dataDir), [...probed, marker]);
    // A process that read the verdict leaves it as it was: no write on a guest's start, and a
    // verdict that cannot be tied to a boot still lasts an hour from its probe.
    assert.equal(await Deno.readTextFile(cacheFile), planted);
    // A library changed since: probed again.
    await Deno.utime(marker, 1_000, 1_000);
    assert.deepEqual(await librariesFoundBy(deno, dataDir), probed);
    // The deno binary changed since: probed again.
    await plant();
    assert.deepEqual(await librariesFoundBy(deno, dataDir), [...probed, marker]);
    await Deno.utime(deno, 2_000, 2_000);
    assert.deepEqual(await librariesFoundBy(deno, dataDir), probed);
  },
);

/** The pids of `pid`'s tree (itself included), as ps(1) sees it. */
async function treeOf(pid: number): Promise<number[]> {
  const output = await new Deno.Command("ps", { args: ["-A", "-o", "pid=,ppid=,stat="] }).output();
  const rows = new TextDecoder().decode(output.stdout).trim().split("\n").map((line) =>
    line.trim().split(/\s+/)
  ).filter((row) => !row[2]?.startsWith("Z")).map((row) => [Number(row[0]), Number(row[1])]);
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    for (const [child, parent] of rows) if (parent === tree[i]) tree.push(child!);
  }
  return tree.filter((p) => rows.some(([q]) => q === p));
}

Deno.test(
  `disposing a bubblewrapped guest ends its whole tree through its process group${IGNORED}`,
  {
    ignore: !HARDENED,
  },
  async () => {
    await using home = await tempDir("svc-sandbox-kill-");
    const backend = createUnsafeLocalBackend();
    const guest = await backend.spawn({ scratchRoot: home.path, heapMb: 128, seed: 1 });
    let tree: number[] = [];
    // bwrap, its init and the guest's deno (prlimit execs bwrap): wait for the last to appear.
    for (let i = 0; i < 100 && tree.length < 3; i++) {
      tree = await treeOf(guest.process.pid);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(tree.length >= 3, `the guest's tree: ${tree.join(" ")}`);
    await guest.dispose();
    let left = tree;
    for (let i = 0; i < 100 && left.length > 0; i++) {
      left = (await Promise.all(tree.map(treeOf))).flat();
      if (left.length > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.deepEqual(left, [], "every process of the guest ended");
  },
);

/** The platform seam: the only module that reaches the runtime, and what it offers. */
import assert from "node:assert/strict";
import { denoPlatform } from "../src/platform/deno.ts";
import { groupStart } from "../src/platform/group_start.ts";
import { type Platform, platform, setPlatform } from "../src/platform/mod.ts";
import { ROOT, runScript, sourceModules } from "./helpers.ts";

Deno.test("no module outside src/platform touches Deno.* or Node-only APIs", async () => {
  const offenders: string[] = [];
  for (const file of [...await sourceModules("src"), ...await sourceModules("cli")]) {
    if (file.startsWith("src/platform/")) continue;
    const code = (await Deno.readTextFile(`${ROOT}/${file}`))
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/\/\/.*$/gm, "");
    if (/\bDeno\./.test(code)) offenders.push(`${file}: Deno.*`);
    if (/from\s+["']node:/.test(code)) offenders.push(`${file}: node: import`);
    if (/\bprocess\.(env|argv|exit|on)\b/.test(code)) offenders.push(`${file}: process.*`);
  }
  assert.deepEqual(offenders, []);
});

Deno.test("the Deno platform serves HTTP on 127.0.0.1 until closed", async () => {
  const server = await platform().serve(
    async (request) =>
      Response.json({ path: new URL(request.url).pathname, body: await request.text() }),
    { hostname: "127.0.0.1", port: 0 },
  );
  try {
    assert.equal(server.hostname, "127.0.0.1");
    assert.ok(server.port > 0);
    const reply = await fetch(`http://127.0.0.1:${server.port}/echo`, {
      method: "POST",
      body: "hello",
    });
    assert.equal(reply.status, 200);
    assert.deepEqual(await reply.json(), { path: "/echo", body: "hello" });
  } finally {
    await server.close();
  }
  await assert.rejects(fetch(`http://127.0.0.1:${server.port}/echo`));
});

Deno.test("a failing handler answers a JSON 500 without details; aborting the signal closes the server", async () => {
  const controller = new AbortController();
  const server = await platform().serve(() => Promise.reject(new Error("secret detail")), {
    hostname: "127.0.0.1",
    port: 0,
    signal: controller.signal,
  });
  const reply = await fetch(`http://127.0.0.1:${server.port}/`);
  assert.equal(reply.status, 500);
  const text = await reply.text();
  assert.deepEqual(JSON.parse(text), {
    error: { status: 500, code: "internal", message: "Internal error" },
  });
  assert.ok(!text.includes("secret"));
  controller.abort();
  await server.close();
  await assert.rejects(fetch(`http://127.0.0.1:${server.port}/`));
});

Deno.test("missingGrant names the grant of a refused operation, and nothing else", () => {
  const p = platform();
  const refused = new Deno.errors.NotCapable(
    'Requires run access to "/usr/bin/prlimit", run again with the --allow-run flag',
  );
  assert.equal(p.missingGrant(refused), '--allow-run (run access to "/usr/bin/prlimit")');
  assert.equal(p.missingGrant(new Deno.errors.NotFound("gone")), undefined);
  assert.equal(p.missingGrant("a string"), undefined);
});

Deno.test("under deno run the guests' Deno is the host's own binary; nothing is embedded", () => {
  assert.equal(platform().denoExecutable(), Deno.execPath());
  assert.equal(platform().embedded, false);
});

/** Runs `action` with a platform derived from the Deno one, then puts the Deno one back. */
async function withPlatform<T>(changes: Partial<Platform>, action: () => Promise<T>): Promise<T> {
  setPlatform({ ...denoPlatform, ...changes });
  try {
    return await action();
  } finally {
    setPlatform(denoPlatform);
  }
}

Deno.test("when the host's files are embedded (compiled svc), guests run a copy of the bootstrap from their scratch space", async () => {
  const spawned: string[][] = [];
  const status = await withPlatform({
    embedded: true,
    spawn(command, options) {
      spawned.push([command, ...options.args]);
      return denoPlatform.spawn(command, options);
    },
  }, () => runScript('phase("one"); return await agent("hi");', { fake_dispatch: true }));
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.equal(status.result, "fake response to: hi");
  // The guest's command (not a probe of the OS sandbox, which may come first).
  const main = spawned.map((argv) => argv.at(-1) ?? "").find((arg) => arg.endsWith(".js")) ?? "";
  assert.match(main, /\/tmp\/guest-[^/]+\/guest\/bootstrap_bundle\.js$/);
  assert.ok(!main.startsWith(`${ROOT}/guest/`));
});

Deno.test("without a Deno for guests the run fails closed with a clear error", async () => {
  const status = await withPlatform(
    {
      denoExecutable: () => undefined,
      env: (name) => name === "SVC_DENO" ? undefined : Deno.env.get(name),
    },
    () => runScript("return 1;"),
  );
  assert.equal(status.state, "failed");
  assert.equal(
    status.error?.message,
    "Cannot start the guest: no Deno binary to run it (set SVC_DENO to one, or put deno on PATH)",
  );
  const missing = await withPlatform(
    { env: (name) => name === "SVC_DENO" ? "/nonexistent/deno" : Deno.env.get(name) },
    () => runScript("return 1;"),
  );
  assert.equal(missing.state, "failed");
  assert.equal(
    missing.error?.message,
    "Cannot start the guest: SVC_DENO names '/nonexistent/deno', which does not exist",
  );
});

Deno.test("a process's descendants are found through their parents, in /proc's stat lines and in ps output", async () => {
  const { descendantsOf, procParents, psParents } = await import(
    "../src/platform/process_tree.ts"
  );
  const stats: Record<string, string> = {
    "/proc/10/stat": "10 (claude) S 1 10 10 0",
    "/proc/11/stat": "11 (ba sh) (x)) S 10 11 11 0",
    "/proc/12/stat": "12 (tail) S 11 11 11 0",
    "/proc/13/stat": "13 (other) S 1 13 13 0",
  };
  const table = procParents({
    readDir: () => ["10", "11", "12", "13", "self"],
    readFile: (path) => stats[path]!,
  });
  assert.deepEqual(descendantsOf(10, table!), [11, 12]);
  assert.equal(
    procParents({
      readDir: () => {
        throw new Error("no grant");
      },
      readFile: () => "",
    }),
    undefined,
  );
  assert.deepEqual(
    descendantsOf(10, psParents("   10     1\n   11    10\n   12    11\n   13     1\n")),
    [11, 12],
  );
});

/** Whether `pid` runs (a zombie does not), as ps(1) sees it. */
async function running(pid: number): Promise<boolean> {
  const output = await new Deno.Command("ps", { args: ["-o", "stat=", "-p", String(pid)] })
    .output();
  const state = new TextDecoder().decode(output.stdout).trim();
  return state !== "" && !state.startsWith("Z");
}

/** Whether `pid` leads a process group of its own within two seconds, as ps(1) sees it. */
async function leadsGroup(pid: number): Promise<boolean> {
  for (let i = 0; i < 40; i++) {
    const output = await new Deno.Command("ps", { args: ["-o", "pgid=", "-p", String(pid)] })
      .output();
    if (Number(new TextDecoder().decode(output.stdout).trim()) === pid) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** Whether `pid` has stopped running within two seconds. */
async function ends(pid: number): Promise<boolean> {
  for (let i = 0; i < 40; i++) {
    if (!(await running(pid))) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/**
 * Kills a child of `sh` that started a `sleep` in a session of its own; whether that sleep
 * ended with it. The sleep is killed here in any case.
 */
async function killLeavesEscaped(options: { groupHoldsTree: boolean }): Promise<boolean> {
  const child = platform().spawn("sh", {
    args: ["-c", "setsid sleep 300 & echo $!; exec sleep 300"],
    newProcessGroup: true,
    ...options,
  });
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const { value } = await reader.read();
  const escaped = Number(value?.trim());
  assert.ok(Number.isInteger(escaped) && escaped > 0, `no pid in '${value}'`);
  assert.ok(await running(escaped));
  try {
    // `$!` is printed as the shell forks: until its setsid() the sleep is still in the group.
    assert.ok(await leadsGroup(escaped), "the sleep left the child's group");
    child.kill("SIGKILL");
    await child.status;
    return await ends(escaped);
  } finally {
    await reader.cancel().catch(() => {});
    await child.stderr.cancel().catch(() => {});
    try {
      Deno.kill(escaped, "SIGKILL");
    } catch {
      // It ended with the child.
    }
  }
}

Deno.test("a kill reaches descendants that left the group, except for a child whose group holds its tree (a guest): no pass over every process", async () => {
  // Found through the parent table: the sleep in a session of its own ends with the child.
  assert.equal(await killLeavesEscaped({ groupHoldsTree: false }), true);
  // The group alone: the table is not read, so what left the group (which a guest cannot) stays.
  assert.equal(await killLeavesEscaped({ groupHoldsTree: true }), false);
});

Deno.test("a child in a group of its own leads its group and its session, started through setsid(1) where it may run it; a kill at once, or of the group later, ends its tree", async () => {
  const which = (name: string) => platform().which(name);
  const started = groupStart("/bin/sh", ["-c", "true"], which);
  if (Deno.build.os === "linux" && which("setsid")) {
    // The spawn is the plain one (no full fork of the host): setsid(1) makes the session.
    assert.deepEqual(started, {
      command: which("setsid"),
      args: ["--", "/bin/sh", "-c", "true"],
      detached: false,
    });
  }
  // A program that is not there still fails the spawn itself.
  assert.equal(groupStart("/nonexistent/program", [], which).detached, true);
  assert.throws(() =>
    platform().spawn("/nonexistent/program", { args: [], newProcessGroup: true })
  );

  const child = platform().spawn("/bin/sh", {
    args: ["-c", "sleep 300 & echo $!; wait"],
    newProcessGroup: true,
    groupHoldsTree: true,
  });
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const grandchild = Number((await reader.read()).value?.trim());
  const ids = async (pid: number) => {
    const output = await new Deno.Command("ps", { args: ["-o", "pgid=,sid=", "-p", String(pid)] })
      .output();
    return new TextDecoder().decode(output.stdout).trim().split(/\s+/);
  };
  assert.deepEqual(await ids(child.pid), [String(child.pid), String(child.pid)]);
  assert.deepEqual(await ids(grandchild), [String(child.pid), String(child.pid)]);
  child.kill("SIGKILL");
  assert.equal((await child.status).signal, "SIGKILL");
  assert.ok(await ends(grandchild), "the group's kill ends the grandchild");
  await reader.cancel().catch(() => {});
  await child.stderr.cancel().catch(() => {});

  // Killed before setsid(1) may have made the group: the child alone is the tree, and ends.
  for (let i = 0; i < 20; i++) {
    const early = platform().spawn("/bin/sh", {
      args: ["-c", "exec sleep 300"],
      newProcessGroup: true,
      groupHoldsTree: true,
    });
    early.kill("SIGKILL");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"still running">((resolve) => {
      timer = setTimeout(() => resolve("still running"), 5000);
    });
    const ended = await Promise.race([early.status, late]);
    clearTimeout(timer);
    if (ended === "still running") {
      Deno.kill(early.pid, "SIGKILL");
      assert.fail("a child killed right after its spawn kept running");
    }
    assert.equal(ended.signal, "SIGKILL");
    await early.stdout.cancel();
    await early.stderr.cancel();
  }
});

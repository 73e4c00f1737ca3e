import assert from "node:assert/strict";
import { createUnsafeLocalBackend, defaultBootstrapPath } from "../src/isolation/mod.ts";
import { type GuestHandlers, type GuestOutcome, runGuest } from "../src/engine/mod.ts";
import { LOCAL, narration, runScript, tempDir, testManager } from "./helpers.ts";

const NONCE = "5eed".repeat(16);

/** Everything the run exposes to its caller, as one string to search for leaks. */
function everything(value: unknown): string {
  return JSON.stringify(value);
}

/** Runs a body in a guest directly, bypassing the host's static script check. */
async function rawGuest(
  body: string,
  handlers: Partial<GuestHandlers> = {},
  options: { scratchRoot?: string; bootstrapPath?: string; cpuSeconds?: number } = {},
): Promise<{ outcome: GuestOutcome; output: string[] }> {
  await using scratch = await tempDir();
  const output: string[] = [];
  const outcome = await runGuest({
    backend: createUnsafeLocalBackend({ bootstrapPath: options.bootstrapPath }),
    scratchRoot: options.scratchRoot ?? scratch.path,
    body,
    filename: "raw.js",
    args: { given: false },
    budget: { total: null, unit: "tokens" },
    signal: new AbortController().signal,
    nonce: () => NONCE,
    cpuSeconds: options.cpuSeconds,
    handlers: {
      agent: () => Promise.resolve({ value: "answer", spent: 0 }),
      workflow: () => Promise.reject(new Error("no sub-workflows here")),
      phase: () => {},
      log: (text) => output.push(text),
      itemError: () => {},
      output: (text) => output.push(text),
      security: () => {},
      ...handlers,
    },
  });
  return { outcome, output };
}

/** Runs `attempt` (an async function body) in the guest and returns "ok: ..." or the error it threw. */
async function attempt(source: string): Promise<string> {
  const status = await runScript(`
    try { return "ok: " + String(await (async () => { ${source} })()); }
    catch (e) { return e.name + ": " + e.message; }
  `);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  return status.result as string;
}

const dynamicImport = `const load = Function("s", "o", "return import(s, o)");`;

Deno.test("the guest cannot read files: computed imports, Deno.readTextFile, node:fs", async () => {
  await using dir = await tempDir();
  const secret = `${dir.path}/secret.txt`;
  await Deno.writeTextFile(secret, "TOPSECRET");
  const attempts = [
    `${dynamicImport} return (await load("file://${secret}", { with: { type: "text" } })).default;`,
    `${dynamicImport} return (await load("${secret}", { with: { type: "text" } })).default;`,
    `return await Deno.readTextFile("${secret}");`,
    `return Deno.readFileSync("${secret}");`,
    `return await Deno.readDir("/")[Symbol.asyncIterator]().next();`,
  ];
  for (const source of attempts) {
    const seen = await attempt(source);
    assert.match(seen, /^(NotCapable|TypeError): Requires read access/, `${source} => ${seen}`);
    assert.ok(!seen.includes("TOPSECRET"));
  }
  const viaNode = await attempt(
    `${dynamicImport} const fs = await load("node:fs"); return fs.readFileSync("${secret}", "utf8");`,
  );
  assert.match(viaNode, /^Error: import\("node:fs"\) is not available in workflow scripts/);
});

Deno.test("user code is never a pre-loaded module: a literal import is permission-checked", async () => {
  // The static check would refuse this script; the guest must refuse it on its own too.
  await using dir = await tempDir();
  const secret = `${dir.path}/secret.txt`;
  await Deno.writeTextFile(secret, "TOPSECRET");
  const { outcome } = await rawGuest(
    `return (await import("file://${secret}", { with: { type: "text" } })).default;`,
  );
  assert.equal(outcome.kind, "threw");
  assert.ok(
    outcome.kind === "threw" && /Requires read access/.test(outcome.error.message),
    JSON.stringify(outcome),
  );
  assert.ok(!everything(outcome).includes("TOPSECRET"));
});

Deno.test("the guest cannot read the environment", async () => {
  assert.match(
    await attempt(`return Deno.env.get("HOME");`),
    /^NotCapable: Requires env access to "HOME"/,
  );
  assert.match(
    await attempt(`return JSON.stringify(Deno.env.toObject());`),
    /^NotCapable: Requires env access/,
  );
  assert.match(await attempt(`return process.env.HOME;`), /^NotCapable: Requires env access/);
});

Deno.test("the guest is spawned with a cleared environment and the hardening flags", async () => {
  Deno.env.set("SVC_TEST_HOST_SECRET", "do-not-pass");
  try {
    let environ = "";
    let cmdline: string[] = [];
    let pid = 0;
    const { outcome } = await rawGuest(`return await agent("look at me");`, {
      spawned: (p) => (pid = p),
      agent: async () => {
        // Deno wants --allow-all for /proc/<pid>/environ; cat reads it with run permission only.
        const read = async (file: string) => {
          const out = await new Deno.Command("cat", { args: [`/proc/${pid}/${file}`] }).output();
          return new TextDecoder().decode(out.stdout);
        };
        environ = await read("environ");
        cmdline = (await read("cmdline")).split("\0");
        return { value: "seen", spent: 0 };
      },
    });
    assert.deepEqual(outcome, { kind: "returned", value: "seen" });
    const names = environ.split("\0").filter(Boolean).map((pair) => pair.split("=")[0]).sort();
    assert.deepEqual(names, [
      "DENO_DIR",
      "DENO_NO_PACKAGE_JSON",
      "DENO_NO_UPDATE_CHECK",
      "NO_COLOR",
    ]);
    assert.ok(!environ.includes("do-not-pass"));
    // Plain, the process is Deno itself; in bubblewrap, bwrap binds the same binary.
    const bound = cmdline.indexOf("/usr/bin/deno");
    const binary = bound > 0 && cmdline[bound - 2] === "--ro-bind"
      ? cmdline[bound - 1]
      : cmdline[0];
    assert.ok(
      [Deno.execPath(), await Deno.realPath(Deno.execPath())].includes(binary ?? ""),
      "the guest runs on the host's own Deno binary",
    );
    // Listed here, not imported: removing a flag from the source must fail this test.
    for (const flag of ["--no-prompt", "--no-config", "--no-remote", "--no-npm", "--cached-only"]) {
      assert.ok(cmdline.includes(flag), `missing ${flag}`);
    }
    assert.ok(
      !cmdline.some((arg) => arg.startsWith("--allow") || arg === "-A"),
      "no permission flag",
    );
    assert.ok(
      cmdline.some((arg) => arg.startsWith("--v8-flags=--max-old-space-size=")),
      "heap cap",
    );
    assert.ok(cmdline.includes("--seed=1"));
    assert.match(
      cmdline.at(-2) ?? "",
      /\/guest\/bootstrap_bundle\.js$/,
      "the trusted bootstrap is the main module",
    );
  } finally {
    Deno.env.delete("SVC_TEST_HOST_SECRET");
  }
});

Deno.test("the guest cannot open sockets or fetch, even to a server on 127.0.0.1", async () => {
  let requests = 0;
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    requests++;
    return new Response("leak");
  });
  const port = server.addr.port;
  assert.match(
    await attempt(`return await (await fetch("http://127.0.0.1:${port}/")).text();`),
    /^NotCapable: Requires net access to "127\.0\.0\.1:\d+"/,
  );
  assert.match(
    await attempt(`return await Deno.connect({ hostname: "127.0.0.1", port: ${port} });`),
    /^NotCapable: Requires net access/,
  );
  assert.match(
    await attempt(`return Deno.listen({ port: 0 });`),
    /^NotCapable: Requires net access/,
  );
  assert.match(
    await attempt(`return new WebSocket("ws://127.0.0.1:${port}/");`),
    /^NotCapable: Requires net access/,
  );
  assert.equal(requests, 0);
});

Deno.test("the guest cannot spawn processes or load FFI libraries", async () => {
  assert.match(
    await attempt(`return await new Deno.Command("/bin/sh", { args: ["-c", "id"] }).output();`),
    /^NotCapable: Requires run access to "\/bin\/sh"/,
  );
  assert.match(
    await attempt(`${dynamicImport} return (await load("node:child_process")).execSync("id");`),
    /^Error: import\("node:child_process"\) is not available in workflow scripts/,
  );
  assert.match(
    await attempt(`return Deno.dlopen("libc.so.6", {});`),
    /^NotCapable: Requires ffi access/,
  );
});

Deno.test("the guest cannot import npm:, https: or jsr: specifiers", async () => {
  assert.match(
    await attempt(`${dynamicImport} return await load("npm:" + "left-pad");`),
    /--no-npm is specified/,
  );
  assert.match(
    await attempt(`${dynamicImport} return await load("https://deno.land/std/path/mod.ts");`),
    /--no-remote is specified/,
  );
  assert.match(
    await attempt(`${dynamicImport} return await load("jsr:@std/path");`),
    /--no-remote is specified/,
  );
});

Deno.test("--no-config: a deno.json above the installed bootstrap is not picked up", async () => {
  // Deno looks for a configuration file upwards from the main module. An install location
  // with a deno.json above it (unstable APIs, import maps) must not change the guest.
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/pkg/guest`, { recursive: true });
  const guestDir = defaultBootstrapPath().replace(/\/[^/]+$/, "");
  for (const entry of Deno.readDirSync(guestDir)) {
    if (entry.name.endsWith(".js")) {
      await Deno.copyFile(`${guestDir}/${entry.name}`, `${dir.path}/pkg/guest/${entry.name}`);
    }
  }
  await Deno.writeTextFile(`${dir.path}/deno.json`, JSON.stringify({ unstable: ["kv"] }));
  const { outcome } = await rawGuest(`return typeof Deno.openKv;`, {}, {
    bootstrapPath: `${dir.path}/pkg/guest/bootstrap.js`,
  });
  assert.deepEqual(outcome, { kind: "returned", value: "undefined" });
});

Deno.test("the script has no storage: the Cache API and Web Storage are refused with a clear error", async () => {
  await using t = await testManager();
  const status = await t.manager.wait(
    (await t.manager.start({
      script: `
        const out = [];
        const attempt = async (run) => {
          try { out.push("reached: " + await run()); } catch (e) { out.push(e.message); }
        };
        await attempt(async () => (await caches.open("c")).put("http://x/", new Response("big")));
        await attempt(() => localStorage.setItem("k", "v"));
        await attempt(() => sessionStorage.setItem("k", "v"));
        await attempt(() => Object.getPrototypeOf(localStorage).setItem.call(localStorage, "k", "v"));
        await attempt(() => CacheStorage.prototype.open.call(caches, "c"));
        await attempt(() => { Reflect.deleteProperty(globalThis, "caches"); return caches.open("c"); });
        return out;
      `,
    }, LOCAL)).run_id,
    LOCAL,
  );
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const out = status.result as string[];
  assert.equal(out.length, 6);
  for (const seen of out) {
    assert.match(
      seen,
      /^(caches|localStorage|sessionStorage|CacheStorage) is not available in workflow scripts: scripts have no storage/,
    );
  }
  assert.deepEqual([...Deno.readDirSync(`${t.home}/tmp`)], [], "scratch space is removed");
});

/** A copy of the guest's files whose confinement (guest/confinement.js) does nothing. */
async function unconfinedBootstrap(dir: string): Promise<string> {
  await Deno.mkdir(`${dir}/guest`);
  const guestDir = defaultBootstrapPath().replace(/\/[^/]+$/, "");
  for (const entry of Deno.readDirSync(guestDir)) {
    await Deno.copyFile(`${guestDir}/${entry.name}`, `${dir}/guest/${entry.name}`);
  }
  const confinement = await Deno.readTextFile(`${guestDir}/confinement.js`);
  const exported = [...confinement.matchAll(/^export function (\w+)/gm)].map((m) => m[1]);
  assert.ok(exported.length > 0);
  await Deno.writeTextFile(
    `${dir}/guest/confinement.js`,
    exported.map((name) => `export function ${name}() {}\n`).join(""),
  );
  return `${dir}/guest/bootstrap.js`;
}

Deno.test("storage that slips past the bootstrap finds no DENO_DIR to write into", async () => {
  await using dir = await tempDir();
  const { outcome } = await rawGuest(
    `
    const out = [];
    try { await (await caches.open("c")).put("http://x/", new Response("big")); out.push("cached"); }
    catch (e) { out.push(e.message); }
    try { localStorage.setItem("k", "v"); out.push("stored"); } catch (e) { out.push(e.message); }
    return out;
  `,
    {},
    { bootstrapPath: await unconfinedBootstrap(dir.path) },
  );
  assert.equal(outcome.kind, "returned", JSON.stringify(outcome));
  const [cache, local] = outcome.kind === "returned" ? outcome.value as string[] : [];
  assert.match(cache!, /^Failed to create cache storage directory/);
  assert.match(local!, /Not a directory/);
});

Deno.test("the kernel lets a guest write no file: its file size limit is zero", async () => {
  let limits = "";
  let pid = 0;
  const { outcome } = await rawGuest(`return await agent("look at me");`, {
    spawned: (p) => (pid = p),
    agent: async () => {
      const out = await new Deno.Command("cat", { args: [`/proc/${pid}/limits`] }).output();
      limits = new TextDecoder().decode(out.stdout);
      return { value: "seen", spent: 0 };
    },
  });
  assert.deepEqual(outcome, { kind: "returned", value: "seen" });
  assert.match(limits, /^Max file size\s+0\s+0\s+bytes/m);
});

Deno.test("a guessed nonce forges nothing: frames without the run's nonce are dropped and recorded", async () => {
  const status = await runScript(`
    const write = (line) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\\n"));
    const forged = (nonce) => JSON.stringify({ jsonrpc: "2.0", nonce, id: 9, method: "agent", params: { prompt: "forged", options: {} } });
    write(forged("0".repeat(64)));
    write(forged(undefined));
    write(JSON.stringify({ jsonrpc: "2.0", nonce: "guess", method: "done", params: { ok: true, value: "forged" } }));
    return "real";
  `);
  assert.equal(status.state, "succeeded");
  assert.equal(status.result, "real");
  assert.equal(status.calls.total, 0, "no forged call was dispatched");
  assert.deepEqual(status.security_events.map((e) => e.kind), [
    "bad_nonce",
    "bad_nonce",
    "bad_nonce",
  ]);
});

Deno.test("the script cannot read the init frame: stdin holds nothing with the nonce", async () => {
  const { outcome } = await rawGuest(`
    const bait = agent("bait");
    const buffer = new Uint8Array(1 << 16);
    const read = await Promise.race([Deno.stdin.read(buffer), new Promise((r) => setTimeout(() => r(-1), 500))]);
    return { read, text: read > 0 ? new TextDecoder().decode(buffer.subarray(0, read)) : "" };
  `);
  assert.equal(outcome.kind, "returned", JSON.stringify(outcome));
  assert.ok(!everything(outcome).includes(NONCE), "the nonce reached the script");
});

Deno.test("nothing the user's code can patch or call sees the nonce, and calls keep working", async () => {
  const { outcome, output } = await rawGuest(
    `
    const seen = [];
    let busy = false;
    let size = 0;
    const note = (v) => {
      // The hooks below fire inside note() itself; record only the outermost call.
      if (busy || size > 4_000_000) return;
      busy = true;
      try {
        const text = typeof v === "string" ? v : stringify(v) ?? "undefined";
        size += text.length;
        seen.push(text);
      } catch {
        seen.push("<unserialisable>");
      } finally {
        busy = false;
      }
    };
    const stringify = JSON.stringify;
    JSON.stringify = function (...a) { note(a[0]); return stringify.apply(this, a); };
    Object.defineProperty(Object.prototype, "toJSON", { configurable: true, get() { note(this); return undefined; } });
    Object.defineProperty(Object.prototype, "nonce", { configurable: true, set(v) { note(v); }, get() { return undefined; } });
    Object.defineProperty(Object.prototype, "then", { configurable: true, get() { note(this); return undefined; } });
    const encode = TextEncoder.prototype.encode;
    TextEncoder.prototype.encode = function (s) { note(s); return encode.call(this, s); };
    const decode = TextDecoder.prototype.decode;
    TextDecoder.prototype.decode = function (...a) { const r = decode.apply(this, a); note(r); return r; };
    const writeSync = Deno.stdout.writeSync.bind(Deno.stdout);
    Deno.stdout.writeSync = (b) => { note(new TextDecoder().decode(b)); return writeSync(b); };
    for (const name of ["slice", "indexOf", "concat", "substring"]) {
      const original = String.prototype[name];
      String.prototype[name] = function (...a) { note(String(this)); return original.apply(this, a); };
    }
    for (const name of ["set", "get", "delete"]) {
      const original = Map.prototype[name];
      Map.prototype[name] = function (...a) { note(a); return original.apply(this, a); };
    }
    const then = Promise.prototype.then;
    Promise.prototype.then = function (...a) { note(this); return then.apply(this, a); };
    Error.prepareStackTrace = (e, sites) => { for (const s of sites) { note(s.getThis()); note(String(s.getFunction())); } return "x"; };
    Uint8Array.prototype.constructor = function () { note("species"); };
    const answers = [await agent("one"), await parallel([() => agent("two")]), await pipeline([1], () => agent("three"))];
    phase("p"); log("l");
    try { await agent("x", { bogus: 1 }); } catch (e) { note(e.stack); }
    delete Object.prototype.toJSON; delete Object.prototype.then;
    Promise.prototype.then = then; JSON.stringify = stringify;
    const all = seen.join("\\n");
    return { answers, leaked: all.includes(${JSON.stringify(NONCE)}), seen: all.slice(0, 100000) };
  `,
    {
      agent: (params) => Promise.resolve({ value: params.call.prompt, spent: 0 }),
    },
  );
  assert.equal(outcome.kind, "returned", JSON.stringify(outcome).slice(0, 500));
  const result = outcome.kind === "returned"
    ? outcome.value as { answers: unknown; leaked: boolean; seen: string }
    : undefined;
  assert.deepEqual(result?.answers, ["one", ["two"], ["three"]]);
  assert.ok(result!.seen.length > 0, "the patches did run");
  assert.equal(result!.leaked, false, "a patched primitive saw the nonce");
  assert.ok(!result!.seen.includes(NONCE), "a patched primitive saw the nonce");
  assert.ok(!output.join("\n").includes(NONCE));
});

/**
 * A script that takes a V8 heap snapshot by every route it knows, forges a `done` frame with
 * every nonce-shaped string it finds in it, and reports what each route said.
 */
const HEAP_SNAPSHOT_FORGERY = `
  const routes = {
    "process.getBuiltinModule": () => process.getBuiltinModule("v8"),
    "import(node:v8)": () => Function("s", "return import(s)")("node:v8"),
  };
  const seen = [];
  for (const [route, open] of Object.entries(routes)) {
    try {
      const v8 = await open();
      const chunks = [];
      for await (const chunk of v8.getHeapSnapshot()) chunks.push(String(chunk));
      const write = (line) => Deno.stdout.writeSync(new TextEncoder().encode("\\n" + line + "\\n"));
      for (const nonce of new Set(chunks.join("").match(/[0-9a-f]{64}/g))) {
        const params = { ok: true, value: "forged through " + route };
        write(JSON.stringify({ jsonrpc: "2.0", nonce, method: "done", params }));
      }
      seen.push(route + ": snapshot taken");
    } catch (e) {
      seen.push(route + ": " + e.message);
    }
  }
  return seen;
`;

Deno.test("a heap snapshot is out of the script's reach, so no nonce can be lifted from one", async () => {
  const status = await runScript(HEAP_SNAPSHOT_FORGERY);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  assert.ok(Array.isArray(status.result), `the host took a forged frame: ${status.result}`);
  for (const seen of status.result as string[]) {
    assert.match(seen, /is not available in workflow scripts/, seen);
  }
  assert.equal(status.calls.total, 0);
});

Deno.test("the guest's heap holds the nonce in no string: a snapshot taken anyway finds nothing to forge with", async () => {
  // Defence in depth: a bootstrap whose confinement is switched off lets the snapshot through.
  await using dir = await tempDir();
  const { outcome } = await rawGuest(
    `const a = await agent("first"); ${HEAP_SNAPSHOT_FORGERY}`,
    {},
    {
      bootstrapPath: await unconfinedBootstrap(dir.path),
    },
  );
  assert.equal(outcome.kind, "returned", JSON.stringify(outcome));
  const seen = outcome.kind === "returned" ? outcome.value : undefined;
  assert.ok(Array.isArray(seen), `the host took a forged frame: ${JSON.stringify(seen)}`);
  assert.ok(seen.includes("process.getBuiltinModule: snapshot taken"), JSON.stringify(seen));
});

/** Node's built-in modules as this Deno knows them, each as a `node:` specifier. */
async function nodeBuiltins(): Promise<string[]> {
  const { builtinModules } = await import("node:module");
  return builtinModules.map((name) => name.startsWith("node:") ? name : `node:${name}`);
}

Deno.test("every route to Node's modules and the runtime's internals is refused with a clear error", async () => {
  const builtins = await nodeBuiltins();
  assert.ok(builtins.includes("node:v8") && builtins.includes("node:inspector"));
  const status = await runScript(`
    const load = Function("s", "return import(s)");
    const out = {};
    const attempt = async (what, run) => {
      try { await run(); out[what] = "reached"; } catch (e) { out[what] = e.message; }
    };
    for (const name of ${JSON.stringify(builtins)}) {
      await attempt("import " + name, () => load(name));
      await attempt("process.getBuiltinModule " + name, () => process.getBuiltinModule(name));
    }
    await attempt("process.getBuiltinModule bare v8", () => process.getBuiltinModule("v8"));
    await attempt("import data: re-export", () => load("data:text/javascript,export * from 'node:v8'"));
    await attempt("process.binding", () => process.binding("util"));
    await attempt("Deno[Deno.internal]", () => Deno[Deno.internal].core.ops);
    await attempt("Object.getOwnPropertySymbols(Deno)", () => {
      for (const symbol of Object.getOwnPropertySymbols(Deno)) {
        if (Deno[symbol] && typeof Deno[symbol] === "object" && "core" in Deno[symbol]) return;
      }
      throw new Error("not available in workflow scripts");
    });
    await attempt("require", () => Function("return require")()("v8"));
    await attempt("process.mainModule.require", () => process.mainModule.require("v8"));
    return out;
  `);
  assert.equal(status.state, "succeeded", JSON.stringify(status.error));
  const out = status.result as Record<string, string>;
  for (const name of builtins) {
    assert.equal(
      out[`import ${name}`],
      `import("${name}") is not available in workflow scripts: scripts import nothing, they reach the outside only through agent()`,
    );
    assert.match(
      out[`process.getBuiltinModule ${name}`]!,
      /^process\.getBuiltinModule\(\) is not available in workflow scripts/,
    );
  }
  for (const [what, seen] of Object.entries(out)) {
    assert.notEqual(seen, "reached", `${what} was reached`);
  }
  assert.match(out["import data: re-export"]!, /^import\("node:v8"\) is not available/);
  assert.match(
    out["process.binding"]!,
    /^process\.binding\(\) is not available in workflow scripts/,
  );
  assert.match(
    out["Deno[Deno.internal]"]!,
    /^Deno\[Deno\.internal\] is not available in workflow scripts/,
  );
  assert.match(out["require"]!, /require is not defined/);
});

Deno.test("stray output never breaks the run: it becomes narration marked as such", async () => {
  const status = await runScript(`
    console.log("via console.log");
    console.info("via console.info");
    Deno.stdout.writeSync(new TextEncoder().encode("raw without newline"));
    const answer = await agent("still works");
    Deno.stdout.writeSync(new TextEncoder().encode("raw line\\n"));
    return answer;
  `);
  assert.equal(status.state, "succeeded");
  assert.equal(status.result, "fake response to: still works");
  const output = status.narration.filter((e) => e.kind === "output").map((e) =>
    `${e.stream}:${e.text}`
  );
  assert.deepEqual(output.sort(), [
    "stderr:via console.info",
    "stderr:via console.log",
    "stdout:raw line",
    "stdout:raw without newline",
  ]);
  assert.deepEqual(status.security_events.map((e) => e.kind), ["non_frame_line", "non_frame_line"]);
});

Deno.test("a line over the frame limit is dropped and recorded; the run goes on", async () => {
  const status = await runScript(
    `Deno.stdout.writeSync(new TextEncoder().encode("x".repeat(300000) + "\\n"));\nreturn await agent("after");`,
    {},
    { frameLimit: 64 * 1024 },
  );
  assert.equal(status.state, "succeeded");
  assert.equal(status.result, "fake response to: after");
  assert.equal(status.security_events.length, 1);
  assert.equal(status.security_events[0]!.kind, "oversize_frame");
  assert.match(
    status.security_events[0]!.detail,
    /300000-byte line, over the 65536-byte frame limit/,
  );
});

Deno.test("a script cannot send a frame over the limit: agent() throws a RangeError", async () => {
  const status = await runScript(
    `try { await agent("y".repeat(100000)); } catch (e) { return e.name + ": " + e.message; }`,
    {},
    { frameLimit: 64 * 1024 },
  );
  assert.match(
    status.result as string,
    /^RangeError: the message is \d+ bytes, over the bridge limit of 65536 bytes$/,
  );
});

Deno.test("a script that loops forever is killed at its timeout; the host goes on", async () => {
  await using t = await testManager();
  const looping = await t.manager.start({
    script: `log("spinning");\nwhile (true) {}`,
    timeout: 1,
  }, LOCAL);
  const good = await t.manager.start({ script: `return await agent("fine");` }, LOCAL);
  const status = await t.manager.wait(looping.run_id, LOCAL);
  assert.equal(status.state, "timeout");
  assert.equal(status.error?.message, "the run exceeded its timeout of 1 s");
  assert.deepEqual(narration(status, "log"), ["spinning"]);
  assert.equal((await t.manager.wait(good.run_id, LOCAL)).state, "succeeded");
});

Deno.test("a script that exhausts its heap fails with a memory error; the host goes on", async () => {
  await using t = await testManager({ heapMb: 64 });
  const hungry = await t.manager.start({
    script: `const a = [];\nwhile (true) a.push(new Array(100000).fill(1.5));`,
  }, LOCAL);
  const good = await t.manager.start({ script: `return await agent("fine");` }, LOCAL);
  const status = await t.manager.wait(hungry.run_id, LOCAL);
  assert.equal(status.state, "failed");
  assert.equal(status.error?.code, "out_of_memory");
  assert.equal(
    status.error?.message,
    "the script ran out of memory: it reached the guest's heap limit of 64 MiB",
  );
  assert.equal((await t.manager.wait(good.run_id, LOCAL)).state, "succeeded");
});

Deno.test("ArrayBuffers cannot take the host's memory: the guest's data segment is capped", async () => {
  // 2 GiB of buffers is far beyond the 64 MiB heap plus headroom, and far within this machine.
  const status = await runScript(
    `const kept = [];\nfor (let i = 0; i < 32; i++) kept.push(new Uint8Array(64 * 1024 * 1024).fill(1));\nreturn kept.length;`,
    {},
    { heapMb: 64 },
  );
  assert.equal(status.state, "failed");
  assert.match(
    status.error?.message ?? "",
    /RangeError: Array buffer allocation failed|ran out of memory/,
  );
});

Deno.test("a script that crashes its process fails with a clear error; the host goes on", async () => {
  const status = await runScript(`log("about to exit");\nDeno.exit(3);`);
  assert.equal(status.state, "failed");
  assert.equal(status.error?.code, "guest_crashed");
  assert.match(
    status.error?.message ?? "",
    /^the script's process exited with code 3 before the script finished/,
  );
  const thrown = await runScript(`throw "a string";`);
  assert.equal(thrown.error?.message, "uncaught exception: a string");
  const rejected = await runScript(
    `Promise.reject(new Error("unhandled"));\nawait new Promise((r) => setTimeout(r, 1000));`,
  );
  assert.match(rejected.error?.message ?? "", /^Error: unhandled \(script\.js:1:16\)$/);
});

Deno.test("microvm isolation fails closed: the script never runs locally", async () => {
  const status = await runScript(`log("ran locally");\nreturn await agent("x");`, {
    isolation: "microvm",
  });
  assert.equal(status.state, "failed");
  assert.equal(status.error?.code, "isolation_unavailable");
  assert.match(
    status.error?.message ?? "",
    /limactl \(Lima, SVC_WORKFLOW_MICROVM_BACKEND=backend_a\) was not found on PATH.*never falls back to local execution/,
  );
  assert.deepEqual(status.narration, []);
  assert.equal(status.calls.total, 0);
});

Deno.test("an orphaned guest cannot spin forever: the kernel caps its CPU time", async () => {
  // No abort ever comes here, as when the host died: only the CPU limit ends the loop.
  const { outcome } = await rawGuest(`while (true) {}`, {}, { cpuSeconds: 1 });
  assert.deepEqual(outcome, {
    kind: "crashed",
    outOfMemory: false,
    message: "the script used up its CPU time limit",
  });
});

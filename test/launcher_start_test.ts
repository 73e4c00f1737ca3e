/**
 * The launcher (`deno task svc`) computes the host's grants quickly: it loads no npm package,
 * no dispatcher, engine or configuration schema (unless a configuration file exists), and lets
 * the host skip Deno's npm install checks once `node_modules` is set up.
 */
import assert from "node:assert/strict";
import { defaultConfig } from "../src/config/mod.ts";
import { SvcError } from "../src/errors/mod.ts";
import { configuredGrants, grantsOf } from "../cli/permissions.ts";
import { nodeModulesFlags } from "../cli/node_modules_mode.ts";
import { hostEntry } from "../cli/host_entry.ts";
import { ROOT, runCommand, tempDir } from "./helpers.ts";

interface InfoModule {
  specifier: string;
  dependencies?: Array<{ specifier: string; isDynamic?: boolean; code?: { specifier: string } }>;
}

/** The modules `entry` loads before it runs (static imports, no type-only or dynamic one). */
async function staticGraph(entry: string, withDynamic = false): Promise<string[]> {
  const { stdout } = await runCommand(Deno.execPath(), ["info", "--json", entry]);
  const info = JSON.parse(stdout) as { roots: string[]; modules: InfoModule[] };
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const stack = [...info.roots];
  while (stack.length > 0) {
    const specifier = stack.pop()!;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    for (const dep of modules.get(specifier)?.dependencies ?? []) {
      if ((withDynamic || !dep.isDynamic) && dep.code) stack.push(dep.code.specifier);
    }
  }
  return [...seen];
}

Deno.test("the launcher loads no npm package, no Node layer, and neither the dispatcher, the engine nor the config schema", async () => {
  const graph = await staticGraph(`${ROOT}/cli/launch.ts`);
  const heavy = graph.filter((specifier) =>
    specifier.startsWith("npm:") || specifier.startsWith("node:") ||
    /\/src\/(dispatch|engine|ledger|schemas)\//.test(specifier) ||
    specifier.endsWith("/src/config/schema.ts")
  );
  assert.deepEqual(heavy, []);
  assert.ok(graph.some((specifier) => specifier.endsWith("/cli/permissions.ts")));
});

Deno.test("with no configuration file the launcher grants what the embedded default configuration grants", async () => {
  await using home = await tempDir();
  const before = { home: Deno.env.get("SVC_HOME"), config: Deno.env.get("SVC_CONFIG") };
  Deno.env.set("SVC_HOME", home.path);
  Deno.env.delete("SVC_CONFIG");
  try {
    assert.deepEqual(await configuredGrants(), grantsOf(home.path, defaultConfig()));
  } finally {
    if (before.home === undefined) Deno.env.delete("SVC_HOME");
    else Deno.env.set("SVC_HOME", before.home);
    if (before.config !== undefined) Deno.env.set("SVC_CONFIG", before.config);
  }
});

Deno.test("with a configuration file the launcher validates it and grants what it configures", async () => {
  await using home = await tempDir();
  const before = Deno.env.get("SVC_HOME");
  Deno.env.set("SVC_HOME", home.path);
  try {
    await Deno.writeTextFile(
      `${home.path}/config.json`,
      JSON.stringify({
        providers: { api: { type: "anthropic", model: "m", api_key_env: "MY_KEY" } },
      }),
    );
    const grants = await configuredGrants();
    assert.ok(grants.net?.includes("api.anthropic.com"));
    assert.ok(grants.env?.includes("MY_KEY"));
    await Deno.writeTextFile(`${home.path}/config.json`, JSON.stringify({ providers: 3 }));
    await assert.rejects(
      configuredGrants(),
      (error) => error instanceof SvcError && /Cannot read the configuration/.test(error.message),
    );
  } finally {
    if (before === undefined) Deno.env.delete("SVC_HOME");
    else Deno.env.set("SVC_HOME", before);
  }
});

Deno.test("the host resolves npm packages manually only when node_modules was set up after its inputs changed, with every package", async () => {
  await using root = await tempDir();
  const mark = `${root.path}/node_modules/.deno/.setup-cache.bin`;
  const inputs = ["deno.json", "deno.lock"].map((name) => `${root.path}/${name}`);
  await Deno.writeTextFile(
    inputs[0]!,
    JSON.stringify({ imports: { zod: "npm:zod@^4.1.0", "@x/old": "npm:@x/pkg@0.3.14" } }),
  );
  await Deno.writeTextFile(inputs[1]!, "{}");
  const AUTO = ["--node-modules-dir=auto"];
  // Never set up: Deno must install what is missing.
  assert.deepEqual(await nodeModulesFlags(root.path), AUTO);
  await Deno.mkdir(`${root.path}/node_modules/.deno`, { recursive: true });
  await Deno.mkdir(`${root.path}/node_modules/zod`);
  await Deno.mkdir(`${root.path}/node_modules/@x/pkg`, { recursive: true });
  await Deno.writeTextFile(mark, "");
  const at = (path: string, seconds: number) => Deno.utime(path, seconds, seconds);
  for (const input of inputs) await at(input, 1_000);
  await at(mark, 2_000);
  assert.deepEqual(await nodeModulesFlags(root.path), ["--node-modules-dir=manual"]);
  // An input changed since: the install may be missing what it names now.
  for (const input of inputs) {
    await at(input, 3_000);
    assert.deepEqual(await nodeModulesFlags(root.path), AUTO, input);
    await at(input, 1_000);
  }
  // Set up by a `deno run` that needed only some of the packages.
  await Deno.remove(`${root.path}/node_modules/@x/pkg`);
  assert.deepEqual(await nodeModulesFlags(root.path), AUTO);
});

Deno.test("the Deno platform loads Node's crypto only to hash, and hashes as before", async () => {
  const graph = await staticGraph(`${ROOT}/src/platform/mod.ts`);
  assert.deepEqual(graph.filter((specifier) => specifier.startsWith("node:")), []);
  const { platform } = await import("../src/platform/mod.ts");
  const digest = platform().sha256(new TextEncoder().encode("abc"));
  assert.equal(
    [...digest].map((b) => b.toString(16).padStart(2, "0")).join(""),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
});

Deno.test("the launcher runs workflow run and resume in the lean program's bundle, which loads no server, dashboard, MCP or board command", async () => {
  const bundle = `${ROOT}/cli/host_bundle/workflow_main.js`;
  assert.equal(hostEntry(["workflow", "run", "x.js", "--fake-dispatch"]), bundle);
  assert.equal(hostEntry(["workflow", "resume", "run_1"]), bundle);
  assert.equal(hostEntry(["workflow", "work", "run_1"]), bundle);
  for (const argv of [["workflow", "list"], ["workflow"], ["dashboard"], ["run"], []]) {
    assert.equal(hostEntry(argv), `${ROOT}/cli/main.ts`);
  }
  // The bundle is exactly the lean program's sources (test/host_bundle_test.ts).
  const graph = await staticGraph(`${ROOT}/cli/workflow_main.ts`, true);
  const unneeded = graph.filter((specifier) =>
    /\/cli\/(dashboard|daemon|mcp|a2a_server|board_commands|dispatch_commands|run_commands|workflow_legacy)\.ts$/
      .test(specifier) ||
    /\/src\/(http|mcp|a2a|daemon|legacy)\//.test(specifier) || /^npm:.*hono/.test(specifier)
  );
  assert.deepEqual(unneeded, []);
  assert.ok(graph.some((specifier) => specifier.endsWith("/cli/workflow_run.ts")));
});

Deno.test("the lean program loads only what starts a run's guest before the guest is spawned: no schema, ledger, configuration or npm package", async () => {
  const graph = await staticGraph(`${ROOT}/cli/workflow_main.ts`);
  const heavy = graph.filter((specifier) =>
    specifier.startsWith("npm:") ||
    /\/src\/(config|dispatch|ledger|schemas|services|tasks)\//.test(specifier) ||
    /\/cli\/workflow_run\.ts$/.test(specifier)
  );
  assert.deepEqual(heavy, []);
  assert.ok(graph.some((specifier) => specifier.endsWith("/src/engine/early_guest.ts")));
});

Deno.test("the lean program and its bundle parse workflow run and resume exactly as the whole command line does", async () => {
  await using home = await tempDir();
  const cases = [
    ["workflow", "run", "--help"],
    ["workflow", "resume", "--help"],
    ["workflow", "run"],
    ["workflow", "run", "x.js", "--tiemout", "3"],
    ["workflow", "run", `${home.path}/missing.js`, "--isolation", "vm"],
    ["workflow", "run", `${home.path}/missing.js`, "--timeout", "0"],
    ["workflow", "resume", "run_missing", "--json"],
  ];
  for (const argv of cases) {
    const [whole, lean, bundle] = await Promise.all(
      [`${ROOT}/cli/main.ts`, `${ROOT}/cli/workflow_main.ts`, hostEntry(argv)].map((entry) =>
        runCommand(Deno.execPath(), ["run", "-A", entry, ...argv], {
          env: { SVC_HOME: home.path, NO_COLOR: "1" },
        })
      ),
    );
    assert.deepEqual(lean, whole, argv.join(" "));
    assert.deepEqual(bundle, whole, `the bundle: ${argv.join(" ")}`);
    // Each case says something: help, or why it cannot run.
    assert.ok(/svc workflow|error|Cannot/.test(whole!.stdout + whole!.stderr), argv.join(" "));
  }
});

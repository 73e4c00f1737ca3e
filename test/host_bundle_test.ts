/**
 * The launcher starts `svc workflow run`, `resume` and `work` from `cli/host_bundle/`, built
 * from `cli/workflow_main.ts` and its imports by `deno task build:host`: it must be exactly what
 * those sources bundle to now, and load nothing but Node built-ins and its own chunks.
 */
import assert from "node:assert/strict";
import {
  HOST_UNSTABLE_FLAGS,
  hostEntry,
  hostModuleArgs,
  LEAN_HOST_V8_FLAGS,
} from "../cli/host_entry.ts";
import {
  buildHostBundleFiles,
  HOST_BUNDLE,
  HOST_BUNDLE_DIR,
  LAUNCHER_BUNDLE,
  readHostBundleFiles,
} from "../scripts/bundle_host.ts";
import { ROOT, runCommand, tempDir } from "./helpers.ts";

/**
 * Every module specifier a bundle file imports: its static imports (at the start of a line,
 * where esbuild writes them) and its `import("./...")` calls of chunks.
 */
function importsOf(text: string): string[] {
  const specifiers: string[] = [];
  const patterns = [
    /^import\s[^;]*?\sfrom\s*"([^"]+)";/gm,
    /^import\s*"([^"]+)";/gm,
    /^export\s[^;]*?\sfrom\s*"([^"]+)";/gm,
    /\bimport\s*\(\s*"([^"$]+)"\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) specifiers.push(match[1]!);
  }
  return specifiers;
}

Deno.test("the host's bundle is exactly what its sources bundle to today", async () => {
  const committed = await readHostBundleFiles();
  const fresh = await buildHostBundleFiles();
  // A stale bundle would run host code older than cli/ and src/.
  assert.deepEqual([...committed.keys()], [...fresh.keys()], `run \`deno task build:host\``);
  for (const [name, text] of fresh) {
    assert.ok(
      committed.get(name) === text,
      `${HOST_BUNDLE_DIR}/${name} is stale: run \`deno task build:host\``,
    );
  }
});

Deno.test("deno task svc runs the bundled launcher, whose lean host is the bundle too: they load only Node built-ins and their own chunks", async () => {
  assert.equal(hostEntry(["workflow", "run", "x.js"]), `${ROOT}/${HOST_BUNDLE}`);
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`));
  const task = String(config.tasks.svc).split(" ");
  // No configuration: Deno reads no lockfile and checks no node_modules install to start it.
  assert.ok(task.includes("--no-config"), task.join(" "));
  assert.equal(task.at(-1), LAUNCHER_BUNDLE);
  const files = await readHostBundleFiles();
  assert.ok(files.has("workflow_main.js"));
  // The check sees the imports: the main module's chunks at least.
  assert.ok(importsOf(files.get("workflow_main.js")!).some((s) => s.startsWith("./")));
  for (const [name, text] of files) {
    for (const specifier of importsOf(text)) {
      const own = /^\.\/[\w-]+\.js$/.test(specifier) && files.has(specifier.slice(2));
      assert.ok(own || specifier.startsWith("node:"), `${name} imports ${specifier}`);
    }
  }
});

Deno.test("the bundled host runs without the configuration, with the unstable features deno.json lists", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`)) as { unstable: string[] };
  assert.deepEqual(HOST_UNSTABLE_FLAGS, config.unstable.map((name) => `--unstable-${name}`));
  const argv = ["workflow", "run", "x.js"];
  assert.deepEqual(await hostModuleArgs(argv), [
    "--no-config",
    ...HOST_UNSTABLE_FLAGS,
    ...LEAN_HOST_V8_FLAGS,
    `${ROOT}/${HOST_BUNDLE}`,
  ]);
  // The whole command line still resolves its npm packages through deno.json.
  const whole = await hostModuleArgs(["dashboard"]);
  assert.deepEqual(whole.slice(-3), ["--config", `${ROOT}/deno.json`, `${ROOT}/cli/main.ts`]);
});

Deno.test("deno task svc runs a one-call workflow through the bundle", async () => {
  await using home = await tempDir();
  const script = `${home.path}/one.js`;
  await Deno.writeTextFile(script, `return await agent("hello");\n`);
  const result = await runCommand(
    Deno.execPath(),
    ["task", "--quiet", "svc", "workflow", "run", script, "--fake-dispatch"],
    { env: { SVC_HOME: `${home.path}/home`, SVC_FAKE_LATENCY_MS: "0", NO_COLOR: "1" } },
  );
  assert.equal(result.code, 0, result.stderr);
  assert.equal(JSON.parse(result.stdout), "fake response to: hello");
});

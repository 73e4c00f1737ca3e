/**
 * What the host of a plain `svc workflow run` loads from `cli/host_bundle/`: the lean program's
 * chunks and those of the run's modules, without what a one-call run never uses (zod's
 * translations of its messages, the A2A client, MiniSearch). Each of them is some hundreds of
 * kilobytes that every run's start would read and compile; `docs/BENCHMARKS.md` has the figures.
 */
import assert from "node:assert/strict";
import { readHostBundleFiles } from "../scripts/bundle_host.ts";

/** The chunks a module of the bundle imports statically (at the start of a line). */
function staticImportsOf(text: string): string[] {
  return [...text.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s*"\.\/([\w-]+\.js)";/gm)]
    .map((match) => match[1]!);
}

/** The chunks a module of the bundle loads with `import("./...")`. */
function dynamicImportsOf(text: string): string[] {
  return [...text.matchAll(/\bimport\s*\(\s*"\.\/([\w-]+\.js)"\s*\)/g)].map((match) => match[1]!);
}

/** `roots` and every chunk they import statically, transitively. */
function staticClosure(files: Map<string, string>, roots: string[]): Set<string> {
  const seen = new Set<string>();
  const todo = [...roots];
  while (todo.length > 0) {
    const name = todo.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const text = files.get(name);
    assert.ok(text !== undefined, `the bundle has no ${name}`);
    todo.push(...staticImportsOf(text));
  }
  return seen;
}

/**
 * The files a plain run loads: the lean program's, then the run's modules it imports before it
 * opens the services (`loadRunModules()` of `cli/workflow_main.ts`).
 */
async function plainRunFiles(): Promise<{ files: Map<string, string>; loaded: Set<string> }> {
  const files = await readHostBundleFiles();
  const main = files.get("workflow_main.js");
  assert.ok(main !== undefined);
  const runModules = dynamicImportsOf(main).filter((name) =>
    /^(workflow_run|command_failure)-/.test(name)
  );
  assert.equal(runModules.length, 2, dynamicImportsOf(main).join(", "));
  return { files, loaded: staticClosure(files, ["workflow_main.js", ...runModules]) };
}

/** The bundled source modules a file holds, from the `// path` lines esbuild writes. */
function sourcesOf(text: string): string[] {
  return [...text.matchAll(/^\/\/ ((?:node_modules|src|cli)\/\S+)$/gm)].map((match) => match[1]!);
}

Deno.test("a plain run's host loads zod's English messages only, no other translation", async () => {
  const { files, loaded } = await plainRunFiles();
  const sources = [...loaded].flatMap((name) => sourcesOf(files.get(name)!));
  assert.ok(sources.some((path) => /\/zod\/v4\/classic\/schemas\.js$/.test(path)));
  const locales = sources.filter((path) => /\/zod\/v4\/locales\//.test(path));
  // `import * as z from "zod"` lets the bundler keep what is used; `import { z }` keeps all.
  assert.deepEqual(locales.map((path) => path.replace(/.*\/locales\//, "")), ["en.js"]);
});

Deno.test("a plain run's host loads neither the A2A client nor MiniSearch, which load at their first use", async () => {
  const { files, loaded } = await plainRunFiles();
  const where = (pattern: RegExp) =>
    [...files].filter(([, text]) => sourcesOf(text).some((path) => pattern.test(path)))
      .map(([name]) => name);
  for (const pattern of [/\/@a2a-js\/sdk\/dist\/client\//, /\/minisearch\//]) {
    const holders = where(pattern);
    // The bundle still has them, in chunks of their own that nothing loads at the start.
    assert.ok(holders.length > 0, `the bundle has no ${pattern}`);
    for (const name of holders) {
      assert.ok(!loaded.has(name), `${name} (${pattern}) loads with a run`);
    }
  }
});

Deno.test("every module imports zod as a namespace, so that the bundle keeps only what svc calls", async () => {
  const named: string[] = [];
  for (const root of ["src", "cli"]) {
    for await (const path of sourceFiles(root)) {
      const text = await Deno.readTextFile(path);
      if (/^import\s*\{[^}]*\bz\b[^}]*\}\s*from\s*"zod"/m.test(text)) named.push(path);
    }
  }
  assert.deepEqual(
    named,
    [],
    'these modules import { z } from "zod": use import * as z from "zod"',
  );
});

/** The TypeScript files under `dir`, the generated bundle left out. */
async function* sourceFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory && path !== "cli/host_bundle") yield* sourceFiles(path);
    else if (entry.isFile && path.endsWith(".ts")) yield path;
  }
}

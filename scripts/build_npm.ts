/**
 * `deno task build:npm`: builds the npm package into `dist/npm/` (git-ignored).
 *
 * - Every module of `src/` and `cli/` becomes an ES module (`.js`, TypeScript's transpiler,
 *   relative `.ts` imports rewritten to `.js`) and a declaration file (`.d.ts`), in the same
 *   layout, so that `src/isolation/unsafe_local.js` finds `guest/bootstrap_bundle.js` where it does
 *   in a checkout.
 * - `guest/`, `bundled/` (workflows svc runs itself, such as the review), `examples/` and
 *   `page/` (the dashboard's board page) are copied as they are.
 * - `npm/` is the template: `package.json` (its dependency versions are filled in from
 *   `deno.json`, `deno` pinned to `.deno-version`, its version from `cli/main.ts`), the
 *   registry README, the `svc` bin shim and the `index.js` entry.
 * - Every bare import of the built code must be a declared dependency, or the build fails.
 *
 * Prints the output folder on standard output.
 * @module
 */
import ts from "typescript";
import { VERSION } from "../cli/main.ts";
import { runTask } from "./task_failure.ts";

const ROOT = decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/$/, "");
/** Where the package is written. */
export const OUT_DIR = `${ROOT}/dist/npm`;
const SOURCE_DIRS = ["src", "cli"];
/** Deno-only entry points: `deno task svc`'s launcher computes `deno run` flags. */
const DENO_ONLY = new Set(["cli/launch.ts"]);
const COPIED_DIRS = ["guest", "bundled", "examples", "page"];
const TEMPLATE_FILES = ["README.md", "bin/svc.js", "index.js", "index.d.ts"];

const COMPILER_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowImportingTsExtensions: true,
  rewriteRelativeImportExtensions: true,
  strict: true,
  skipLibCheck: true,
  types: [],
};

async function sourceFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(`${ROOT}/${dir}`)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) files.push(...await sourceFiles(path));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) files.push(path);
  }
  return files.sort();
}

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  await Deno.writeTextFile(path, text);
}

async function copyDir(dir: string): Promise<void> {
  for await (const entry of Deno.readDir(`${ROOT}/${dir}`)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) await copyDir(path);
    else await write(`${OUT_DIR}/${path}`, await Deno.readTextFile(`${ROOT}/${path}`));
  }
}

function transpile(file: string, source: string): string {
  const output = ts.transpileModule(source, {
    fileName: file,
    compilerOptions: COMPILER_OPTIONS,
    reportDiagnostics: true,
  });
  const problems = output.diagnostics ?? [];
  if (problems.length > 0) {
    const text = ts.flattenDiagnosticMessageText(problems[0]!.messageText, "\n");
    throw new Error(`Cannot transpile ${file}: ${text}`);
  }
  return output.outputText;
}

const RELATIVE_TS_SPECIFIER = /(["'])(\.\.?\/[^"']*?)\.ts\1/g;

/** Declarations of every file, without type checking (`deno task check` does that). */
function declarations(files: string[]): Map<string, string> {
  const out = new Map<string, string>();
  const program = ts.createProgram(files.map((f) => `${ROOT}/${f}`), {
    ...COMPILER_OPTIONS,
    declaration: true,
    emitDeclarationOnly: true,
    noCheck: true,
    rootDir: ROOT,
    outDir: OUT_DIR,
  });
  // Declaration emit keeps `.ts` in relative specifiers; the package holds `.js` files.
  const result = program.emit(
    undefined,
    (path, text) => out.set(path, text.replace(RELATIVE_TS_SPECIFIER, "$1$2.js$1")),
  );
  if (result.emitSkipped) throw new Error("Cannot emit declarations: TypeScript skipped the emit");
  return out;
}

/** `name -> version range` of the npm imports of deno.json. */
async function denoJsonVersions(): Promise<Map<string, string>> {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`));
  const versions = new Map<string, string>();
  for (const [name, specifier] of Object.entries(config.imports ?? {})) {
    const match = /^npm:(@?[^@]+)@(.+)$/.exec(String(specifier));
    // An alias (`"@a2a-js/sdk-v03": "npm:@a2a-js/sdk@0.3.14"`, an older line for tests) is not
    // the version the source imports under the package's own name.
    if (match && match[1] === name) versions.set(name, match[2]!);
  }
  return versions;
}

async function packageJson(): Promise<Record<string, unknown>> {
  const template = JSON.parse(await Deno.readTextFile(`${ROOT}/npm/package.json`));
  const versions = await denoJsonVersions();
  const pinnedDeno = (await Deno.readTextFile(`${ROOT}/.deno-version`)).trim();
  const dependencies: Record<string, string> = {};
  for (const name of Object.keys(template.dependencies ?? {})) {
    const version = name === "deno" ? pinnedDeno : versions.get(name);
    if (!version) {
      throw new Error(`Cannot declare dependency '${name}': deno.json does not import it`);
    }
    dependencies[name] = version;
  }
  return { ...template, version: VERSION, dependencies };
}

const BARE_IMPORT = /(?:^|\n)\s*(?:import|export)\b[^"'`]*?from\s*["']([^"'./][^"']*)["']/g;

function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/** Builds the package; resolves to the output folder. */
export async function buildNpm(): Promise<string> {
  await Deno.remove(OUT_DIR, { recursive: true }).catch(() => {});
  const files = (await Promise.all(SOURCE_DIRS.map(sourceFiles))).flat()
    .filter((file) => !DENO_ONLY.has(file));
  const bareImports = new Set<string>();
  for (const file of files) {
    const js = transpile(file, await Deno.readTextFile(`${ROOT}/${file}`));
    for (const match of js.matchAll(BARE_IMPORT)) bareImports.add(match[1]!);
    await write(`${OUT_DIR}/${file.replace(/\.ts$/, ".js")}`, js);
  }
  for (const [path, text] of declarations(files)) await write(path, text);
  for (const dir of COPIED_DIRS) await copyDir(dir);
  for (const file of TEMPLATE_FILES) {
    await write(`${OUT_DIR}/${file}`, await Deno.readTextFile(`${ROOT}/npm/${file}`));
  }
  await Deno.chmod(`${OUT_DIR}/bin/svc.js`, 0o755);
  const manifest = await packageJson();
  const declared = new Set(Object.keys(manifest.dependencies as Record<string, string>));
  for (const specifier of bareImports) {
    if (specifier.startsWith("node:")) continue;
    if (!declared.has(packageName(specifier))) {
      throw new Error(`Cannot build the package: '${specifier}' is imported but not a dependency`);
    }
  }
  await write(`${OUT_DIR}/package.json`, `${JSON.stringify(manifest, null, 2)}\n`);
  return OUT_DIR;
}

if (import.meta.main) {
  await runTask("build the npm package", async () => console.log(await buildNpm()));
}

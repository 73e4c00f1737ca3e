/**
 * The layers of docs/ARCHITECTURE.md hold in the code: a folder under `src/` is imported by
 * other folders only through its `mod.ts`; the folders import each other without a cycle and
 * only downwards, in the order of {@linkcode LAYERS}; and no surface (`src/http`, `src/mcp`, `src/a2a`, `cli/`) imports the ledger, whose store only the
 * services below the surfaces may touch.
 */
import assert from "node:assert/strict";
import { ROOT, sourceModules } from "./helpers.ts";

/** One import of one file: the importing file, the file it names (both from the root), the clause. */
interface Edge {
  from: string;
  to: string;
  clause: string;
}

const SURFACES = new Set(["src/http", "src/mcp", "src/a2a", "cli"]);
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|(?:^|\n)\s*import\s*["']([^"']+)["']/g;

/** `a/b/../c.ts` as `a/c.ts`. */
function normal(path: string): string {
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "..") parts.pop();
    else if (part !== ".") parts.push(part);
  }
  return parts.join("/");
}

/** Every relative import of the source tree. */
async function edges(): Promise<Edge[]> {
  const found: Edge[] = [];
  for (const file of [...await sourceModules("src"), ...await sourceModules("cli")]) {
    const text = await Deno.readTextFile(`${ROOT}/${file}`);
    for (const match of text.matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2] ?? match[3]!;
      if (!specifier.startsWith(".")) continue;
      const to = normal(`${file.slice(0, file.lastIndexOf("/"))}/${specifier}`);
      found.push({ from: file, to, clause: match[0] });
    }
  }
  return found;
}

/**
 * The folder a file belongs to: `src/<name>` or `cli`. A file at the top of `src/` stands for
 * itself: `src/mod.ts` and `src/node.ts` are the library's entry points, `src/version.ts` a leaf.
 */
function folderOf(file: string): string {
  const parts = file.split("/");
  if (parts[0] === "src" && parts.length > 2) return `src/${parts[1]}`;
  return parts[0] === "src" ? file : parts[0]!;
}

/**
 * Modules a folder offers beside its `mod.ts`, each loaded only where it is needed, and why:
 * loading them from `mod.ts` would load what most processes never use.
 */
const SECOND_ENTRIES: Readonly<Record<string, string>> = {
  "src/platform/postgres.ts": "the Postgres driver, loaded only for a ledger at a postgres:// URL",
  "src/platform/node.ts": "the Node platform, installed by the npm package's entry point",
  "src/engine/early_guest.ts":
    "a run's guest started by `svc workflow run` before the engine and its schemas load",
};

/**
 * The layers from the top, as docs/ARCHITECTURE.md draws them: a folder imports folders of its
 * own layer or below. Every folder of the tree is named, so a new folder must take its place.
 */
const LAYERS: readonly (readonly string[])[] = [
  ["cli", "src/http", "src/mcp", "src/a2a", "src/mod.ts", "src/node.ts"],
  ["src/daemon"],
  ["src/services"],
  ["src/reviews", "src/memory", "src/automations"],
  ["src/engine"],
  ["src/tasks"],
  ["src/dispatch"],
  [
    "src/worktrees",
    "src/structured",
    "src/agent_types",
    "src/approvals",
    "src/board",
    "src/collaborations",
    "src/config",
    "src/isolation",
    "src/lifecycle",
  ],
  ["src/ledger", "src/workspace", "src/scratch", "src/host_env", "src/legacy"],
  ["src/platform", "src/schemas"],
  ["src/errors", "src/concurrency", "src/streams", "src/options", "src/version.ts"],
  // The sandbox's own modules import nothing of the host; the host shares their self-contained
  // pieces (the SHA-256 a call is hashed with), so both sides agree by construction.
  ["guest"],
];

function layerOf(folder: string): number {
  return LAYERS.findIndex((layer) => layer.includes(folder));
}

Deno.test("every folder has its layer, and imports only its own layer and those below", async () => {
  const all = await edges();
  const unplaced = new Set(
    all.flatMap(({ from, to }) => [folderOf(from), folderOf(to)]).filter((f) => layerOf(f) < 0),
  );
  assert.deepEqual([...unplaced], [], "folders missing from LAYERS");
  const upwards = all.filter(({ from, to }) => layerOf(folderOf(to)) < layerOf(folderOf(from)));
  assert.deepEqual(upwards.map((e) => `${e.from} -> ${e.to}`), []);
});

Deno.test("a folder under src/ is imported by other folders only through its mod.ts", async () => {
  const around = (await edges()).filter(({ from, to }) => {
    const target = folderOf(to);
    return target.startsWith("src/") && target !== to && target !== folderOf(from) &&
      to !== `${target}/mod.ts` && !Object.hasOwn(SECOND_ENTRIES, to);
  });
  assert.deepEqual(around.map((e) => `${e.from} -> ${e.to}`), []);
});

Deno.test("the folders import each other without a cycle", async () => {
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of await edges()) {
    const [a, b] = [folderOf(from), folderOf(to)];
    if (a === b) continue;
    graph.set(a, (graph.get(a) ?? new Set()).add(b));
  }
  const cycles: string[] = [];
  const state = new Map<string, "open" | "done">();
  const visit = (node: string, path: string[]) => {
    if (state.get(node) === "done") return;
    if (state.get(node) === "open") {
      cycles.push([...path.slice(path.indexOf(node)), node].join(" -> "));
      return;
    }
    state.set(node, "open");
    for (const next of graph.get(node) ?? []) visit(next, [...path, node]);
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) visit(node, []);
  assert.deepEqual(cycles, []);
});

Deno.test("no surface imports the ledger or the KV store: surfaces reach records through the services", async () => {
  const direct = (await edges()).filter(({ from, to, clause }) =>
    SURFACES.has(folderOf(from)) &&
    (folderOf(to) === "src/ledger" ||
      (folderOf(to) === "src/platform" && /\bKv|openKv/.test(clause)))
  );
  assert.deepEqual(direct.map((e) => `${e.from} -> ${e.to}`), []);
});

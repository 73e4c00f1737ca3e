import { SvcError } from "../errors/mod.ts";
import { dirName, joinPath, platform } from "../platform/mod.ts";
import { guestImportMap } from "./guest_imports.ts";
import { defaultBootstrapPath } from "./unsafe_local.ts";

/** What a microVM guest gets from the host: all of it inline, none of it a host path. */
export interface GuestBundle {
  /** `data:` URL of guest/stage0.js: the guest's main module, given on its command line. */
  stage0Url: string;
  /** Length-prefixed bundle of the bootstrap and its modules, written to the guest's stdin first. */
  bytes: Uint8Array;
}

/** Relative imports of a trusted guest module: `from "./x.js"` and `import "./x.js"`. */
const RELATIVE_IMPORT = /(?:from|import)\s*"\.\/([a-z0-9_]+\.js)"/g;

/**
 * Builds the bundle of the guest modules beside `bootstrap` (read from the host's own files, so
 * this works from a checkout, the npm package and a compiled binary alike): each module after
 * the ones it imports, as guest/stage0.js expects them.
 */
export async function buildGuestBundle(bootstrap: string): Promise<GuestBundle> {
  const p = platform();
  const dir = dirName(bootstrap);
  const entry = bootstrap.slice(dir.length + 1);
  const sources = new Map<string, string>();
  const ordered: [string, string][] = [];
  async function visit(name: string, trail: readonly string[]): Promise<void> {
    if (ordered.some(([done]) => done === name)) return;
    if (trail.includes(name)) {
      throw new SvcError(
        "internal",
        `Cannot bundle the guest: its modules import each other in a cycle (${
          [...trail, name].join(" -> ")
        })`,
      );
    }
    let source = sources.get(name);
    if (source === undefined) {
      source = await p.readTextFile(joinPath(dir, name));
      sources.set(name, source);
    }
    for (const match of source.matchAll(RELATIVE_IMPORT)) {
      await visit(match[1]!, [...trail, name]);
    }
    ordered.push([name, source]);
  }
  await visit(entry, []);
  // Stage 0 is svc's own, whatever bootstrap it loads.
  const stage0 = await p.readTextFile(joinPath(dirName(defaultBootstrapPath()), "stage0.js"));
  const json = new TextEncoder().encode(JSON.stringify({ entry, modules: ordered }));
  const bytes = new Uint8Array(4 + json.length);
  new DataView(bytes.buffer).setUint32(0, json.length);
  bytes.set(json, 4);
  return { stage0Url: `data:text/javascript,${encodeURIComponent(stage0)}`, bytes };
}

/**
 * The guest's import map as a `data:` URL, carrying `marker` in a scope no module lives in: the
 * marker names this guest's process inside a shared VM (`pkill -f`), and the script cannot see it.
 */
export function importMapUrl(marker: string): string {
  const map = JSON.parse(guestImportMap()) as { imports: Record<string, string> };
  // An absolute URL as the scope's key, else the runtime warns on stderr about the import map.
  const withMarker = { imports: map.imports, scopes: { [`${marker}:/`]: {} } };
  return `data:application/json,${encodeURIComponent(JSON.stringify(withMarker))}`;
}

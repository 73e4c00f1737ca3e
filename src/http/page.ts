/**
 * The board page: the files of `page/` (plain ES modules, a stylesheet and the vendored UI
 * library), served as they are. They are read once, into memory, on the first request: a
 * request path only ever looks a name up in that table and never becomes a file system path.
 * Nothing here needs a token: the page asks for one and sends it to `/api/*` itself.
 * @module
 */
import { platform } from "../platform/mod.ts";

/**
 * What the page may load: its own scripts, styles and images, and requests to its own origin.
 * No inline script or style, no other origin, no plugins, no framing, no form posts.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".md": "text/plain; charset=utf-8",
  ".LICENSE": "text/plain; charset=utf-8",
};

/** Where the page's files are in a checkout, in the npm package and in a compiled binary. */
export function pageDir(): string {
  return decodeURIComponent(new URL("../../page/", import.meta.url).pathname).replace(/\/$/, "");
}

interface Asset {
  body: string;
  type: string;
  etag: string;
}

function typeOf(name: string): string | undefined {
  const dot = name.lastIndexOf(".");
  return dot < 0 ? undefined : TYPES[name.slice(dot)];
}

async function readAssets(dir: string, prefix = ""): Promise<Map<string, Asset>> {
  const p = platform();
  const assets = new Map<string, Asset>();
  for (const name of (await p.readDir(dir)).sort()) {
    if (name.startsWith(".")) continue;
    const path = `${dir}/${name}`;
    const info = await p.stat(path);
    if (info.isDirectory) {
      for (const [key, asset] of await readAssets(path, `${prefix}/${name}`)) {
        assets.set(key, asset);
      }
      continue;
    }
    const type = typeOf(name);
    if (!info.isFile || type === undefined) continue;
    const body = await p.readTextFile(path);
    const hash = [...p.sha256(new TextEncoder().encode(body)).slice(0, 12)]
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    assets.set(`${prefix}/${name}`, { body, type, etag: `"${hash}"` });
  }
  return assets;
}

/** The headers every page response carries. */
function pageHeaders(asset: Asset): Headers {
  return new Headers({
    "content-type": asset.type,
    "content-security-policy": PAGE_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    // Revalidated on every load, so that a new version of svc is picked up at once.
    "cache-control": "no-cache",
    etag: asset.etag,
  });
}

/** Serves the page's files; `/` is `index.html`. Options: the folder (default: {@linkcode pageDir}). */
export interface PageServer {
  /** The response for `path`, or undefined when the page has no such file. */
  respond(path: string, request: Request): Promise<Response | undefined>;
}

/** Builds the page server over `dir`. Files are read once, when first asked for. */
export function pageServer(options: { dir?: string } = {}): PageServer {
  const dir = options.dir ?? pageDir();
  let loading: Promise<Map<string, Asset>> | undefined;
  return {
    async respond(path, request) {
      loading ??= readAssets(dir).catch((error) => {
        loading = undefined;
        throw error;
      });
      const asset = (await loading).get(path === "/" ? "/index.html" : path);
      if (asset === undefined || path === "/index.html") return undefined;
      const headers = pageHeaders(asset);
      if (request.headers.get("if-none-match") === asset.etag) {
        return new Response(null, { status: 304, headers });
      }
      return new Response(request.method === "HEAD" ? null : asset.body, { headers });
    },
  };
}

/**
 * `deno task vendor:page`: fetches the board page's UI library from the npm registry into
 * `page/vendor/`, so that the page needs no build step and nothing from a CDN.
 *
 * - Each package is fetched at its pinned version with `npm pack` (npm checks the registry's
 *   integrity hash), and only the ES module files the page imports are kept.
 * - `preact/hooks` imports the bare specifier `preact`; a browser without an import map (an
 *   inline script, which the page's Content-Security-Policy forbids) cannot resolve it, so it is
 *   rewritten to the vendored file. That is the only change made to the packages' code.
 * - `page/vendor/VENDOR.md` records every package's version, licence and npm integrity and
 *   every file's SHA-256; `test/page_vendor_test.ts` checks the files against it.
 * @module
 */
import { runTask } from "./task_failure.ts";

const ROOT = decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/$/, "");
const OUT = `${ROOT}/page/vendor`;

interface Vendored {
  name: string;
  version: string;
  licence: string;
  /** Package path -> vendored file name. */
  files: Record<string, string>;
  /** Bare specifiers to rewrite, as written in the minified code. */
  rewrite?: Record<string, string>;
  /** Filled in from `npm pack`. */
  integrity?: string;
}

const PACKAGES: Vendored[] = [
  {
    name: "preact",
    version: "10.29.8",
    licence: "MIT",
    files: {
      "dist/preact.module.js": "preact.js",
      "hooks/dist/hooks.module.js": "hooks.js",
    },
    rewrite: { 'from"preact"': 'from"./preact.js"' },
  },
  {
    name: "htm",
    version: "3.1.1",
    licence: "Apache-2.0",
    files: { "dist/htm.module.js": "htm.js" },
  },
];

async function run(command: string, args: string[], cwd: string): Promise<string> {
  const output = await new Deno.Command(command, { args, cwd, stderr: "inherit" }).output();
  if (!output.success) throw new Error(`Cannot run ${command} ${args.join(" ")}: it failed`);
  return new TextDecoder().decode(output.stdout);
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function main(): Promise<void> {
  const work = await Deno.makeTempDir({ prefix: "svc-vendor-" });
  const rows: string[] = [];
  try {
    await Deno.mkdir(OUT, { recursive: true });
    for (const pkg of PACKAGES) {
      const packed = JSON.parse(
        await run("npm", ["pack", `${pkg.name}@${pkg.version}`, "--json", "--silent"], work),
      ) as { filename: string; integrity: string }[];
      const { filename, integrity } = packed[0]!;
      const dir = `${work}/${pkg.name}`;
      await Deno.mkdir(dir);
      await run("tar", ["-xzf", `${work}/${filename}`, "-C", dir], work);
      const rewritten = new Set<string>();
      for (const [from, to] of Object.entries(pkg.files)) {
        let code = await Deno.readTextFile(`${dir}/package/${from}`);
        for (const [bare, local] of Object.entries(pkg.rewrite ?? {})) {
          if (code.includes(bare)) rewritten.add(bare);
          code = code.replaceAll(bare, local);
        }
        // Source maps are not vendored: a map comment would make the browser ask for one.
        code = code.replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, "\n");
        await Deno.writeTextFile(`${OUT}/${to}`, code);
        rows.push(
          `| \`${to}\` | ${pkg.name} ${pkg.version} \`${from}\` | \`${await sha256(code)}\` |`,
        );
      }
      for (const bare of Object.keys(pkg.rewrite ?? {})) {
        if (!rewritten.has(bare)) throw new Error(`Cannot rewrite ${pkg.name}: no ${bare} in it`);
      }
      await Deno.copyFile(`${dir}/package/LICENSE`, `${OUT}/${pkg.name}.LICENSE`);
      rows.push(`| \`${pkg.name}.LICENSE\` | ${pkg.name} ${pkg.version} licence | |`);
      pkg.integrity = integrity;
    }
    const packages = PACKAGES.map((p) =>
      `| ${p.name} | ${p.version} | ${p.licence} | \`${p.integrity}\` |`
    );
    await Deno.writeTextFile(
      `${OUT}/VENDOR.md`,
      [
        "# Vendored UI library",
        "",
        "Written by `deno task vendor:page` (`scripts/vendor_page.ts`) from the npm registry; do",
        "not edit these files by hand. `test/page_vendor_test.ts` checks them against this record.",
        "",
        "| package | version | licence | npm integrity |",
        "| ------- | ------- | ------- | ------------- |",
        ...packages,
        "",
        "| file | from | SHA-256 |",
        "| ---- | ---- | ------- |",
        ...rows,
        "",
      ].join("\n"),
    );
    console.log(OUT);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

if (import.meta.main) await runTask("vendor the page's libraries", main);

/**
 * The page's vendored UI library is what `deno task vendor:page` wrote from the npm registry:
 * every file matches the SHA-256 recorded in page/vendor/VENDOR.md, and every licence is there.
 */
import assert from "node:assert/strict";
import { ROOT } from "./helpers.ts";

async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("the vendored UI library matches its record, file by file, with its licences", async () => {
  const dir = `${ROOT}/page/vendor`;
  const record = await Deno.readTextFile(`${dir}/VENDOR.md`);
  const rows = [...record.matchAll(/^\| `([^`]+)` \| ([^|]+) \| `([0-9a-f]{64})` \|$/gm)];
  assert.deepEqual(rows.map((r) => r[1]).sort(), ["hooks.js", "htm.js", "preact.js"]);
  for (const [, file, , hash] of rows) {
    assert.equal(await sha256(await Deno.readFile(`${dir}/${file}`)), hash, `${file} was changed`);
  }
  const files = [];
  for await (const entry of Deno.readDir(dir)) files.push(entry.name);
  assert.deepEqual(files.sort(), [
    "VENDOR.md",
    "hooks.js",
    "htm.LICENSE",
    "htm.js",
    "preact.LICENSE",
    "preact.js",
  ]);
  assert.match(await Deno.readTextFile(`${dir}/preact.LICENSE`), /MIT License/);
  assert.match(await Deno.readTextFile(`${dir}/htm.LICENSE`), /Apache License/);
  // A bare specifier would need an import map, an inline script the page's CSP forbids.
  for (const file of ["hooks.js", "htm.js", "preact.js"]) {
    const code = await Deno.readTextFile(`${dir}/${file}`);
    assert.doesNotMatch(code, /from\s*["'](?!\.\/)/, `${file} imports a bare specifier`);
  }
});

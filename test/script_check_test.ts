import assert from "node:assert/strict";
import { checkScript } from "../src/engine/mod.ts";
import { SvcError } from "../src/errors/mod.ts";

function refusal(source: string): string {
  try {
    checkScript(source, { filename: "w.js" });
  } catch (error) {
    assert.ok(error instanceof SvcError, "refusals are SvcErrors");
    assert.equal(error.code, "invalid_script");
    assert.equal(error.status, 400);
    return error.message;
  }
  assert.fail("the script was accepted");
}

Deno.test("checkScript() reads a pure-literal meta and blanks its export keyword", () => {
  const source =
    `export const meta = { name: "n", description: \`d\`, phases: ["a", "b"] };\nreturn 1;`;
  const checked = checkScript(source);
  assert.deepEqual(checked.meta, { name: "n", description: "d", phases: ["a", "b"] });
  assert.equal(checked.body.length, source.length, "offsets are preserved");
  assert.ok(checked.body.startsWith("       const meta"));
});

Deno.test("checkScript() accepts a script without meta, with top-level await and return", () => {
  const checked = checkScript("const x = await agent('a');\nreturn x;");
  assert.deepEqual(checked.meta, {});
});

Deno.test("checkScript() refuses a meta that is not a pure literal, naming line and column", () => {
  assert.match(
    refusal(`export const meta = { name: f() };`),
    /^w\.js:1:29: meta must be a pure literal: calls/,
  );
  assert.match(
    refusal(`export const meta = {\n  name: someName };`),
    /^w\.js:2:9: meta must be a pure literal: variable 'someName'/,
  );
  assert.match(
    refusal("export const meta = { ...base };"),
    /w\.js:1:23: meta must be a pure literal: spread/,
  );
  assert.match(
    refusal("export const meta = { name: `a${b}` };"),
    /w\.js:1:33: .*template interpolation/,
  );
  assert.match(refusal("export const meta = { [k]: 1 };"), /computed keys/);
  assert.match(refusal("export const meta = { get name() { return 1 } };"), /methods, accessors/);
  assert.match(refusal("export const meta = { phases: [1, , 2] };"), /array holes/);
  assert.match(refusal("export const meta = { name: /x/ };"), /regular expressions/);
  assert.match(refusal("export const meta = 5;"), /w\.js:1:21: meta must be an object literal/);
});

Deno.test("checkScript() refuses meta fields of the wrong type or unknown name", () => {
  assert.match(refusal(`export const meta = { name: 3 };`), /^w\.js:1:21: meta\.name: /);
  assert.match(refusal(`export const meta = { phases: ["a", 2] };`), /meta\.phases\.1: /);
  assert.match(
    refusal(`export const meta = { nmae: "x" };`),
    /unknown field 'nmae' \(allowed: name, description, phases\)/,
  );
});

Deno.test("checkScript() requires meta to be the first statement and the only export", () => {
  assert.match(
    refusal(`log("x");\nexport const meta = {};`),
    /^w\.js:2:1: 'export const meta' must be the first statement/,
  );
  assert.match(
    refusal(`export const other = 1;`),
    /only 'export const meta = \{\.\.\.\}' may be exported/,
  );
  assert.match(refusal(`export default 1;`), /only 'export const meta/);
  assert.match(refusal(`export let meta = {};`), /only 'export const meta/);
});

Deno.test("checkScript() refuses import declarations, import(), import.meta and require()", () => {
  assert.match(
    refusal(`import fs from "node:fs";`),
    /^w\.js:1:1: import declarations are not allowed/,
  );
  assert.match(
    refusal(`const x = 1;\nawait import("file:///etc/passwd");`),
    /^w\.js:2:7: import\(\) is not allowed/,
  );
  assert.match(
    refusal(`const p = "node:" + "fs";\nawait import(p);`),
    /^w\.js:2:7: import\(\) is not allowed/,
  );
  assert.match(refusal(`const u = import.meta.url;`), /import\.meta is not allowed/);
  assert.match(
    refusal(`function f() { return require("fs"); }`),
    /w\.js:1:23: require\(\) is not allowed/,
  );
});

Deno.test("checkScript() reports syntax errors with line and column", () => {
  assert.match(refusal(`const a = 1;\nconst = 2;`), /^w\.js:2:7: syntax error: Unexpected token/);
});

Deno.test("checkScript() says that TypeScript syntax is not supported", () => {
  const message = refusal(`const n: number = await agent("x");`);
  assert.match(message, /^w\.js:1:8: syntax error: .*TypeScript syntax .* is not supported/);
  assert.match(refusal(`interface Foo { a: string }`), /TypeScript syntax/);
});

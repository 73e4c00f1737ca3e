import assert from "node:assert/strict";
import { checkScript, phaseTitles } from "../src/engine/mod.ts";
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
  assert.deepEqual(checked.warnings, []);
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

Deno.test("checkScript() refuses a meta field of the wrong type at the field's own line and column", () => {
  assert.match(refusal(`export const meta = { name: 3 };`), /^w\.js:1:23: meta\.name: /);
  assert.match(
    refusal(`export const meta = { phases: ["a", 2] };`),
    /^w\.js:1:37: meta\.phases\.1: /,
  );
  assert.match(
    refusal(
      `export const meta = {\n  name: "n",\n  phases: [\n    { title: "A" },\n    { title: 7 },\n  ],\n};`,
    ),
    /^w\.js:5:5: meta\.phases\.1: must be a title, or an object \{ title, detail\?, model\? \}/,
  );
  assert.match(
    refusal(`export const meta = {\n  description: "d",\n  whenToUse: ["x"],\n};`),
    /^w\.js:3:3: meta\.whenToUse: /,
  );
});

Deno.test("checkScript() reads Claude Code's meta: phase objects and whenToUse", () => {
  const checked = checkScript(
    `export const meta = {
  name: 'review',
  description: 'd',
  whenToUse: 'before a PR',
  phases: [{ title: 'Review', detail: 'one per dimension' }, { title: 'Verify', model: 'haiku' }, 'Plain'],
}
return 1`,
    { filename: "w.js" },
  );
  assert.deepEqual(checked.meta, {
    name: "review",
    description: "d",
    whenToUse: "before a PR",
    phases: [
      { title: "Review", detail: "one per dimension" },
      { title: "Verify", model: "haiku" },
      "Plain",
    ],
  });
  assert.deepEqual(phaseTitles(checked.meta), ["Review", "Verify", "Plain"]);
  assert.deepEqual(checked.warnings, []);
});

Deno.test("checkScript() keeps unknown meta fields and warns about each at its position, on one line", () => {
  const checked = checkScript(
    `export const meta = {\n  name: "n",\n  nmae: "x",\n  "bad\\nkey": 1,\n  phases: [{ title: "A", colour: "red" }],\n};\nreturn 1`,
    { filename: "w.js" },
  );
  assert.equal(checked.meta.nmae, "x", "the field is kept");
  assert.deepEqual(checked.warnings, [
    `w.js:3:3: meta field "nmae" is not known to svc: kept, not used`,
    `w.js:4:3: meta field "bad\\nkey" is not known to svc: kept, not used`,
    `w.js:5:26: meta field phases[0]."colour" is not known to svc: kept, not used`,
  ]);
  for (const warning of checked.warnings) assert.ok(!/[\n\r]/.test(warning), "one line each");
});

Deno.test("checkScript() bounds its warnings: ten lines and a count, names clipped", () => {
  const fields = Array.from({ length: 25 }, (_, i) => `  f${i}${"x".repeat(100)}: ${i},`).join(
    "\n",
  );
  const checked = checkScript(`export const meta = {\n${fields}\n};`, { filename: "w.js" });
  assert.equal(checked.warnings.length, 11);
  assert.equal(checked.warnings[10], "w.js: 15 more unknown meta fields");
  assert.ok(checked.warnings.every((w) => w.length < 160), "each name is clipped");
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

import assert from "node:assert/strict";
import { terminalJson, visible } from "../cli/terminal.ts";
import { fixture, runCli } from "./helpers.ts";

/** Control characters a terminal acts on, and the characters that reorder or break lines. */
// deno-lint-ignore no-control-regex -- looking for control characters is the point
const DANGEROUS = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

Deno.test("visible() shows control characters as escapes and keeps a text on one line", () => {
  assert.equal(visible("a\x1b]52;c;eA==\x07b"), "a\\e]52;c;eA==\\x07b");
  assert.equal(visible("one\ntwo\r"), "one\\ntwo\\r");
  assert.equal(visible("\u009b2J \u202eabc \u2028"), "\\x9b2J \\u{202e}abc \\u{2028}");
  assert.equal(visible("tabs\tstay, unicode ✓ stays"), "tabs\tstay, unicode ✓ stays");
});

Deno.test("terminalJson() escapes C1 controls and separators and parses to the same value", () => {
  const value = { text: "C1 \u009b31m, \u2028, \u202e, \x1b" };
  const text = terminalJson(value);
  assert.doesNotMatch(text, DANGEROUS);
  assert.deepEqual(JSON.parse(text), value);
});

Deno.test("a script cannot write escape sequences or forged svc lines to the operator's terminal", async () => {
  const result = await runCli([
    "workflow",
    "run",
    fixture("terminal_tricks.js"),
    "--fake-dispatch",
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.doesNotMatch(result.stderr, DANGEROUS, "no raw control character on stderr");
  assert.doesNotMatch(result.stdout, DANGEROUS, "no raw control character on stdout");
  assert.match(result.stderr, /^== \\e\]0;pwned title\\x07Gather$/m);
  assert.match(result.stderr, /^\\e\]52;c;cm0gLXJmIH4=\\x07copied$/m);
  assert.match(result.stderr, /^ok\\nsvc: run run_forged succeeded/m, "the newline is shown");
  const svcLines = result.stderr.split("\n").filter((line) => line.startsWith("svc: run "));
  assert.equal(svcLines.length, 2, `only svc's own run lines:\n${svcLines.join("\n")}`);
  assert.deepEqual(JSON.parse(result.stdout), { text: "C1 \u009b31m and \u2028 separator" });
});

Deno.test("the recorded narration keeps what the script said, exactly", async () => {
  const result = await runCli([
    "workflow",
    "run",
    fixture("terminal_tricks.js"),
    "--fake-dispatch",
    "--json",
  ]);
  assert.equal(result.code, 0, result.stderr);
  const status = JSON.parse(result.stdout);
  const texts = status.narration.map((entry: { text: string }) => entry.text);
  assert.ok(texts.includes("\x1b]0;pwned title\x07Gather"));
  assert.ok(texts.includes("ok\nsvc: run run_forged succeeded (1 calls: 1 live, 0 replayed)"));
  assert.ok(texts.includes("\x1b[2J\x1b[Hcleared \u202eevil"));
});
